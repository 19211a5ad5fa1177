-- The registry of distributed streams: ordering_internal.distributed_attachments,
-- a Citus reference table (so every node holds it) with a row per
-- distributed table attached, which the sequencing trigger of a shard
-- reads (src/citus/citus_registry.c): a trigger made by hand like
-- attach()'s on another table takes no number of the stream.  Made by the
-- first attach() of a distributed table on 1.3, or at the commit of the
-- update from 1.2 of a coordinator with streams attached
-- (citus_registry_at_commit.sql), filled then with every distributed table
-- the coordinator's ordering.attachments has attached.  attach() and detach() call this
-- on the coordinator after they wrote ordering.attachments, whose row it
-- copies for "tbl": the registry only ever says what the coordinator's
-- registry says, which attachment_register() checked.  SECURITY DEFINER:
-- no producer may write the registry; it copies, so any caller may.
-- Tables are ordering_internal.table_ref, written and read as qualified
-- names: each node stores its own OID of a table, whether Citus sends it a
-- statement or copies the reference table onto it, and a rename or a
-- change of schema keeps it.
CREATE OR REPLACE FUNCTION ordering_internal.citus_registry_sync(tbl regclass) RETURNS void
    LANGUAGE plpgsql
    SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    d record;
    name text;
BEGIN
    SELECT * INTO d FROM ordering_internal.citus_distribution(tbl);
    IF NOT d.managed OR NOT d.on_coordinator THEN
        RETURN;
    END IF;
    IF pg_catalog.to_regclass('ordering_internal.distributed_attachments') IS NULL THEN
        CREATE TABLE ordering_internal.distributed_attachments (
            tbl    ordering_internal.table_ref PRIMARY KEY,
            stream text NOT NULL
        );
        COMMENT ON TABLE ordering_internal.distributed_attachments IS
            'The tables distributed by Citus that ordering.attach() attached, and their streams, on every node (a reference table): a shard''s sequencing trigger counts only for them. Written by attach() and detach() only.';
        PERFORM pg_catalog.create_reference_table('ordering_internal.distributed_attachments');
        INSERT INTO ordering_internal.distributed_attachments (tbl, stream)
        SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)::ordering_internal.table_ref, a.stream
          FROM ordering.attachments a
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.tbl
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
         WHERE a.attached AND (ordering_internal.citus_distribution(a.tbl)).managed;
        RETURN;
    END IF;
    SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) INTO name
      FROM pg_catalog.pg_class c
      JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
     WHERE c.oid OPERATOR(pg_catalog.=) tbl;
    -- each node compares its own name of the row's table ("-": dropped)
    DELETE FROM ordering_internal.distributed_attachments r
     WHERE r.tbl::pg_catalog.text OPERATOR(pg_catalog.=) name
        OR r.tbl::pg_catalog.text OPERATOR(pg_catalog.=) '-';
    INSERT INTO ordering_internal.distributed_attachments (tbl, stream)
    SELECT name::ordering_internal.table_ref, a.stream
      FROM ordering.attachments a
     WHERE a.tbl OPERATOR(pg_catalog.=) citus_registry_sync.tbl AND a.attached;
END
$$;
COMMENT ON FUNCTION ordering_internal.citus_registry_sync(regclass) IS
    'Internal to ordering.attach() and ordering.detach() on a Citus coordinator: copies the table''s row of ordering.attachments into the registry of distributed streams, ordering_internal.distributed_attachments, on every node (made the first time)';
-- any caller: it copies what the coordinator's registry says
GRANT EXECUTE ON FUNCTION ordering_internal.citus_registry_sync(regclass) TO PUBLIC;
