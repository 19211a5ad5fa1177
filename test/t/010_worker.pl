# The gap-sweeper background workers: they start, sweep on schedule, follow
# a reloaded configuration, escalate a real gap after the deadline with
# exponential backoff (NOTIFY payloads checked), remove the request once the
# gap is gone, survive errors, and come back after pg_terminate_backend and
# after kill -9.  No timing is asserted: every wait polls for an outcome,
# and the backoff is checked as a lower bound.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;

my $node = PostgreSQL::Test::Cluster->new('worker');
$node->init;
# A long interval first: the sweepers sweep once at start, then wait.
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
ordering.sweep_databases = 'postgres, gapdb, "no such db"'
ordering.sweep_interval = '1h'
ordering.gap_deadline = '1s'
restart_after_crash = on
});
$node->start;

# Launcher and the sweeper of "postgres" (which has no extension).
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering launcher'
	   AND application_name = 'ordering launcher' AND datname IS NULL}),
	'the launcher shows in pg_stat_activity');
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper'
	   AND application_name = 'ordering gap sweeper' AND datname = 'postgres'}),
	'a sweeper runs for database postgres');
$node->wait_for_log(qr/extension "ordering" is not installed in database "postgres", not sweeping it/);
$node->wait_for_log(qr/database "no such db" listed in ordering.sweep_databases does not exist/);
pass('a missing extension and a missing database are logged');

# gapdb appears later: a reload makes the launcher retry at once.
$node->safe_psql('postgres', 'CREATE DATABASE gapdb');
$node->safe_psql('gapdb', 'CREATE EXTENSION ordering');
$node->reload;
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'
	   AND query LIKE '%ordering.sweep_gaps()%' AND state = 'idle'}),
	'after a reload the sweeper of gapdb starts and sweeps once');

# A real gap: position 2, seq 5 parked long ago.  With the interval at one
# hour nothing sweeps it; reloading a 1 s interval must.
$node->safe_psql('gapdb', q{
	INSERT INTO ordering.positions VALUES ('billing', 'acct-1', 2);
	INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
	VALUES ('billing', 'acct-1', 5, '{}', now() - interval '1 min'),
	       ('billing', 'acct-1', 6, '{}', now() - interval '1 min')});

# Listen before the interval changes, and collect the notifications until
# the request has been emitted three times.
my $listener = $node->background_psql('gapdb');
$listener->query_safe('LISTEN ordering_gap');

$node->append_conf('postgresql.conf', "ordering.sweep_interval = '1s'");
$node->reload;
ok( $node->poll_query_until('gapdb',
		'SELECT count(*) = 1 FROM ordering.gap_requests'),
	'after the interval is reloaded the worker escalates the gap');
is( $node->safe_psql('gapdb', q{
	SELECT concat_ws(',', consumer, resource_id, missing_from, missing_to, parked_count)
	  FROM ordering.gap_requests}),
	'billing,acct-1,3,4,2', 'the request names the missing range 3..4');

ok( $node->poll_query_until('gapdb',
		'SELECT attempts >= 3 FROM ordering.gap_requests'),
	'the request is repeated');
my $out = $listener->query_safe('SELECT 1');
$out .= $listener->query_safe('SELECT 1');
my @payloads = ($out =~ /Asynchronous notification "ordering_gap" with payload "(.*?)" received/g);
cmp_ok(scalar(@payloads), '>=', 3, 'each emission was notified');
my @rows = map { decode_json($_) } @payloads;
is_deeply([ map { $_->{attempts} } @rows[ 0 .. 2 ] ], [ 1, 2, 3 ],
	'attempts count up by one per emission');
is_deeply([ map { "$_->{consumer}/$_->{resource_id}/$_->{missing_from}-$_->{missing_to}" } @rows[ 0 .. 2 ] ],
	[ ('billing/acct-1/3-4') x 3 ], 'the payload is the request row');
