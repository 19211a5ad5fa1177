SELECT pgq.insert_event('bench', 'e', '{"k": 1}', 'r' || (random() * :resources)::int, NULL, NULL, NULL) FROM generate_series(1, 100);
