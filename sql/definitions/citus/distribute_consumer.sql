-- The tables of a distributed consumer, of the shapes of the extension's
-- own (LIKE ... INCLUDING ALL, so they follow any change of those), with
-- the collation of the projection's distribution column on resource_id,
-- as Citus's co-location requires; then the call and batch functions that
-- Citus delegates to the node of a resource.  A projection distributed by
-- another type (1.3: the types attach() keys counters by): the tables get
-- a routing column resource_value of that type and collation, last in
-- their primary keys, which holds the resource id read as that type, and
-- are distributed by it; the call and batch functions take the resource id
-- as that type, which Citus routes by.  Domains with constraints are
-- refused: Citus does not route a call by a value of such a domain.
CREATE OR REPLACE FUNCTION ordering.distribute_consumer(consumer text, colocate_with regclass)
    RETURNS void
    LANGUAGE plpgsql
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    tag text;
    part record;
    col record;
    tbl record;
    g record;
    libfile text;
    fn record;
    fn_sig pg_catalog.regprocedure;
    coordinator boolean;
    base pg_catalog.oid;
    keytype text;           -- the routing column's type, NULL for text
    pk record;
    unwritten text;         -- a resource id the type writes otherwise
BEGIN
    IF consumer IS NULL OR colocate_with IS NULL THEN
        RAISE EXCEPTION 'consumer and colocate_with must not be null'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF consumer OPERATOR(pg_catalog.=) '' THEN
        RAISE EXCEPTION 'consumer must not be empty' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF pg_catalog.octet_length(consumer) OPERATOR(pg_catalog.>) 1024 THEN
        RAISE EXCEPTION 'consumer is too long (% bytes, at most 1024)', pg_catalog.octet_length(consumer)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_extension e
                    WHERE e.extname OPERATOR(pg_catalog.=) 'citus') THEN
        RAISE EXCEPTION 'Citus is not installed in this database'
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'ordering.distribute_consumer() keeps a consumer''s state in tables that Citus distributes.',
                  HINT = 'Run CREATE EXTENSION citus and add the worker nodes first; on one node, a consumer needs no distribution.';
    END IF;
    EXECUTE 'SELECT pg_catalog.citus_is_coordinator()' INTO coordinator;
    IF NOT coordinator THEN
        RAISE EXCEPTION 'ordering.distribute_consumer() must run on the coordinator'
            USING ERRCODE = 'feature_not_supported';
    END IF;

    -- the projection: hash-distributed, one placement per shard, by a text
    -- column of a deterministic collation
    EXECUTE 'SELECT p.partmethod, p.repmodel, p.colocationid,'
            '       pg_catalog.column_to_column_name(p.logicalrelid, p.partkey) AS distcol'
            '  FROM pg_catalog.pg_dist_partition p'
            ' WHERE p.logicalrelid OPERATOR(pg_catalog.=) $1'
       INTO part USING colocate_with;
    IF part IS NULL OR part.partmethod OPERATOR(pg_catalog.<>) 'h' THEN
        RAISE EXCEPTION 'table % is not a hash-distributed table', colocate_with
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'A distributed consumer''s state is co-located with a table distributed by the resource id.',
                  HINT = 'Distribute the consumer''s projection first: SELECT create_distributed_table(''<table>'', ''<resource column>'').';
    END IF;
    IF part.repmodel OPERATOR(pg_catalog.<>) 's' THEN
        RAISE EXCEPTION 'table % has replicated shards', colocate_with
            USING ERRCODE = 'feature_not_supported',
                  DETAIL = 'Citus delegates a call only to a shard with one placement.',
                  HINT = 'Distribute the projection with citus.shard_replication_factor = 1.';
    END IF;
    SELECT a.atttypid, a.atttypmod, a.attcollation, COALESCE(c.collisdeterministic, true) AS collisdeterministic,
           CASE WHEN c.oid IS NOT NULL
                THEN pg_catalog.format('%I.%I', n.nspname, c.collname) END AS collname
      INTO col
      FROM pg_catalog.pg_attribute a
      LEFT JOIN pg_catalog.pg_collation c ON c.oid OPERATOR(pg_catalog.=) a.attcollation
      LEFT JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.collnamespace
     WHERE a.attrelid OPERATOR(pg_catalog.=) colocate_with
       AND a.attname OPERATOR(pg_catalog.=) part.distcol;
    -- Another type than text: the routing column holds the resource id read
    -- as that type, which must give back a value equal to the one the id
    -- was made of (ordering.resource_key() of it): the types of attach(),
    -- domains with constraints aside.
    IF col.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.text'::pg_catalog.regtype THEN
        base := ordering_internal.citus_key_base_type(col.atttypid);
        IF base IS NULL THEN
            RAISE EXCEPTION 'table % is distributed by column % of type %, which a distributed consumer cannot be keyed by',
                            colocate_with, part.distcol, col.atttypid::pg_catalog.regtype
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'A distributed consumer''s tables are distributed by the resource id read as the projection''s type; that is exact for smallint, integer, bigint, uuid, text, varchar, citext and domains over them.',
                      HINT = 'Distribute the projection by a bigint, uuid or text column that holds the resource (as ordering.resource_key() writes it, for text).';
        END IF;
        -- A domain: Citus delegates a call, and lets its handler write
        -- the co-located shards, only when the call names the resource by
        -- a constant of the column's type; the value of a domain with a
        -- constraint is a coercion that checks it, on the worker too
        -- (docs/citus.md, "Distributing a consumer").
        IF base OPERATOR(pg_catalog.<>) col.atttypid AND EXISTS (
            WITH RECURSIVE chain(oid) AS (
                SELECT col.atttypid
                UNION ALL
                SELECT t.typbasetype FROM chain c, pg_catalog.pg_type t
                 WHERE t.oid OPERATOR(pg_catalog.=) c.oid AND t.typtype OPERATOR(pg_catalog.=) 'd')
            SELECT FROM chain c, pg_catalog.pg_type t
             WHERE t.oid OPERATOR(pg_catalog.=) c.oid AND t.typtype OPERATOR(pg_catalog.=) 'd'
               AND (t.typnotnull
                    OR EXISTS (SELECT FROM pg_catalog.pg_constraint k
                                WHERE k.contypid OPERATOR(pg_catalog.=) t.oid))) THEN
            RAISE EXCEPTION 'table % is distributed by column % of domain %, which has constraints: a distributed consumer cannot be keyed by it',
                            colocate_with, part.distcol, col.atttypid::pg_catalog.regtype
                USING ERRCODE = 'feature_not_supported',
                      DETAIL = 'Citus runs a call of the consumer on the node of its resource, with a handler that writes the resource''s shards, only when the call names the resource by a constant of the distribution column''s type; a value of a domain with a CHECK or NOT NULL constraint is a coercion that checks it, not a constant.',
                      HINT = pg_catalog.format('Distribute the projection by the domain''s base type, %s, or by a domain without constraints.', base::pg_catalog.regtype);
        END IF;
        keytype := pg_catalog.format_type(col.atttypid, NULL);
    END IF;
    IF NOT col.collisdeterministic THEN
        RAISE EXCEPTION 'table % is distributed by a column of the nondeterministic collation %',
                        colocate_with, col.collname
            USING ERRCODE = 'feature_not_supported',
                  HINT = 'Use a deterministic collation for the resource column.';
    END IF;

    tag := ordering_internal.consumer_tag(consumer);
    IF EXISTS (SELECT FROM ordering_internal.distributed_consumers d
                WHERE d.consumer OPERATOR(pg_catalog.=) distribute_consumer.consumer)
       OR pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', tag || '_positions')) IS NOT NULL THEN
        RAISE EXCEPTION 'consumer "%" is distributed already', consumer
            USING ERRCODE = 'duplicate_object';
    END IF;

    -- No local call of the consumer may run meanwhile: those in progress
    -- finish first, later ones wait and then find the consumer distributed.
    LOCK TABLE ordering.positions, ordering.parked, ordering.dead_letter_events,
               ordering.gap_requests IN SHARE ROW EXCLUSIVE MODE;
    -- the tables are new in this transaction: one connection per node
    PERFORM pg_catalog.set_config('citus.multi_shard_modify_mode', 'sequential', true);

    FOR tbl IN
        SELECT v.suffix, v.source::pg_catalog.regclass AS source,
               pg_catalog.format('ordering_internal.%I', tag || v.suffix) AS name
          FROM (VALUES (1, '_positions', 'ordering.positions'),
                       (2, '_parked', 'ordering.parked'),
                       (3, '_dead_letters', 'ordering.dead_letter_events'),
                       (4, '_gap_requests', 'ordering.gap_requests')) v(ord, suffix, source)
         ORDER BY v.ord
    LOOP
        EXECUTE pg_catalog.format('CREATE TABLE %s (LIKE %s INCLUDING ALL)', tbl.name, tbl.source);
        IF keytype IS NULL THEN
            EXECUTE pg_catalog.format('ALTER TABLE %s ALTER COLUMN resource_id TYPE pg_catalog.text COLLATE %s',
                                      tbl.name, col.collname);
        ELSE
            -- the routing column, last in the primary key (storage/README.md),
            -- with the projection's typmod (varchar(n)), which the values a
            -- handler writes to the projection carry: Citus compares them
            -- with the call's argument, typmod included
            SELECT c.conname, pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', '
                                                    ORDER BY k.ord) AS cols
              INTO pk
              FROM pg_catalog.pg_constraint c,
                   pg_catalog.unnest(c.conkey) WITH ORDINALITY k(attnum, ord),
                   pg_catalog.pg_attribute a
             WHERE c.conrelid OPERATOR(pg_catalog.=) tbl.name::pg_catalog.regclass
               AND c.contype OPERATOR(pg_catalog.=) 'p'
               AND a.attrelid OPERATOR(pg_catalog.=) c.conrelid
               AND a.attnum OPERATOR(pg_catalog.=) k.attnum
             GROUP BY c.conname;
            EXECUTE pg_catalog.format('ALTER TABLE %s ADD COLUMN resource_value %s %s NOT NULL,'
                                      ' DROP CONSTRAINT %I, ADD PRIMARY KEY (%s, resource_value)',
                                      tbl.name, pg_catalog.format_type(col.atttypid, col.atttypmod),
                                      COALESCE('COLLATE ' OPERATOR(pg_catalog.||) col.collname, ''),
                                      pk.conname, pk.cols);
        END IF;
        -- storage parameters (the fillfactor of positions) are not LIKE's
        IF (SELECT c.reloptions FROM pg_catalog.pg_class c
             WHERE c.oid OPERATOR(pg_catalog.=) tbl.source) IS NOT NULL THEN
            EXECUTE pg_catalog.format('ALTER TABLE %s SET (%s)', tbl.name,
                (SELECT pg_catalog.array_to_string(c.reloptions, ', ') FROM pg_catalog.pg_class c
                  WHERE c.oid OPERATOR(pg_catalog.=) tbl.source));
        END IF;
        EXECUTE pg_catalog.format('COMMENT ON TABLE %s IS %L', tbl.name,
            pg_catalog.format('%s of distributed consumer %s (ordering.distribute_consumer)',
                              tbl.source, pg_catalog.quote_literal(consumer)));
        EXECUTE 'SELECT pg_catalog.create_distributed_table($1, $2, colocate_with => $3)'
          USING tbl.name::pg_catalog.regclass,
                CASE WHEN keytype IS NULL THEN 'resource_id' ELSE 'resource_value' END,
                colocate_with::pg_catalog.text;
        -- who may read the extension's table may read the consumer's
        FOR g IN
            SELECT e.privilege_type, e.grantee
              FROM pg_catalog.pg_class c, pg_catalog.aclexplode(c.relacl) e
             WHERE c.oid OPERATOR(pg_catalog.=) tbl.source
               AND e.grantee OPERATOR(pg_catalog.<>) c.relowner
        LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s', g.privilege_type, tbl.name,
                CASE WHEN g.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
                     ELSE g.grantee::pg_catalog.regrole::pg_catalog.text END);
        END LOOP;
        -- the consumer's state so far moves along; a resource id that the
        -- type writes otherwise would no longer be reachable: refused
        IF keytype IS NOT NULL THEN
            EXECUTE pg_catalog.format('SELECT s.resource_id FROM %s s'
                                      ' WHERE s.consumer OPERATOR(pg_catalog.=) $1'
                                      '   AND CAST(CAST(s.resource_id AS %s) AS pg_catalog.text)'
                                      '       OPERATOR(pg_catalog.<>) s.resource_id LIMIT 1',
                                      tbl.source, keytype)
              INTO unwritten USING consumer;
            IF unwritten IS NOT NULL THEN
                RAISE EXCEPTION 'resource id "%" of consumer "%" is not written as type % writes it',
                                unwritten, consumer, keytype
                    USING ERRCODE = 'invalid_text_representation',
                          DETAIL = pg_catalog.format('%s holds it; a distributed consumer''s calls give resource ids as ordering.resource_key() writes the producer''s value.', tbl.source),
                          HINT = 'Move or remove the consumer''s rows of that resource first.';
            END IF;
        END IF;
        EXECUTE pg_catalog.format('INSERT INTO %s SELECT s.*%s FROM %s s WHERE s.consumer OPERATOR(pg_catalog.=) $1',
                                  tbl.name,
                                  CASE WHEN keytype IS NULL THEN ''
                                       ELSE pg_catalog.format(', CAST(s.resource_id AS %s)', keytype) END,
                                  tbl.source)
          USING consumer;
        EXECUTE pg_catalog.format('DELETE FROM %s s WHERE s.consumer OPERATOR(pg_catalog.=) $1', tbl.source)
          USING consumer;
    END LOOP;
    -- rows written with SQL: the summary of parked events kept with each
    -- position (section "Consumer speed") is not known, the next call of
    -- each resource counts again
    EXECUTE pg_catalog.format('UPDATE ordering_internal.%I SET parked_count = -1', tag || '_positions');

    -- The call and batch functions: the same C functions for every
    -- consumer, which find their tables from their own names.  Every role
    -- may execute them: they check that their caller may execute the
    -- consumer function they run.
    SELECT p.probin INTO libfile FROM pg_catalog.pg_proc p
     WHERE p.oid OPERATOR(pg_catalog.=) 'ordering.deliver(text, text, bigint, jsonb)'::pg_catalog.regprocedure;
    FOR fn IN
        SELECT v.suffix, v.symbol,
               pg_catalog.replace(v.args, 'resource_id pg_catalog.text,',
                                  'resource_id ' OPERATOR(pg_catalog.||) COALESCE(keytype, 'pg_catalog.text') OPERATOR(pg_catalog.||) ',') AS args,
               v.result, v.rows, v.comment,
               pg_catalog.regexp_replace(pg_catalog.replace(v.args, 'resource_id pg_catalog.text,',
                                                            'resource_id ' OPERATOR(pg_catalog.||) COALESCE(keytype, 'pg_catalog.text') OPERATOR(pg_catalog.||) ','),
                                         '(^|, )[a-z_]+ ', '\1', 'g') AS types,
               pg_catalog.format('ordering_internal.%I', tag || v.suffix) AS name
          FROM (VALUES ('_call', 'ordering_consumer_call',
                        'op pg_catalog."char", resource_id pg_catalog.text, consumer pg_catalog.text, '
                        'seq pg_catalog.int8, payload pg_catalog.jsonb, handler pg_catalog.regprocedure, '
                        'option pg_catalog.text',
                        'seq pg_catalog.int8, payload pg_catalog.jsonb', 1,
                        'Runs the calls of distributed consumer %s on the node of their resource (ordering.distribute_consumer)'),
                       ('_batch', 'ordering_consumer_batch',
                        'op pg_catalog."char", resource_id pg_catalog.text, consumer pg_catalog.text, '
                        'ords pg_catalog.int4[], resource_ids pg_catalog.text[], seqs pg_catalog.int8[], '
                        'payloads pg_catalog.jsonb[], handler pg_catalog.regprocedure, option pg_catalog.text',
                        'ord pg_catalog.int4, seq pg_catalog.int8, payload pg_catalog.jsonb', 100,
                        'Runs a part of a batch of distributed consumer %s on the node of its shard (ordering.distribute_consumer)'))
               v(suffix, symbol, args, result, rows, comment)
    LOOP
        EXECUTE pg_catalog.format('CREATE FUNCTION %s(%s) RETURNS TABLE (%s) LANGUAGE c VOLATILE ROWS %s AS %L, %L',
                                  fn.name, fn.args, fn.result, fn.rows, libfile, fn.symbol);
        fn_sig := (pg_catalog.format('%s(%s)', fn.name, fn.types))::pg_catalog.regprocedure;
        EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', fn_sig,
                                  pg_catalog.format(fn.comment, pg_catalog.quote_literal(consumer)));
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', fn_sig);
        EXECUTE 'SELECT pg_catalog.create_distributed_function($1, ''$2'', colocate_with => $2, force_delegation => true)'
          USING fn_sig, pg_catalog.format('ordering_internal.%I', tag || '_positions');
    END LOOP;

    INSERT INTO ordering_internal.distributed_consumers (consumer, tag, colocate_with)
    VALUES (consumer, tag, colocate_with);
END
$$;
COMMENT ON FUNCTION ordering.distribute_consumer(text, regclass) IS
    'Citus: keeps the consumer''s positions, parked events, dead letters and gap requests in tables distributed by resource and co-located with colocate_with (its projection, distributed by a text, integer, uuid or text-like column, or a domain over one without constraints), and runs each of its calls on the node of its resource; its state so far moves along';
REVOKE EXECUTE ON FUNCTION ordering.distribute_consumer(text, regclass) FROM PUBLIC;
