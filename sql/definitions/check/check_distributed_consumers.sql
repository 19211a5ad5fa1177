-- ordering.check()'s part for the distributed consumers (on the
-- coordinator, through Citus: each query reads every node's shards): the
-- invariants of the extension's own tables, on each consumer's tables,
-- and that the consumer's state is there only.  The joins name the column
-- the tables are distributed by (%7$I), so that Citus runs them on each
-- shard group's node.
CREATE OR REPLACE FUNCTION ordering_internal.check_distributed_consumers(sample_percent double precision,
                                                              max_per_kind bigint)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    dc record;
    t record;
    sample text := '';
    q text;
BEGIN
    IF sample_percent OPERATOR(pg_catalog.<) 100 THEN
        sample := pg_catalog.format(' TABLESAMPLE SYSTEM (%s)', sample_percent);
    END IF;
    FOR dc IN SELECT d.* FROM ordering_internal.distributed_consumers d ORDER BY d.consumer LOOP
        SELECT pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_positions')) AS positions,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_parked')) AS parked,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_dead_letters')) AS dead,
               pg_catalog.to_regclass(pg_catalog.format('ordering_internal.%I', dc.tag || '_gap_requests')) AS gaps
          INTO t;
        IF t.positions IS NULL OR t.parked IS NULL OR t.dead IS NULL OR t.gaps IS NULL THEN
            kind := 'distributed_consumer_tables_missing';
            detail := pg_catalog.format('consumer %s: its tables %s_* are missing',
                                        pg_catalog.quote_literal(dc.consumer), dc.tag);
            RETURN NEXT;
            CONTINUE;
        END IF;
        -- a distributed consumer's state is in its tables only
        RETURN QUERY
        SELECT 'distributed_consumer_local_rows'::pg_catalog.text,
               pg_catalog.format('consumer %s: %s rows in %s', pg_catalog.quote_literal(dc.consumer), x.n, x.tbl)
          FROM (SELECT 'ordering.positions' AS tbl, (SELECT pg_catalog.count(*) FROM ordering.positions p
                                                     WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer) AS n
                UNION ALL
                SELECT 'ordering.parked', (SELECT pg_catalog.count(*) FROM ordering.parked p
                                            WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)
                UNION ALL
                SELECT 'ordering.dead_letter_events', (SELECT pg_catalog.count(*) FROM ordering.dead_letter_events p
                                                       WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)
                UNION ALL
                SELECT 'ordering.gap_requests', (SELECT pg_catalog.count(*) FROM ordering.gap_requests p
                                                 WHERE p.consumer OPERATOR(pg_catalog.=) dc.consumer)) x
         WHERE x.n OPERATOR(pg_catalog.>) 0;
        -- the invariants of ordering.check(), kind by kind
        FOR q IN
            SELECT v.q FROM (VALUES
            ($q$SELECT 'parked_not_ahead'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: parked seq %%s, position %%s',
                                     pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                     p.seq, COALESCE(pos.position, 0))
              FROM %2$s p%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                                    AND o.%7$I OPERATOR(pg_catalog.=) p.%7$I
                                  LIMIT 1) pos ON true
             WHERE p.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY p.consumer, p.resource_id, p.seq LIMIT $1$q$),
            ($q$SELECT 'parked_not_drained'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: parked seq %%s is next after position %%s',
                                     pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                     p.seq, COALESCE(pos.position, 0))
              FROM %2$s p%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                                    AND o.%7$I OPERATOR(pg_catalog.=) p.%7$I
                                  LIMIT 1) pos ON true
             WHERE p.seq OPERATOR(pg_catalog.=) (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
             ORDER BY p.consumer, p.resource_id, p.seq LIMIT $1$q$),
            ($q$SELECT 'gap_request_without_parked'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, nothing parked',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to)
              FROM %4$s g%6$s
              LEFT JOIN LATERAL (SELECT true AS found FROM %2$s p
                                  WHERE p.consumer OPERATOR(pg_catalog.=) g.consumer
                                    AND p.resource_id OPERATOR(pg_catalog.=) g.resource_id
                                    AND p.%7$I OPERATOR(pg_catalog.=) g.%7$I
                                  LIMIT 1) k ON true
             WHERE k.found IS NULL
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'gap_request_filled'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, position %%s',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to, COALESCE(pos.position, 0))
              FROM %4$s g%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) g.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) g.resource_id
                                    AND o.%7$I OPERATOR(pg_catalog.=) g.%7$I
                                  LIMIT 1) pos ON true
             WHERE g.missing_to OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'gap_request_empty'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s',
                                     pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                     g.missing_from, g.missing_to)
              FROM %4$s g%6$s
             WHERE g.missing_from OPERATOR(pg_catalog.>) g.missing_to
             ORDER BY g.consumer, g.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_not_ahead'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, position %%s',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq, COALESCE(pos.position, 0))
              FROM %3$s d%6$s
              LEFT JOIN LATERAL (SELECT o.position FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                                    AND o.%7$I OPERATOR(pg_catalog.=) d.%7$I
                                  LIMIT 1) pos ON true
             WHERE d.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_parked'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s is also parked',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq)
              FROM %3$s d%6$s
              JOIN LATERAL (SELECT true AS found FROM %2$s p
                             WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
                               AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
                               AND p.%7$I OPERATOR(pg_catalog.=) d.%7$I
                               AND p.seq OPERATOR(pg_catalog.=) d.seq
                             LIMIT 1) k ON true
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'dead_letter_not_blocking'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, but %%s',
                                     pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                     d.seq,
                                     CASE WHEN pos.found IS NULL THEN 'the resource has no position row'
                                          WHEN pos.blocked_at IS NULL THEN 'the resource is not blocked'
                                          ELSE pg_catalog.format('the resource is blocked at seq %%s', pos.blocked_at)
                                     END)
              FROM %3$s d%6$s
              LEFT JOIN LATERAL (SELECT true AS found, o.blocked_at FROM %1$s o
                                  WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                    AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                                    AND o.%7$I OPERATOR(pg_catalog.=) d.%7$I
                                  LIMIT 1) pos ON true
             WHERE pos.found IS NULL
                OR pos.blocked_at IS DISTINCT FROM d.seq
             ORDER BY d.consumer, d.resource_id LIMIT $1$q$),
            ($q$SELECT 'block_without_dead_letter'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: blocked at seq %%s, but there is no dead letter',
                                     pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                     o.blocked_at)
              FROM %1$s o%6$s
              LEFT JOIN LATERAL (SELECT true AS found FROM %3$s d
                                  WHERE d.consumer OPERATOR(pg_catalog.=) o.consumer
                                    AND d.resource_id OPERATOR(pg_catalog.=) o.resource_id
                                    AND d.%7$I OPERATOR(pg_catalog.=) o.%7$I
                                  LIMIT 1) k ON true
             WHERE o.blocked_at IS NOT NULL
               AND k.found IS NULL
             ORDER BY o.consumer, o.resource_id LIMIT $1$q$),
            ($q$SELECT 'parked_summary_mismatch'::pg_catalog.text,
                   pg_catalog.format('consumer %%s, resource %%s: the position row says %%s parked in [%%s, %%s], %%s holds %%s in [%%s, %%s]',
                                     pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                     o.parked_count, o.parked_lowest, o.parked_highest, %2$L,
                                     k.n, COALESCE(k.lowest, 0), COALESCE(k.highest, 0))
              FROM %1$s o%6$s
             CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n, pg_catalog.min(p.seq) AS lowest,
                                        pg_catalog.max(p.seq) AS highest
                                   FROM %2$s p
                                  WHERE p.consumer OPERATOR(pg_catalog.=) o.consumer
                                    AND p.resource_id OPERATOR(pg_catalog.=) o.resource_id
                                    AND p.%7$I OPERATOR(pg_catalog.=) o.%7$I) k
             WHERE o.parked_count OPERATOR(pg_catalog.>=) 0
               AND (o.parked_count OPERATOR(pg_catalog.<>) k.n
                    OR (k.n OPERATOR(pg_catalog.>) 0
                        AND (o.parked_lowest OPERATOR(pg_catalog.<>) k.lowest
                             OR o.parked_highest OPERATOR(pg_catalog.<>) k.highest)))
             ORDER BY o.consumer, o.resource_id LIMIT $1$q$),
            ($q$SELECT 'distributed_consumer_foreign_rows'::pg_catalog.text,
                   pg_catalog.format('consumer %%s: a row of consumer %%s in %%s',
                                     pg_catalog.quote_literal(%5$L), pg_catalog.quote_literal(x.consumer), %1$L)
              FROM %1$s x
             WHERE x.consumer OPERATOR(pg_catalog.<>) %5$L
             ORDER BY x.consumer LIMIT $1$q$)) v(q)
        LOOP
            RETURN QUERY EXECUTE pg_catalog.format(q, t.positions, t.parked, t.dead, t.gaps,
                                                   dc.consumer, sample,
                                                   ordering_internal.distributed_consumer_column(dc.consumer))
              USING max_per_kind;
        END LOOP;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering_internal.check_distributed_consumers(double precision, bigint) IS
    'Internal to ordering.check(): the invariants of the distributed consumers'' tables, checked through Citus on every node, and that their state is nowhere else';
-- Any role may call it: it reads the tables as its caller (ordering.check()
-- runs it for whoever may run check()).
GRANT EXECUTE ON FUNCTION ordering_internal.check_distributed_consumers(double precision, bigint) TO PUBLIC;
