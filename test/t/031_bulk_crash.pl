# Crash recovery in the middle of bulk statements, whose counters are held
# in memory and written when the statement ends (src/producer/held_counters.c):
# an INSERT ... SELECT and a COPY are stopped half-way by kill -9 of their
# backend and by an immediate shutdown, while another producer waits for a
# resource they hold.  After each restart nothing of the interrupted
# statement is left, every committed event is there, every resource of the
# outbox is exactly 1..n with its counter at n, ordering.check() finds
# nothing, and producing continues after the last committed number.  Bulk
# statements committed just before the crash survive it whole.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use OrderingWorkload;

my $node = PostgreSQL::Test::Cluster->new('bulk_crash');
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'ordering'
restart_after_crash = on
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');

# A bulk statement of n rows over 50 resources, one event of r7 first.
sub bulk_insert
{
	my ($n, $nap_at) = @_;
	my $nap = defined $nap_at
	  ? "AND (g <> $nap_at OR pg_sleep(600) IS NULL)"
	  : '';
	return qq{INSERT INTO ordering.outbox (resource_id, event_type, payload)
	          SELECT 'r' || (g % 50), 'bulk', jsonb_build_object('g', g)
	            FROM generate_series(0, $n - 1) g WHERE true $nap};
}

# A COPY of n rows over 50 resources from a program, which then sleeps if
# asked: COPY reads its input 64 kB at a time, so the rows of the chunks
# read are stored and the statement waits for the next chunk.
my $copy_program = PostgreSQL::Test::Utils::tempdir . '/rows.sh';
PostgreSQL::Test::Utils::append_to_file($copy_program, q{
i=0
while [ $i -lt "$1" ]; do
	printf 'r%d\tcopy\t{}\n' $((i % 50))
	i=$((i + 1))
done
[ "$2" = sleep ] && sleep 600
exit 0
});
chmod 0755, $copy_program;

sub bulk_copy
{
	my ($n, $sleep) = @_;
	$sleep = $sleep ? 'sleep' : '';
	return qq{COPY ordering.outbox (resource_id, event_type, payload)
	          FROM PROGRAM 'sh $copy_program $n $sleep'};
}

sub events { return $node->safe_psql('postgres', 'SELECT count(*) FROM ordering.outbox'); }

sub check_after_restart
{
	my ($what, $committed) = @_;
	is($node->safe_psql('postgres', $OrderingWorkload::producer_violations_sql),
		'', "$what: every resource is 1..n with its counter at n");
	is(events(), $committed, "$what: the committed events are there, none of the interrupted statement");
	OrderingWorkload::self_check($node, 'postgres', $what);
	my ($n, $next) = split /\|/, $node->safe_psql('postgres', q{
		SELECT (SELECT count(*) FROM ordering.outbox WHERE resource_id = 'r7'),
		       ordering.emit('r7', 'e', '{}')});
	is($next, $n + 1, "$what: producing continues after the last committed number");
	return $committed + 1;
}

# Start the statement in a session of its own, and wait until it has
# stored rows and sleeps: in its select list (wait event PgSleep), or, for
# COPY, reading its program, which PostgreSQL 15 shows with no wait event:
# there, until pg_stat_progress_copy counts the rows of the chunks read.
sub start_interrupted
{
	my ($sql, $paused) = @_;
	my $victim = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $victim->query_safe('SELECT pg_backend_pid()');
	$victim->query_until(qr/started/, qq{\\echo started\n$sql;\n});
	$paused =~ s/PID/$pid/g;
	$node->poll_query_until('postgres', $paused)
	  or die "the bulk statement did not reach its pause";
	return ($victim, $pid);
}

my $sleeping = q{SELECT wait_event = 'PgSleep' FROM pg_stat_activity WHERE pid = PID};
# 20,000 rows of at most 12 bytes: 3 full 64 kB chunks are read, the rest
# waits for the program's end
my $copied = q{SELECT tuples_processed >= 10000 FROM pg_stat_progress_copy WHERE pid = PID};

# Another producer of r7, which waits for the interrupted statement's lock.
sub start_waiter
{
	my $waiter = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $waiter->query_safe('SELECT pg_backend_pid()');
	$waiter->query_until(qr/started/,
		qq{\\echo started\nSELECT ordering.emit('r7', 'waiter', '{}');\n});
	$node->poll_query_until('postgres', qq{
		SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = $pid})
	  or die "the other producer did not wait";
	return $waiter;
}

sub quit_all
{
	local $SIG{PIPE} = 'IGNORE';
	eval { $_->quit } for @_;
	return;
}

my $committed = 0;
for my $round (1 .. 2)
{
	for my $how ('kill -9', 'immediate shutdown')
	{
		for my $kind ('INSERT ... SELECT', 'COPY')
		{
			my $what = "$kind, $how, round $round";

			# committed bulk work, the last just before the crash
			$node->safe_psql('postgres', bulk_insert(2000));
			$node->safe_psql('postgres', bulk_copy(2000));
			$committed += 4000;
			my ($victim, $pid) = $kind eq 'COPY'
			  ? start_interrupted(bulk_copy(20000, 1), $copied)
			  : start_interrupted(bulk_insert(20000, 15000), $sleeping);
			my $waiter = start_waiter();

			if ($how eq 'kill -9')
			{
				my $offset = -s $node->logfile;
				# the backend's process group: a COPY's program (which
				# holds the client's socket) dies with it, as the
				# postmaster's own signals to a backend make it
				kill '-KILL', $pid;
				$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
				$node->wait_for_log(qr/database system is ready to accept connections/, $offset);
			}
			else
			{
				$node->stop('immediate');
				$node->start;
			}
			quit_all($victim, $waiter);
			$committed = check_after_restart($what, $committed);
		}
	}
}

# A bulk statement that commits while another producer waits for it: the
# other one continues after its last number, and a crash right after both
# commits keeps everything.
my $waiting = $node->background_psql('postgres', on_error_stop => 0);
$waiting->query_safe('BEGIN');
$waiting->query_safe(bulk_insert(1000));
my $waiter = start_waiter();
$waiting->query_safe('COMMIT');
$waiter->query_safe('SELECT 1');
$committed += 1001;
$node->stop('immediate');
$node->start;
quit_all($waiting, $waiter);
check_after_restart('commit, then immediate shutdown', $committed);

$node->stop;
done_testing();
