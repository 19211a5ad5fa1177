# Crash recovery of dead letters.  A step consumer "ledger" applies events
# through a handler with on_error => 'dead_letter'; the handler rejects
# "poison" payloads until the operator fixes it.  The server is stopped with
# an immediate shutdown while resources are blocked by dead letters with
# events parked behind them (and a retry is in progress, uncommitted), and
# then crashed by kill -9 of a backend sleeping inside a handler (one in a
# retry, one in a dead-lettering delivery).  After each restart the blocks,
# their dead letters (error, attempts), the events parked behind them and
# the counts derived from them are exactly as committed, and nothing of the
# killed work survived.  At the end the handler is fixed, every dead letter
# retried, the missing events delivered: every event is applied exactly
# once, in order.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('dead_letters_crash');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
restart_after_crash = on
});
$node->start;

# The handler records each event it applies in "ledger"; it rejects poison
# payloads while handler_fixed says false (SQLSTATE 23514: not transient),
# and sleeps on the event named by the setting test.sleep_at, so that a
# backend can be killed inside it.
$node->safe_psql('postgres', q{
	CREATE EXTENSION ordering;
	CREATE TABLE ledger (id bigserial PRIMARY KEY, resource_id text NOT NULL,
	                     seq bigint NOT NULL, payload jsonb);
	CREATE TABLE handler_fixed (fixed boolean NOT NULL);
	INSERT INTO handler_fixed VALUES (false);
	CREATE FUNCTION apply_step(r text, s bigint, p jsonb) RETURNS void
	LANGUAGE plpgsql AS $$
	BEGIN
	    INSERT INTO ledger (resource_id, seq, payload) VALUES (r, s, p);
	    IF p ? 'poison' AND NOT (SELECT fixed FROM handler_fixed) THEN
	        RAISE EXCEPTION 'cannot apply event % of %', s, r
	            USING ERRCODE = 'check_violation', DETAIL = 'The payload is poison.';
	    END IF;
	    IF current_setting('test.sleep_at', true) = r || '/' || s THEN
	        PERFORM pg_sleep(600);
	    END IF;
	END
	$$;
	CREATE FUNCTION deliver(r text, s bigint, p jsonb) RETURNS integer
	LANGUAGE sql AS $$
	    SELECT ordering.deliver('ledger', r, s, p, 'apply_step(text, bigint, jsonb)',
	                            on_error => 'dead_letter')
	$$;});

# What must survive: positions and blocks, dead letters with their error
# and attempts, parked events, the ledger, and the counts the statistics
# derive from the tables.  (The event counters are shared memory and start
# again at a restart, as documented.)
my $state_sql = q{
	SELECT 'positions ' || COALESCE(string_agg(resource_id || '=' || position || '/' ||
	           COALESCE(blocked_at::text, '-'), ' ' ORDER BY resource_id), '')
	  FROM ordering.positions
	UNION ALL
	SELECT 'dead ' || COALESCE(string_agg(format('%s:%s:%s:%s:%s:%s:%s', resource_id, seq,
	           payload, sqlstate, message, attempts, parked_behind), ' ' ORDER BY resource_id), '')
	  FROM ordering.dead_letters
	UNION ALL
	SELECT 'parked ' || COALESCE(string_agg(resource_id || '/' || seq, ' '
	           ORDER BY resource_id, seq), '')
	  FROM ordering.parked
	UNION ALL
	SELECT 'ledger ' || COALESCE(string_agg(resource_id || '/' || seq, ' ' ORDER BY id), '')
	  FROM ledger
	UNION ALL
	SELECT 'stats ' || COALESCE(string_agg(consumer || ':' || dead_letters_current || ':' ||
	           parked_current || ':' || (oldest_gap_age IS NOT NULL), ' '), '')
	  FROM ordering.stats};

