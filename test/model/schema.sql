-- The database every example of the model-based tester starts from (and
-- the head of every replay script): the extension, two attached tables of
-- the user's with the triggers and constraints users put on such tables,
-- and what the consumers apply to.

CREATE EXTENSION ordering;

-- A plain outbox of the user's: an event key for ON CONFLICT, a CHECK, and
-- BEFORE triggers on both sides of the sequencing trigger.
CREATE TABLE t_plain (
    id          bigserial PRIMARY KEY,
    resource_id text,
    seq         bigint,
    k           text UNIQUE,
    v           integer NOT NULL DEFAULT 0 CHECK (v >= 0),
    note        text NOT NULL DEFAULT ''
);
SELECT ordering.attach('t_plain');

-- A partitioned outbox: rows move between the partitions by UPDATE.
CREATE TABLE t_part (
    id          bigserial,
    resource_id text,
    seq         bigint,
    part        integer NOT NULL,
    v           integer NOT NULL DEFAULT 0 CHECK (v >= 0),
    note        text NOT NULL DEFAULT ''
) PARTITION BY LIST (part);
CREATE TABLE t_part_1 PARTITION OF t_part FOR VALUES IN (1);
CREATE TABLE t_part_2 PARTITION OF t_part FOR VALUES IN (2);
SELECT ordering.attach('t_part');

-- Sorts before ordering_sequence: a row noted 'redirect' is numbered
-- under another resource.
CREATE FUNCTION model_before() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.note = 'redirect' THEN
        NEW.resource_id := NEW.resource_id || '-r';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER a_before BEFORE INSERT ON t_plain
    FOR EACH ROW EXECUTE FUNCTION model_before();

-- Sorts after ordering_sequence: sees the number; skips the row, raises,
-- or changes the numbered row's resource (to the resource a note 'to:X'
-- names, which may be its own).
CREATE FUNCTION model_after() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.note = 'skip' THEN
        RETURN NULL;
    ELSIF NEW.note = 'raise' THEN
        RAISE EXCEPTION 'model: row refused by a later trigger';
    ELSIF NEW.note = 'rewrite' THEN
        NEW.resource_id := NEW.resource_id || '-w';
    ELSIF NEW.note LIKE 'to:%' THEN
        NEW.resource_id := substr(NEW.note, 4);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER z_after BEFORE INSERT ON t_plain
    FOR EACH ROW EXECUTE FUNCTION model_after();

-- BEFORE DELETE (also run by a move between partitions): 'nodelete'
-- raises, 'soft' keeps the row (a soft delete).
CREATE FUNCTION model_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.note = 'nodelete' THEN
        RAISE EXCEPTION 'model: row may not be deleted';
    ELSIF OLD.note = 'soft' THEN
        RETURN NULL;
    END IF;
    RETURN OLD;
END $$;
CREATE TRIGGER z_delete BEFORE DELETE ON t_plain
    FOR EACH ROW EXECUTE FUNCTION model_delete();
CREATE TRIGGER z_delete BEFORE DELETE ON t_part
    FOR EACH ROW EXECUTE FUNCTION model_delete();

-- What the consumers applied, in the order they applied it.
CREATE TABLE applied (
    n           bigserial PRIMARY KEY,
    consumer    text NOT NULL,
    resource_id text NOT NULL,
    seq         bigint NOT NULL
);

-- The handler of consumer 'step': a poison payload fails for good, a
-- transient one fails with a serialization failure, and 'reenter' delivers
-- again, with a handler for its own consumer and resource, or with the
-- table form for the resource 'r' names (applying what that returns).
CREATE FUNCTION model_handler(resource_id text, seq bigint, payload jsonb)
    RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF payload ? 'bad' THEN
        RAISE EXCEPTION 'model: poison event %', seq USING ERRCODE = '22P02';
    ELSIF payload ? 'transient' THEN
        RAISE EXCEPTION 'model: transient failure' USING ERRCODE = '40001';
    ELSIF payload ? 'r' THEN
        INSERT INTO applied (consumer, resource_id, seq)
            SELECT 'step', model_handler.payload->>'r', d.seq
            FROM ordering.deliver('step', model_handler.payload->>'r',
                                  (model_handler.payload->>'reenter')::bigint, '{}') d;
    ELSIF payload ? 'reenter' THEN
        PERFORM ordering.deliver('step', resource_id, (payload->>'reenter')::bigint,
                                 '{}', 'model_handler(text,bigint,jsonb)');
    END IF;
    INSERT INTO applied (consumer, resource_id, seq) VALUES ('step', resource_id, seq);
END $$;

-- A projection kept by ordering.newer_only.
CREATE TABLE proj (
    id      text PRIMARY KEY,
    version bigint NOT NULL,
    val     text
);
CREATE TRIGGER newer_only BEFORE UPDATE ON proj
    FOR EACH ROW EXECUTE FUNCTION ordering.newer_only('version');

-- Inserts an event of a resource from inside a statement, in a
-- subtransaction that it keeps or rolls back (a savepoint rolled back in
-- the middle of a bulk statement).
CREATE FUNCTION model_inner(r text, keep boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    BEGIN
        INSERT INTO t_plain (resource_id, note) VALUES (r, 'inner');
        IF NOT keep THEN
            RAISE EXCEPTION 'undo';
        END IF;
    EXCEPTION WHEN raise_exception THEN
        RETURN 'rolled back';
    END;
    RETURN 'kept';
END $$;
