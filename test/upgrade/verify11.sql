-- After ALTER EXTENSION ordering UPDATE of the database that fill.sql and
-- fill11.sql filled at version 1.1, before verify.sql (which produces and
-- consumes): the state of every 1.1 feature is still there, row for row,
-- and reconciliation sees what it saw.  Reads only.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE TABLE upgrade_check.after11 AS SELECT * FROM upgrade_check.fingerprint11();
SELECT what, b.row_count AS rows_before, a.row_count AS rows_after,
       b.digest IS NOT DISTINCT FROM a.digest AS same_rows
  FROM upgrade_check.before11 b FULL JOIN upgrade_check.after11 a USING (what)
 ORDER BY what;
DO $$
DECLARE
    changed text;
BEGIN
    SELECT string_agg(what, ', ' ORDER BY what) INTO changed
      FROM upgrade_check.before11 b FULL JOIN upgrade_check.after11 a USING (what)
     WHERE (b.row_count, b.digest) IS DISTINCT FROM (a.row_count, a.digest);
    IF changed IS NOT NULL THEN
        RAISE EXCEPTION 'after the update, 1.1 state that changed: %', changed;
    END IF;
    IF EXISTS (SELECT FROM upgrade_check.before11 WHERE row_count = 0) THEN
        RAISE EXCEPTION 'fill11.sql recorded an empty %',
            (SELECT string_agg(what, ', ') FROM upgrade_check.before11 WHERE row_count = 0);
    END IF;
END
$$;
