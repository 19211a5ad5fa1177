-- The statement triggers of ordering.parked: a change by SQL (an operator's
-- DELETE, a test's INSERT, pg_restore's COPY) fires no C code, so they mark
-- the summary of parked events in ordering.positions of every key it touched
-- as not known, which the next deliver() recounts (TRUNCATE: nothing is
-- parked).  The extension's own writes go below the executor, fire no
-- trigger and keep the summary themselves.  SECURITY DEFINER: a role that
-- may write ordering.parked need not be able to update ordering.positions.
CREATE OR REPLACE FUNCTION ordering_internal.parked_changed() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    IF TG_OP OPERATOR(pg_catalog.=) 'TRUNCATE' THEN
        UPDATE ordering.positions
           SET parked_count = 0, parked_lowest = 0, parked_highest = 0
         WHERE parked_count OPERATOR(pg_catalog.<>) 0;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'INSERT' THEN
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT DISTINCT n.consumer, n.resource_id FROM parked_new n) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    ELSIF TG_OP OPERATOR(pg_catalog.=) 'DELETE' THEN
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT DISTINCT o.consumer, o.resource_id FROM parked_old o) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    ELSE
        UPDATE ordering.positions p SET parked_count = -1
          FROM (SELECT o.consumer, o.resource_id FROM parked_old o
                UNION
                SELECT n.consumer, n.resource_id FROM parked_new n) c
         WHERE p.consumer OPERATOR(pg_catalog.=) c.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) c.resource_id
           AND p.parked_count OPERATOR(pg_catalog.<>) -1;
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION ordering_internal.parked_changed() IS
    'Trigger on ordering.parked: a SQL change of parked events marks the summary of their keys in ordering.positions as not known';
REVOKE EXECUTE ON FUNCTION ordering_internal.parked_changed() FROM PUBLIC;
