-- The producer's answer to a gap request: the rows of the missing range are
-- sent again by the relays.
CREATE OR REPLACE FUNCTION ordering.republish(resource_id text, from_seq bigint,
                                   to_seq bigint DEFAULT NULL)
    RETURNS bigint
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    last_seq bigint;
    wanted bigint;
    found bigint;
BEGIN
    IF resource_id IS NULL OR from_seq IS NULL THEN
        RAISE EXCEPTION 'resource_id and from_seq must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF from_seq OPERATOR(pg_catalog.<) 1 OR to_seq OPERATOR(pg_catalog.<) from_seq THEN
        RAISE EXCEPTION 'invalid range [%, %]', from_seq, to_seq
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    last_seq := ordering.last_sequence('ordering.outbox', resource_id);
    to_seq := LEAST(COALESCE(to_seq, last_seq), last_seq);
    UPDATE ordering.outbox o SET published_at = NULL
     WHERE o.resource_id OPERATOR(pg_catalog.=) republish.resource_id
       AND o.seq OPERATOR(pg_catalog.>=) from_seq
       AND o.seq OPERATOR(pg_catalog.<=) to_seq;
    GET DIAGNOSTICS found = ROW_COUNT;
    wanted := GREATEST(to_seq OPERATOR(pg_catalog.-) from_seq OPERATOR(pg_catalog.+) 1, 0);
    IF found OPERATOR(pg_catalog.<) wanted THEN
        RAISE WARNING '% of the % requested events of resource "%" are no longer in the outbox',
            wanted OPERATOR(pg_catalog.-) found, wanted, resource_id
            USING DETAIL = 'They were purged by ordering.purge_published() or deleted.',
                  HINT = 'The consumer can give up on them with ordering.skip_gap().';
    END IF;
    RETURN found;
END
$$;
COMMENT ON FUNCTION ordering.republish(text, bigint, bigint) IS
    'Marks a resource''s outbox rows in [from_seq, to_seq] unpublished so relays send them again; warns about rows already purged';
REVOKE EXECUTE ON FUNCTION ordering.republish(text, bigint, bigint) FROM PUBLIC;
