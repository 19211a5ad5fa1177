\set r random(1, :resources)
SELECT pgq.insert_event('bench', 'e', '{"k": 1}', 'r' || :r, NULL, NULL, NULL);
