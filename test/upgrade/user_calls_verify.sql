-- After an update, or a restore of a dump (user_calls.sql): the view of the
-- hashes gives what it gave at 1.2, and the index of the fingerprints is
-- still used and finds each account.
\set ON_ERROR_STOP 1
DO $$
DECLARE
    line text;
    used boolean := false;
BEGIN
    IF EXISTS ((TABLE user_account_buckets_at_12 EXCEPT TABLE user_account_buckets)
               UNION ALL
               (TABLE user_account_buckets EXCEPT TABLE user_account_buckets_at_12)) THEN
        RAISE EXCEPTION 'user_account_buckets gives other rows than at 1.2';
    END IF;
    PERFORM set_config('enable_seqscan', 'off', true);
    FOR line IN EXPLAIN (COSTS OFF)
        SELECT id FROM user_accounts
         WHERE ordering_internal.resource_fingerprint(id, version)
             = ordering_internal.resource_fingerprint('acct-7', 7) LOOP
        used := used OR line LIKE '%user_accounts_fingerprint%';
    END LOOP;
    IF NOT used THEN
        RAISE EXCEPTION 'the index user_accounts_fingerprint is not used for a fingerprint';
    END IF;
    IF (SELECT array_agg(id) FROM user_accounts
         WHERE ordering_internal.resource_fingerprint(id, version)
             = ordering_internal.resource_fingerprint('acct-7', 7)) IS DISTINCT FROM '{acct-7}' THEN
        RAISE EXCEPTION 'the index user_accounts_fingerprint does not find acct-7';
    END IF;
END
$$;
