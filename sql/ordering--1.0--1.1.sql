-- ordering 1.0 -> 1.1.
--
-- A fresh CREATE EXTENSION runs ordering--1.0.sql and then this script, so
-- an upgraded database and a new one are made by the same statements.
-- Written search-path-proof, like the 1.0 script.

\echo Use "ALTER EXTENSION ordering UPDATE TO '1.1'" to load this file. \quit

-------------------------------------------------------------------------------
-- Dead letters: a poison event blocks only its own (consumer, resource)
-------------------------------------------------------------------------------

-- At most one dead letter per (consumer, resource): the event whose handling
-- failed, kept with the error.  While it is here the resource is blocked at
-- its seq: later events park behind it, a redelivery of it is a duplicate.
CREATE TABLE ordering.dead_letter_events (
    consumer    text COLLATE "C" NOT NULL,
    resource_id text COLLATE "C" NOT NULL,
    seq         bigint NOT NULL CHECK (seq OPERATOR(pg_catalog.>) 0),
    payload     jsonb,
    sqlstate    text,
    message     text,
    detail      text,
    failed_at   timestamptz NOT NULL DEFAULT pg_catalog.now(),
    attempts    integer NOT NULL DEFAULT 1 CHECK (attempts OPERATOR(pg_catalog.>) 0),
    PRIMARY KEY (consumer, resource_id)
);
COMMENT ON TABLE ordering.dead_letter_events IS
    'The dead letter of each blocked (consumer, resource): the event whose handling failed, with its error; see the view ordering.dead_letters';
SELECT pg_catalog.pg_extension_config_dump('ordering.dead_letter_events', '');

CREATE VIEW ordering.dead_letters AS
SELECT d.consumer, d.resource_id, d.seq, d.payload, d.sqlstate, d.message,
       d.failed_at, d.attempts,
       (SELECT pg_catalog.count(*) FROM ordering.parked p
         WHERE p.consumer OPERATOR(pg_catalog.=) d.consumer
           AND p.resource_id OPERATOR(pg_catalog.=) d.resource_id
           AND p.seq OPERATOR(pg_catalog.>) d.seq) AS parked_behind,
       d.detail
  FROM ordering.dead_letter_events d;
COMMENT ON VIEW ordering.dead_letters IS
    'One row per dead letter: the event that blocks its (consumer, resource), its error, how often it was tried, and how many events wait behind it';
