\set r random(1, :resources)
SELECT naive_emit('r' || :r, 'e', '{"k": 1}');