# Backoff: emission n+1 comes at least deadline * 2^(n-1) after emission n.
for my $i (0 .. 1)
{
	my $wait = 2**$i;
	is( $node->safe_psql('gapdb',
			"SELECT '$rows[$i+1]{last_requested_at}'::timestamptz - '$rows[$i]{last_requested_at}'::timestamptz >= interval '$wait s'"),
		't', "repeat " . ($i + 1) . " waited at least $wait s");
}
is($rows[1]{detected_at}, $rows[0]{detected_at}, 'detected_at stays the first detection');
$listener->quit;

my $escalated = $node->safe_psql('gapdb',
	q{SELECT gaps_escalated >= 3 FROM ordering.stats WHERE consumer = 'billing'});
is($escalated, 't', 'the worker\'s escalations are counted in ordering.stats');

# The "not installed" message was logged once, although the sweeper of
# postgres has swept every second for several seconds by now.
my $log = slurp_file($node->logfile);
my @missing = ($log =~ /extension "ordering" is not installed in database "postgres"/g);
is(scalar(@missing), 1, 'a database without the extension is logged once');

# The gap goes away: the request disappears.
$node->safe_psql('gapdb', q{
	DELETE FROM ordering.parked;
	UPDATE ordering.positions SET position = 6});
ok($node->poll_query_until('gapdb', 'SELECT count(*) = 0 FROM ordering.gap_requests'),
	'the request is removed when the gap is gone');

# Errors: sweeping as a role without privileges fails; the sweeper exits,
# the server does not care, and the launcher retries every interval.
$node->safe_psql('postgres', 'CREATE ROLE sweeper_nopriv LOGIN');
$node->append_conf('postgresql.conf', "ordering.sweep_role = 'sweeper_nopriv'");
$node->reload;
my $offset = -s $node->logfile;
$node->wait_for_log(qr/permission denied for schema ordering/, $offset);
$offset = -s $node->logfile;
$node->wait_for_log(qr/permission denied for schema ordering/, $offset);
pass('a failing sweep is logged and retried');
is($node->safe_psql('gapdb', 'SELECT 1'), '1', 'the server is unaffected');
$node->append_conf('postgresql.conf', "ordering.sweep_role = ''");
$node->reload;
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND usename <> 'sweeper_nopriv'}),
	'the sweepers run as the bootstrap superuser again');

# pg_terminate_backend of a sweeper: the launcher starts a new one.
my $old = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'
	   AND pid <> $old}),
	'a terminated sweeper is replaced');

# pg_terminate_backend of the launcher: the postmaster restarts it, and it
# replaces its sweepers (which it stopped on its way out).
$old = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity WHERE backend_type = 'ordering launcher'});
$node->safe_psql('postgres', "SELECT pg_terminate_backend($old)");
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering launcher' AND pid <> $old}),
	'a terminated launcher is restarted');
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper'}),
	'the restarted launcher runs one sweeper per database, no duplicates');

# kill -9 of a sweeper: the postmaster restarts every backend; the workers
# come back and sweep again.
$old = $node->safe_psql('postgres', q{
	SELECT pid FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'});
my $log_offset = -s $node->logfile;
kill 'KILL', $old;
$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
# as 003 and 020 do: a psql started while the server still refuses
# connections may exit before it reads its query, and IPC::Run dies of the
# broken pipe
$node->wait_for_log(qr/database system is ready to accept connections/, $log_offset);
ok( $node->poll_query_until('postgres', qq{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'
	   AND pid <> $old}),
	'after kill -9 the workers come back');
$node->safe_psql('gapdb', q{
	INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
	VALUES ('billing', 'acct-2', 3, '{}', now() - interval '1 min')});
ok($node->poll_query_until('gapdb', 'SELECT count(*) = 1 FROM ordering.gap_requests'),
	'and they escalate gaps again');

# A database dropped from the list loses its sweeper.
$node->append_conf('postgresql.conf', "ordering.sweep_databases = 'postgres'");
$node->reload;
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 0 FROM pg_stat_activity
	 WHERE backend_type = 'ordering gap sweeper' AND datname = 'gapdb'}),
	'a database removed from the list is no longer swept');
$node->safe_psql('postgres', 'DROP DATABASE gapdb');

# SIGTERM (fast shutdown) stops everything cleanly.
$node->stop('fast');
ok(1, 'the server stops with the workers running');

done_testing();
