-- The gap sweep refuses to run while the database is being restored: halfway
-- through a restore, parked events may be loaded and the positions they
-- wait behind not yet, and a sweep would request (and announce) gaps that
-- do not exist, or write requests the restore then fails to load.  It
-- refuses also in a connection opened before restore mode was set for the
-- database (the gap sweeper's connection lives long).
\set VERBOSITY terse
SET ordering.gap_deadline = '1s';

-- Halfway through a restore: an event parked long ago, no position yet.
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
VALUES ('restore_sweep', 'r', 5, '{}', now() - interval '1 hour');

-- Restore mode set for the database after this connection was opened.
DO $$
BEGIN
    EXECUTE format('ALTER DATABASE %I SET ordering.restoring = true', current_database());
END
$$;
SHOW ordering.restoring;
SELECT count(*) FROM ordering.sweep_gaps();
\echo :SQLSTATE
-- and in this connection too
SELECT ordering.pre_restore();
SELECT count(*) FROM ordering.sweep_gaps();
\echo :SQLSTATE
SELECT count(*) AS requests FROM ordering.gap_requests WHERE consumer = 'restore_sweep';

-- After the restore, it sweeps.
SELECT ordering.post_restore();
SELECT consumer, resource_id, missing_from, missing_to
  FROM ordering.sweep_gaps() WHERE consumer = 'restore_sweep';

DELETE FROM ordering.gap_requests WHERE consumer = 'restore_sweep';
DELETE FROM ordering.parked WHERE consumer = 'restore_sweep';
RESET ordering.gap_deadline;
