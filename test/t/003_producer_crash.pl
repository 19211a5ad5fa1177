# Crash recovery of the producer side: concurrent producers are interrupted by
# an immediate shutdown and by kill -9 of a backend holding a counter row;
# after each restart every resource's outbox sequence is exactly 1..n and its
# counter equals n, ordering.check() finds nothing, and producing continues
# from there.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use OrderingWorkload;

my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ordering'
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');

my $script = PostgreSQL::Test::Utils::tempdir . '/emit.sql';
PostgreSQL::Test::Utils::append_to_file($script, q{
\set r random(1, 20)
BEGIN;
SELECT ordering.emit('r' || :r, 'e', '{}');
SELECT ordering.emit('r' || (:r % 7), 'e', '{}');
COMMIT;
});


# Start concurrent producers; returns their handle once they have committed
# at least 200 more events, and the number of events seen committed then.
sub start_producers
{
	my ($before) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		  '-c', '4', '-j', '2', '-T', '60', '-f', $script, 'postgres' ],
		'>', \$out, '2>', \$err);
	$node->poll_query_until('postgres',
		"SELECT count(*) > $before + 200 FROM ordering.outbox") or die 'no progress';
	return ($h, $node->safe_psql('postgres', 'SELECT count(*) FROM ordering.outbox'));
}

sub check_after_restart
{
	my ($what, $seen) = @_;
	is($node->safe_psql('postgres', $OrderingWorkload::producer_violations_sql), '',
		"$what: every resource is 1..n with its counter at n");
	my $total = $node->safe_psql('postgres', 'SELECT count(*) FROM ordering.outbox');
	cmp_ok($total, '>=', $seen, "$what: every event seen committed survived");
	OrderingWorkload::self_check($node, 'postgres', $what);
	my ($n, $next) = split /\|/, $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM ordering.outbox WHERE resource_id = 'r3'),
		       ordering.emit('r3', 'e', '{}')});
	is($next, $n + 1, "$what: producing continues after the last committed number");
	return $total + 1;    # with the event just emitted
}

my $total = 0;
for my $round (1 .. 3)
{
	my ($h, $seen) = start_producers($total);
	$node->stop('immediate');
	$h->kill_kill;
	$node->start;
	$total = check_after_restart("immediate shutdown $round", $seen);
}

# kill -9 of a backend in the middle of a transaction that holds counter rows
for my $round (1 .. 2)
{
	my ($h, $seen) = start_producers($total);
	my $victim = $node->background_psql('postgres');
	$victim->query_safe('BEGIN');
	$victim->query_safe(q{SELECT ordering.emit('r5', 'e', '{}')});
	my $pid = $victim->query_safe('SELECT pg_backend_pid()');
	my $offset = -s $node->logfile;
	kill 'KILL', $pid;
	# the postmaster resets every backend and recovers
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
	{
		local $SIG{PIPE} = 'IGNORE';
		$h->kill_kill;
		eval { $victim->quit };
	}
	$total = check_after_restart("kill -9 of a producer $round", $seen);
}

$node->stop;
done_testing();
