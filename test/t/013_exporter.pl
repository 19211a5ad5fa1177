# prometheus-postgres-exporter with monitoring/queries.yaml serves the
# statistics under the metric names of ordering.metrics().  Installs
# nothing: skipped when the exporter is absent (test/run.sh installs it).
# The exporter runs on its own loopback port, so a system service of the
# Debian package (port 9187) does not matter.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use HTTP::Tiny;
use IPC::Run;
use Time::HiRes qw(usleep);

my $exporter = (grep { -x "$_/prometheus-postgres-exporter" } split /:/, "$ENV{PATH}:/usr/bin")[0];
plan skip_all => 'prometheus-postgres-exporter is not installed' unless $exporter;
$exporter .= '/prometheus-postgres-exporter';

my $node = PostgreSQL::Test::Cluster->new('exporter');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION ordering;
	SELECT ordering.emit('acct-1', 'e', '{}'), ordering.emit('acct-1', 'e', '{}');
	INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
	VALUES ('billing', 'acct-1', 4, '{}', now() - interval '1 h'),
	       ('billing', 'acct-2', 9, '{}', now() - interval '1 h');
	SELECT count(*) FROM ordering.sweep_gaps();
	INSERT INTO ordering.dead_letter_events (consumer, resource_id, seq, payload, message)
	VALUES ('billing', 'acct-3', 1, '{}', 'poison');
	UPDATE ordering.outbox SET created_at = now() - interval '1 h';
});
$node->psql('postgres', q{SELECT ordering.emit('acct-1', 'e', '{}', expected_seq => 9)});

# relative to this file: PGXS sets no TESTDIR on every version
my $queries = "$FindBin::RealBin/../../monitoring/queries.yaml";
ok(-f $queries, 'the custom queries file is in the repository');

my $port = PostgreSQL::Test::Cluster::get_free_port();
my $dsn = sprintf('host=%s port=%d dbname=postgres user=%s sslmode=disable',
	$node->host, $node->port, scalar(getpwuid($<)));
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		$exporter, "--web.listen-address=127.0.0.1:$port",
		"--extend.query-path=$queries", '--disable-default-metrics',
		'--disable-settings-metrics', '--no-collector.database',
		'--no-collector.bgwriter'
	],
	'<', \undef, '>', \$out, '2>', \$err,
	init => sub { $ENV{DATA_SOURCE_NAME} = $dsn });

my $body = '';
my $http = HTTP::Tiny->new(timeout => 10);
foreach (1 .. $PostgreSQL::Test::Utils::timeout_default * 10)
{
	my $res = $http->get("http://127.0.0.1:$port/metrics");
	$body = $res->{content} if $res->{success};
	last if $body =~ /ordering_events_parked_current/;
	usleep(100_000);
}
$h->kill_kill;
note "exporter stderr: $err" if $err ne '';

like($body, qr/^# TYPE ordering_events_parked_current gauge$/m,
	'the exporter serves the gauge');
like($body,
	qr/^ordering_events_parked_current\{consumer="billing",datname="postgres"[^}]*\} 2$/m,
	'parked_current of billing is 2');
like($body,
	qr/^ordering_event_gaps_escalated_total\{consumer="billing",datname="postgres"[^}]*\} 2$/m,
	'two gaps escalated');
like($body, qr/^# TYPE ordering_event_reorder_distance histogram$/m,
	'the histogram has its type');
like($body,
	qr/^ordering_event_reorder_distance_bucket\{consumer="billing",datname="postgres",[^}]*le="\+Inf"\} 0$/m,
	'with a +Inf bucket');
like($body,
	qr/^ordering_sequences_assigned_total\{datname="postgres",[^}]*stream="ordering.outbox"\} 2$/m,
	'sequences assigned per stream');
foreach my $name (qw(ordering_events_consumed_total ordering_events_applied_total
	ordering_events_stale_total ordering_events_duplicate_total
	ordering_events_parked_total ordering_events_drained_total))
{
	like($body, qr/^# TYPE $name counter$/m, "$name is a counter");
}
like($body,
	qr/^ordering_dead_letters_current\{consumer="billing",datname="postgres"[^}]*\} 1$/m,
	'one dead letter');
like($body,
	qr/^ordering_oldest_gap_age_seconds\{consumer="billing",datname="postgres"[^}]*\} 36\d\d(\.\d+)?$/m,
	'the oldest gap is an hour old');
like($body,
	qr/^ordering_sequence_conflicts_total\{datname="postgres",[^}]*stream="ordering.outbox"\} 1$/m,
	'the refused number is counted');
like($body,
	qr/^ordering_outbox_oldest_unpublished_age_seconds\{datname="postgres"[^}]*\} 36\d\d(\.\d+)?$/m,
	'the relay lag is an hour');
like($body,
	qr/^ordering_stream_hot_resource_events_total\{datname="postgres",[^}]*resource="acct-1",[^}]*stream="ordering.outbox"\} 2$/m,
	'the hot resource of the stream');
foreach my $name (qw(ordering_events_dead_lettered_total ordering_events_skipped_total))
{
	like($body, qr/^# TYPE $name counter$/m, "$name is a counter");
}
unlike($body, qr/^pg_exporter_user_queries_load_error\{[^}]*\} 1$/m,
	'the queries file loaded without error');

$node->stop;
done_testing();
