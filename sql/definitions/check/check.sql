-- ordering.check(): one row per violated invariant, none when consistent
-- (docs/anti-entropy.md lists them).  Each check is one statement, judging
-- one snapshot, and reads one table and looks each row up in another by
-- primary key; sample_percent samples the table it reads.
CREATE OR REPLACE FUNCTION ordering."check"(sample_percent double precision DEFAULT 100,
                                          max_per_kind bigint DEFAULT NULL)
    RETURNS TABLE (kind text, detail text)
    LANGUAGE plpgsql VOLATILE
    SET search_path = pg_catalog, pg_temp
    AS $$
DECLARE
    sample text := '';
    att record;
    gauge record;
    dc record;
    n bigint;
    dist_consumers text[];
    dist_rows bigint[];
    problem text;
    seq_fn pg_catalog.regprocedure := 'ordering.sequence_trigger()';
    citus boolean := pg_catalog.to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL;
BEGIN
    IF sample_percent IS NULL THEN
        RAISE EXCEPTION 'sample_percent must not be null' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF sample_percent OPERATOR(pg_catalog.<) 0 OR sample_percent OPERATOR(pg_catalog.>) 100
       OR sample_percent OPERATOR(pg_catalog.<>) sample_percent THEN
        RAISE EXCEPTION 'sample_percent must be between 0 and 100, got %', sample_percent
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF max_per_kind OPERATOR(pg_catalog.<) 0 THEN
        RAISE EXCEPTION 'max_per_kind must not be negative, got %', max_per_kind
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF sample_percent OPERATOR(pg_catalog.<) 100 THEN
        sample := pg_catalog.format(' TABLESAMPLE SYSTEM (%s)', sample_percent);
    END IF;

    -- Producer, per attached table: its triggers as attach() made them,
    -- its columns as attach() was given them, and every counter at or
    -- above the highest seq of the table (a row numbered past its counter
    -- would get its number again), no resource holding a number twice.
    FOR att IN
        SELECT a.tbl AS table_name, a.stream, a.resource_column, a.sequence_column,
               t.tgenabled,
               (SELECT pg_catalog.count(*) FROM pg_catalog.pg_trigger c
                 WHERE c.tgrelid OPERATOR(pg_catalog.=) a.tbl
                   AND c.tgname OPERATOR(pg_catalog.=) ANY ('{ordering_sequence_stored,ordering_sequence_guard}')
                   AND c.tgenabled OPERATOR(pg_catalog.=) t.tgenabled) AS companions
          FROM ordering.attachments a
          LEFT JOIN pg_catalog.pg_trigger t
            ON t.tgrelid OPERATOR(pg_catalog.=) a.tbl
           AND t.tgname OPERATOR(pg_catalog.=) 'ordering_sequence'
           AND t.tgfoid OPERATOR(pg_catalog.=) seq_fn
         WHERE a.attached
         ORDER BY a.tbl::pg_catalog.text
    LOOP
        IF att.tgenabled IS NULL THEN
            kind := 'sequence_trigger_missing';
            detail := pg_catalog.format('table %s (stream %s): its sequencing trigger is missing, rows inserted now get no number',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        ELSIF att.tgenabled OPERATOR(pg_catalog.=) 'D' THEN
            kind := 'sequence_trigger_disabled';
            detail := pg_catalog.format('table %s (stream %s): its sequencing trigger is disabled, rows inserted now get no number',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        ELSIF att.companions OPERATOR(pg_catalog.<) 2 THEN
            kind := 'sequence_trigger_incomplete';
            detail := pg_catalog.format('table %s (stream %s): a companion of its sequencing trigger is missing or not enabled like it, inserts fail',
                                        att.table_name, pg_catalog.quote_literal(att.stream));
            RETURN NEXT;
        END IF;
        problem := ordering_internal.attachment_problem(att.table_name, att.resource_column,
                                                        att.sequence_column);
        IF problem IS NOT NULL THEN
            kind := 'attached_table_changed';
            detail := pg_catalog.format('table %s (stream %s): %s, inserts fail and its rows were not checked',
                                        att.table_name, pg_catalog.quote_literal(att.stream), problem);
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF NOT pg_catalog.has_table_privilege(att.table_name, 'SELECT') THEN
            RAISE WARNING 'table % was not checked: permission denied', att.table_name;
            CONTINUE;
        END IF;
        -- Citus: a distributed stream's counters are in its own table
        IF citus THEN
            IF ordering_internal.distributed_counters(att.stream) IS NOT NULL THEN
                RETURN QUERY SELECT * FROM ordering_internal.check_distributed(
                    att.table_name, att.resource_column, att.sequence_column, att.stream,
                    max_per_kind);
                CONTINUE;
            END IF;
        END IF;
        -- the resource as the trigger keys it (ordering.resource_key)
        RETURN QUERY EXECUTE pg_catalog.format($q$
            SELECT v.kind, v.detail FROM (
            SELECT k.ord, x.res, k.kind,
                   pg_catalog.row_number() OVER (PARTITION BY k.ord ORDER BY x.res) AS n,
                   CASE k.kind
                   WHEN 'counter_behind_table' THEN
                       pg_catalog.format('table %%s (stream %%s), resource %%s: highest seq %%s, counter %%s',
                                         $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                         x.hi, COALESCE(s.last_seq::pg_catalog.text, 'missing'))
                   ELSE
                       pg_catalog.format('table %%s (stream %%s), resource %%s: %%s rows hold %%s numbers',
                                         $1, pg_catalog.quote_literal($2), pg_catalog.quote_literal(x.res),
                                         x.n, x.distinct_seqs)
                   END AS detail
              FROM (SELECT ordering.resource_key(t.%1$I) AS res, pg_catalog.max(t.%2$I) AS hi,
                           pg_catalog.count(t.%2$I) AS n,
                           pg_catalog.count(DISTINCT t.%2$I) AS distinct_seqs
                      FROM %3$s t%4$s
                     WHERE t.%1$I IS NOT NULL
                     GROUP BY 1) x
              LEFT JOIN LATERAL (SELECT q.last_seq FROM ordering.sequences q
                                  WHERE q.stream OPERATOR(pg_catalog.=) $2
                                    AND q.resource_id OPERATOR(pg_catalog.=) x.res
                                  LIMIT 1) s ON true
             CROSS JOIN LATERAL (VALUES
                   (1, 'counter_behind_table'::pg_catalog.text,
                    s.last_seq IS NULL OR s.last_seq OPERATOR(pg_catalog.<) x.hi),
                   (2, 'seq_repeated_in_table',
                    x.n OPERATOR(pg_catalog.<>) x.distinct_seqs)) k(ord, kind, violated)
             WHERE k.violated) v
             WHERE $3 IS NULL OR v.n OPERATOR(pg_catalog.<=) $3
             ORDER BY v.ord, v.res$q$,
            att.resource_column, att.sequence_column, att.table_name, sample)
            USING att.table_name::pg_catalog.text, att.stream, max_per_kind;
    END LOOP;

    -- Producer: a sequencing trigger that attach() did not register (made
    -- by hand, or left on a partition detached from its table) refuses
    -- every insert (0A000).  Clones on partitions follow their table's.
    RETURN QUERY
    SELECT 'sequence_trigger_not_attached'::pg_catalog.text,
           pg_catalog.format('table %s: a sequencing trigger for stream %s that ordering.attach() did not register, inserts fail',
                             t.tgrelid::pg_catalog.regclass, pg_catalog.quote_literal(t.stream))
      FROM (SELECT tg.tgrelid,
                   COALESCE(args[3], n.nspname OPERATOR(pg_catalog.||) '.'
                                     OPERATOR(pg_catalog.||) c.relname) AS stream
              FROM pg_catalog.pg_trigger tg
              JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) tg.tgrelid
              JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
             CROSS JOIN LATERAL pg_catalog.string_to_array(
                   pg_catalog.rtrim(pg_catalog.encode(tg.tgargs, 'escape'), '\000'), '\000') args
             WHERE tg.tgfoid OPERATOR(pg_catalog.=) seq_fn
               AND tg.tgparentid OPERATOR(pg_catalog.=) 0
               -- Citus's copies on shards and workers (src/citus.c checks them)
               AND (tg.tgnargs OPERATOR(pg_catalog.<) 4
                    OR NOT ordering_internal.citus_trigger_copy(tg.tgrelid))) t
     WHERE NOT EXISTS (SELECT FROM ordering.attachments a
                        WHERE a.tbl OPERATOR(pg_catalog.=) t.tgrelid
                          AND a.attached
                          AND a.stream OPERATOR(pg_catalog.=) t.stream)
     ORDER BY t.tgrelid::pg_catalog.regclass::pg_catalog.text
     LIMIT max_per_kind;

    -- Consumer: a parked event waits for a predecessor, so it lies beyond
    -- position + 1 (at position + 1 it would have been drained).
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_not_ahead'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: parked seq %%s, position %%s',
                                 pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                 p.seq, COALESCE(pos.position, 0))
          FROM ordering.parked p%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                              LIMIT 1) pos ON true
         WHERE p.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY p.consumer, p.resource_id, p.seq
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_not_drained'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: parked seq %%s is next after position %%s',
                                 pg_catalog.quote_literal(p.consumer), pg_catalog.quote_literal(p.resource_id),
                                 p.seq, COALESCE(pos.position, 0))
          FROM ordering.parked p%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) p.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) p.resource_id
                              LIMIT 1) pos ON true
         WHERE p.seq OPERATOR(pg_catalog.=) (COALESCE(pos.position, 0) OPERATOR(pg_catalog.+) 1)
         ORDER BY p.consumer, p.resource_id, p.seq
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Gaps: a request names a non-empty range not yet applied, in front of
    -- events that are parked (the consumer functions delete it as soon as
    -- the position reaches missing_to or nothing is parked any more).
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_without_parked'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, nothing parked',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to)
          FROM ordering.gap_requests g%s
          LEFT JOIN LATERAL (SELECT true AS found FROM ordering.parked p
                              WHERE p.consumer OPERATOR(pg_catalog.=) g.consumer
                                AND p.resource_id OPERATOR(pg_catalog.=) g.resource_id
                              LIMIT 1) k ON true
         WHERE k.found IS NULL
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_filled'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s, position %%s',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to, COALESCE(pos.position, 0))
          FROM ordering.gap_requests g%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) g.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) g.resource_id
                              LIMIT 1) pos ON true
         WHERE g.missing_to OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'gap_request_empty'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: gap request for %%s..%%s',
                                 pg_catalog.quote_literal(g.consumer), pg_catalog.quote_literal(g.resource_id),
                                 g.missing_from, g.missing_to)
          FROM ordering.gap_requests g%s
         WHERE g.missing_from OPERATOR(pg_catalog.>) g.missing_to
         ORDER BY g.consumer, g.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Dead letters: the event a resource is blocked at was never applied,
    -- it is held as the dead letter, not parked, and the resource's
    -- position row is blocked at exactly its seq (blocked_at), which is
    -- what makes later events wait behind it.
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_not_ahead'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, position %%s',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq, COALESCE(pos.position, 0))
          FROM ordering.dead_letter_events d%s
          LEFT JOIN LATERAL (SELECT o.position FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                              LIMIT 1) pos ON true
         WHERE d.seq OPERATOR(pg_catalog.<=) COALESCE(pos.position, 0)
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_parked'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s is also parked',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq)
          FROM ordering.dead_letter_events d%s
          JOIN LATERAL (SELECT true AS found FROM ordering.parked p
                         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
                           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
                           AND p.seq OPERATOR(pg_catalog.=) d.seq
                         LIMIT 1) k ON true
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'dead_letter_not_blocking'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: dead letter seq %%s, but %%s',
                                 pg_catalog.quote_literal(d.consumer), pg_catalog.quote_literal(d.resource_id),
                                 d.seq,
                                 CASE WHEN pos.found IS NULL THEN 'the resource has no position row'
                                      WHEN pos.blocked_at IS NULL THEN 'the resource is not blocked'
                                      ELSE pg_catalog.format('the resource is blocked at seq %%s', pos.blocked_at)
                                 END)
          FROM ordering.dead_letter_events d%s
          LEFT JOIN LATERAL (SELECT true AS found, o.blocked_at FROM ordering.positions o
                              WHERE o.consumer OPERATOR(pg_catalog.=) d.consumer
                                AND o.resource_id OPERATOR(pg_catalog.=) d.resource_id
                              LIMIT 1) pos ON true
         WHERE pos.found IS NULL
            OR pos.blocked_at IS DISTINCT FROM d.seq
         ORDER BY d.consumer, d.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'block_without_dead_letter'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: blocked at seq %%s, but there is no dead letter',
                                 pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                 o.blocked_at)
          FROM ordering.positions o%s
          LEFT JOIN LATERAL (SELECT true AS found FROM ordering.dead_letter_events d
                              WHERE d.consumer OPERATOR(pg_catalog.=) o.consumer
                                AND d.resource_id OPERATOR(pg_catalog.=) o.resource_id
                              LIMIT 1) k ON true
         WHERE o.blocked_at IS NOT NULL
           AND k.found IS NULL
         ORDER BY o.consumer, o.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;
    -- The summary of parked events kept with each position (its columns
    -- are added in the section "Consumer speed"); -1 is "not known".
    RETURN QUERY EXECUTE pg_catalog.format($q$
        SELECT 'parked_summary_mismatch'::pg_catalog.text,
               pg_catalog.format('consumer %%s, resource %%s: the position row says %%s parked in [%%s, %%s], ordering.parked holds %%s in [%%s, %%s]',
                                 pg_catalog.quote_literal(o.consumer), pg_catalog.quote_literal(o.resource_id),
                                 o.parked_count, o.parked_lowest, o.parked_highest,
                                 k.n, COALESCE(k.lowest, 0), COALESCE(k.highest, 0))
          FROM ordering.positions o%s
         CROSS JOIN LATERAL (SELECT pg_catalog.count(*) AS n, pg_catalog.min(p.seq) AS lowest,
                                    pg_catalog.max(p.seq) AS highest
                               FROM ordering.parked p
                              WHERE p.consumer OPERATOR(pg_catalog.=) o.consumer
                                AND p.resource_id OPERATOR(pg_catalog.=) o.resource_id) k
         WHERE o.parked_count OPERATOR(pg_catalog.>=) 0
           AND (o.parked_count OPERATOR(pg_catalog.<>) k.n
                OR (k.n OPERATOR(pg_catalog.>) 0
                    AND (o.parked_lowest OPERATOR(pg_catalog.<>) k.lowest
                         OR o.parked_highest OPERATOR(pg_catalog.<>) k.highest)))
         ORDER BY o.consumer, o.resource_id
         LIMIT $1$q$, sample)
        USING max_per_kind;

    -- Citus: the distributed consumers' tables, on every node (section
    -- "Citus: consumers")
    RETURN QUERY SELECT * FROM ordering_internal.check_distributed_consumers(sample_percent, max_per_kind);

    -- Statistics: each gauge of ordering.stats that counts rows of a table
    -- equals that count, per consumer; on a Citus coordinator the rows of
    -- the distributed consumers' tables count too (each counted through
    -- Citus on its own: a statement that mixes the extension's tables and
    -- distributed ones would be planned in pieces).  Without the library
    -- preloaded there are no statistics to compare.
    FOR gauge IN
        SELECT v.col, v.tbl, v.suffix
          FROM (VALUES ('parked_current', 'ordering.parked', '_parked'),
                       ('dead_letters_current', 'ordering.dead_letter_events', '_dead_letters'))
               AS v(col, tbl, suffix)
         WHERE EXISTS (SELECT FROM pg_catalog.pg_attribute a
                        WHERE a.attrelid OPERATOR(pg_catalog.=) 'ordering.stats'::pg_catalog.regclass
                          AND a.attname OPERATOR(pg_catalog.=) v.col
                          AND NOT a.attisdropped)
           AND pg_catalog.to_regclass(v.tbl) IS NOT NULL
    LOOP
        dist_consumers := '{}';
        dist_rows := '{}';
        FOR dc IN
            SELECT d.consumer,
                   ordering_internal.distributed_consumer_table(d.consumer, gauge.suffix) AS t
              FROM ordering_internal.distributed_consumers d
        LOOP
            CONTINUE WHEN dc.t IS NULL;
            EXECUTE pg_catalog.format('SELECT pg_catalog.count(*) FROM %s r WHERE r.consumer OPERATOR(pg_catalog.=) $1',
                                      dc.t)
               INTO n USING dc.consumer;
            dist_consumers := dist_consumers OPERATOR(pg_catalog.||) dc.consumer;
            dist_rows := dist_rows OPERATOR(pg_catalog.||) n;
        END LOOP;
        BEGIN
            RETURN QUERY EXECUTE pg_catalog.format($q$
                SELECT 'stats_gauge_mismatch'::pg_catalog.text,
                       pg_catalog.format('consumer %%s: ordering.stats.%1$s is %%s, %2$s holds %%s rows',
                                         pg_catalog.quote_literal(COALESCE(st.consumer, t.consumer)),
                                         COALESCE(st.gauge, 0), COALESCE(t.n, 0))
                  FROM (SELECT s.consumer, s.%1$I AS gauge FROM ordering.stats s) st
                  FULL JOIN (SELECT u.consumer, pg_catalog.sum(u.n) AS n
                               FROM (SELECT r.consumer, pg_catalog.count(*) AS n
                                       FROM %2$s r GROUP BY r.consumer
                                     UNION ALL
                                     SELECT x.consumer COLLATE "C", x.n
                                       FROM ROWS FROM (pg_catalog.unnest($2), pg_catalog.unnest($3)) AS x(consumer, n)) u
                              GROUP BY u.consumer) t
                    ON t.consumer OPERATOR(pg_catalog.=) st.consumer
                 WHERE COALESCE(st.gauge, 0) OPERATOR(pg_catalog.<>) COALESCE(t.n, 0)
                 ORDER BY 2
                 LIMIT $1$q$, gauge.col, gauge.tbl)
                USING max_per_kind, dist_consumers, dist_rows;
        EXCEPTION WHEN object_not_in_prerequisite_state THEN
            EXIT;
        END;
    END LOOP;
END
$$;
COMMENT ON FUNCTION ordering."check"(double precision, bigint) IS
    'Verifies every invariant between the extension''s tables and of the attached tables (docs/anti-entropy.md lists them: triggers and columns of attached tables, counters against their rows, parked events, gap requests and dead letters against positions and blocks, statistics gauges against their tables); one row per violation, none when consistent';
REVOKE EXECUTE ON FUNCTION ordering."check"(double precision, bigint) FROM PUBLIC;
