-- Fills a database at 1.2 with what a user of the reconciliation hashes may
-- have built on their 1.2 names, ordering.resource_bucket() and
-- ordering.resource_fingerprint(), which 1.3 keeps in ordering_internal: a
-- view and an index expression that call them.  An update moves the
-- functions under them; a dump restores with copies of them under the old
-- names until the user makes them again (docs/restore.md).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TABLE user_accounts (id text PRIMARY KEY, version bigint NOT NULL);
INSERT INTO user_accounts SELECT 'acct-' || i, i FROM generate_series(1, 200) i;
CREATE INDEX user_accounts_fingerprint ON user_accounts (ordering.resource_fingerprint(id, version));
CREATE VIEW user_account_buckets AS
SELECT ordering.resource_bucket(id, 16) AS bucket, count(*) AS accounts,
       bit_xor(ordering.resource_fingerprint(id, version)) AS fingerprint
  FROM user_accounts
 GROUP BY 1;
-- what the view gives at 1.2
CREATE TABLE user_account_buckets_at_12 AS SELECT * FROM user_account_buckets;