# The invariants of a blocked key, as one list of violations: every parked
# event is above position + 1; a key is blocked exactly when it has a dead
# letter, at its seq, above the position; a gap request only for an open
# gap.  ordering.check() too, where this version has it.
my $violations_sql = q{
	SELECT string_agg(v, ' ') FROM (
	SELECT 'parked:' || p.resource_id || '/' || p.seq AS v
	  FROM ordering.parked p
	  LEFT JOIN ordering.positions o USING (consumer, resource_id)
	 WHERE p.seq <= COALESCE(o.position, 0) + 1
	UNION ALL
	SELECT 'block:' || COALESCE(o.resource_id, d.resource_id)
	  FROM (SELECT * FROM ordering.positions WHERE blocked_at IS NOT NULL) o
	  FULL JOIN ordering.dead_letter_events d USING (consumer, resource_id)
	 WHERE o.blocked_at IS DISTINCT FROM d.seq OR d.seq <= o.position
	UNION ALL
	SELECT 'request:' || g.resource_id
	  FROM ordering.gap_requests g
	 WHERE NOT EXISTS (SELECT FROM ordering.open_gaps o
	                    WHERE o.consumer = g.consumer AND o.resource_id = g.resource_id)
	) x};
my $has_check = $node->safe_psql('postgres',
	q{SELECT EXISTS (SELECT FROM pg_proc WHERE proname = 'check'
	                    AND pronamespace = 'ordering'::regnamespace)});
note($has_check eq 't' ? 'ordering.check() is checked too'
	: 'this version has no ordering.check(): only the invariants written here are checked');

sub consistent
{
	my ($what) = @_;
	is($node->safe_psql('postgres', $violations_sql), '', "$what: the blocks and parked events are consistent");
	if ($has_check eq 't')
	{
		is($node->safe_psql('postgres', 'SELECT count(*) FROM ordering.check()'), '0',
			"$what: ordering.check() finds nothing");
	}
}

# a: 1 and 2 applied, 3 poison (dead), 4, 5, 6 parked behind it (6 first),
#    a redelivery of 3 (duplicate), a retry that fails again (attempts 2).
# b: a table-form consumer gave up on its first event.
# k: 1 applied, 3 (poison) and 4 parked: 2 is missing.
# g: 1 applied, 3 parked: an ordinary gap.
$node->safe_psql('postgres', q{
	SELECT deliver('a', 1, '{}'), deliver('a', 2, '{}'),
	       deliver('a', 3, '{"poison": true}'), deliver('a', 6, '{}'),
	       deliver('a', 5, '{}'), deliver('a', 4, '{}'),
	       deliver('a', 3, '{"poison": true}');
	SELECT ordering.retry_dead_letter('ledger', 'a', 'apply_step(text, bigint, jsonb)');
	SELECT ordering.dead_letter('ledger', 'b', 1, '{"n": 1}', 'no such account');
	SELECT deliver('k', 1, '{}'), deliver('k', 3, '{"poison": true}'), deliver('k', 4, '{}');
	SELECT deliver('g', 1, '{}'), deliver('g', 3, '{}');});
my $before = $node->safe_psql('postgres', $state_sql);
like($before, qr/^dead a:3:\{"poison": true\}:23514:cannot apply event 3 of a:2:3 b:1:\{"n": 1\}::no such account:1:0$/m,
	'before: a blocked at 3 after two attempts with 3 parked behind, b blocked at 1');
like($before, qr/^positions a=2\/3 b=0\/1 g=1\/- k=1\/-$/m, 'before: positions and blocks');
like($before, qr/^stats ledger:2:6:true$/m, 'before: two dead letters, six parked, a gap open');
consistent('before');

# Immediate shutdown while a retry with the fixed handler is in progress:
# it has applied 3 to 6 in its transaction, not committed.
my $retry = $node->background_psql('postgres');
$retry->query_safe('BEGIN');
$retry->query_safe('UPDATE handler_fixed SET fixed = true');
# (BackgroundPsql of 16.2 and earlier 16s may leave the result's newline)
chomp(my $applied = $retry->query_safe(
	q{SELECT ordering.retry_dead_letter('ledger', 'a', 'apply_step(text, bigint, jsonb)')}));
