-- Tables for the consumer benchmarks.
--
-- The stream (first lines of every consumer script): each pgbench client owns
-- its resources ('c<client>-<n>', n < :resources) and walks its own stream
-- with the client variable k (pgbench keeps variables between transactions).
-- Event j of the stream is (resource j % resources, seq j / resources + 1);
-- events are shuffled by permute() within blocks of resources * d events, so
-- every resource sees d consecutive seqs per block in random order (d = 1:
-- every resource's events in order).  5% of deliveries repeat the previous
-- one: a duplicate.  Every variant sees exactly the same stream, and the
-- consumer tables are emptied before every run (reset_consumer.sql).

-- State consumers ("Handling Out-of-Order Events with Sequence Numbers",
-- step 2): one projection table per variant.
CREATE TABLE proj_guarded (resource_id text PRIMARY KEY, plan text NOT NULL, version bigint NOT NULL);
CREATE TABLE proj_ext (LIKE proj_guarded INCLUDING ALL);
CREATE TABLE proj_newer (LIKE proj_guarded INCLUDING ALL);
CREATE TABLE proj_guarded_select (LIKE proj_guarded INCLUDING ALL);
CREATE TABLE proj_ext_function (LIKE proj_guarded INCLUDING ALL);
-- apply_ext's statement in a PL/pgSQL function, which plans it once per
-- connection: what a client on the simple protocol can do instead of preparing.
CREATE FUNCTION apply_plan(r text, p text, s bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO proj_ext_function AS v (resource_id, plan, version)
    SELECT r, p, s WHERE ordering.apply_if_newer('bench_function', r, s)
        ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;
END $$;
CREATE TRIGGER newer_only BEFORE UPDATE ON proj_newer
    FOR EACH ROW EXECUTE FUNCTION ordering.newer_only('version');

-- Step consumers (the same article, step 3) by hand: a position row per resource that
-- is also the per-entity lock, and a durable parking table.
CREATE TABLE plpgsql_positions (resource_id text PRIMARY KEY, last_applied bigint NOT NULL);
CREATE TABLE plpgsql_parked (resource_id text, seq bigint, payload jsonb,
    parked_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (resource_id, seq));
CREATE FUNCTION plpgsql_deliver(r text, s bigint, p jsonb)
RETURNS TABLE (seq bigint, payload jsonb) LANGUAGE plpgsql AS $$
DECLARE
    last bigint;
BEGIN
    -- per-entity lock: the position row
    SELECT x.last_applied INTO last FROM plpgsql_positions x WHERE x.resource_id = r FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO plpgsql_positions VALUES (r, 0) ON CONFLICT DO NOTHING;
        SELECT x.last_applied INTO last FROM plpgsql_positions x WHERE x.resource_id = r FOR UPDATE;
    END IF;
    IF s <= last THEN
        RETURN;                          -- duplicate or already covered
    END IF;
    IF s > last + 1 THEN
        INSERT INTO plpgsql_parked AS k (resource_id, seq, payload) VALUES (r, s, p)
            ON CONFLICT DO NOTHING;      -- parked (a duplicate park is a no-op)
        RETURN;
    END IF;
    seq := s; payload := p;
    RETURN NEXT;                         -- apply this one
    last := s;
    LOOP                                 -- drain the parked run
        DELETE FROM plpgsql_parked k WHERE k.resource_id = r AND k.seq = last + 1
            RETURNING k.payload INTO payload;
        EXIT WHEN NOT FOUND;
        last := last + 1;
        seq := last;
        RETURN NEXT;
    END LOOP;
    UPDATE plpgsql_positions x SET last_applied = last WHERE x.resource_id = r;
END $$;

-- Step consumers through a handler (deliver_handler.sql,
-- deliver_dead_letter.sql): the least a handler does, one INSERT of the
-- event into a table of its own.
CREATE TABLE handler_ledger (resource_id text NOT NULL, seq bigint NOT NULL, payload jsonb);
CREATE FUNCTION bench_apply(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO handler_ledger VALUES (r, s, p);
END $$;

-- The floor variant (floor.sql): the position of the event's resource,
-- written without any check.
CREATE TABLE floor_positions (resource_id text PRIMARY KEY, position bigint NOT NULL);