is($applied, '4', 'the uncommitted retry applied 3, 4, 5 and 6');
$node->stop('immediate');
{
	local $SIG{PIPE} = 'IGNORE';
	eval { $retry->quit };
}
$node->start;
is($node->safe_psql('postgres', $state_sql), $before,
	'immediate shutdown: blocks, dead letters, parked events, ledger and counts as committed');
consistent('immediate shutdown');

# kill -9 of backends sleeping inside handlers: a retry with the fixed
# handler in the middle of the run behind the dead letter (on 5), and a
# dead-lettering delivery of k's missing 2 (which would drain into the
# poison 3).
my $victim = $node->background_psql('postgres');
my $pid = $victim->query_safe('SELECT pg_backend_pid()');
$victim->query_safe(q{SET test.sleep_at = 'a/5'});
$victim->query_safe('BEGIN');
$victim->query_safe('UPDATE handler_fixed SET fixed = true');
$victim->query_until(qr/retrying/, q{
\echo retrying
SELECT ordering.retry_dead_letter('ledger', 'a', 'apply_step(text, bigint, jsonb)');
});
my $victim2 = $node->background_psql('postgres');
my $pid2 = $victim2->query_safe('SELECT pg_backend_pid()');
$victim2->query_safe(q{SET test.sleep_at = 'k/2'});
$victim2->query_until(qr/delivering/, q{
\echo delivering
SELECT deliver('k', 2, '{}');
});
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) = 2 FROM pg_stat_activity
	 WHERE pid IN ($pid, $pid2) AND wait_event = 'PgSleep'}),
	'kill -9: both victims sleep inside a handler');
my $offset = -s $node->logfile;
kill 'KILL', $pid;
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
{
	local $SIG{PIPE} = 'IGNORE';
	eval { $victim->quit };
	eval { $victim2->quit };
}
$node->poll_query_until('postgres', 'SELECT true');
is($node->safe_psql('postgres', $state_sql), $before,
	'kill -9: blocks, dead letters, parked events, ledger and counts as committed');
consistent('kill -9');

# The operator fixes the handler and retries every dead letter; the missing
# events arrive.  Every event is applied once, in order.
$node->safe_psql('postgres', 'UPDATE handler_fixed SET fixed = true');
is($node->safe_psql('postgres', q{
	SELECT string_agg(resource_id || ':' ||
	           ordering.retry_dead_letter(consumer, resource_id, 'apply_step(text, bigint, jsonb)'),
	           ' ' ORDER BY resource_id)
	  FROM ordering.dead_letters}),
	'a:4 b:1', 'retried: a applies 3 to 6, b applies 1');
is($node->safe_psql('postgres', q{SELECT deliver('k', 2, '{}') || ' ' || deliver('g', 2, '{}')}),
	'3 2', 'the missing events arrive: k applies 2 to 4, g 2 and 3');
is($node->safe_psql('postgres', q{
	SELECT string_agg(resource_id || '=' || seqs, ' ' ORDER BY resource_id)
	  FROM (SELECT resource_id, string_agg(seq::text, ',' ORDER BY id) AS seqs
	          FROM ledger GROUP BY resource_id) l}),
	'a=1,2,3,4,5,6 b=1 g=1,2,3 k=1,2,3,4',
	'every event applied exactly once, in order');
is($node->safe_psql('postgres', q{
	SELECT (SELECT count(*) FROM ordering.dead_letters) || ' ' ||
	       (SELECT count(*) FROM ordering.parked) || ' ' ||
	       (SELECT string_agg(resource_id || '=' || position, ' ' ORDER BY resource_id)
	          FROM ordering.positions WHERE blocked_at IS NULL) || ' ' ||
	       (SELECT dead_letters_current || ':' || parked_current FROM ordering.stats
	         WHERE consumer = 'ledger')}),
	'0 0 a=6 b=1 g=3 k=4 0:0', 'nothing dead or parked; every position at the last event');
consistent('end');

$node->stop;
done_testing();
