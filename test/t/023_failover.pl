# Failover-safe publishing: a relay that claims with replicated => true
# never publishes an event that a failover loses.
#
# A primary with an asynchronous streaming standby, producers (pgbench) and a
# relay (a procedure on the primary that publishes each claimed batch, over
# dblink, into table "published" of a third server: the broker).  Under
# load, the standby falls behind (its WAL receiver is stopped for a second,
# as a slow network or disk would make it), the primary is stopped
# with an immediate shutdown, the WAL the standby had received but not
# written is lost with its WAL receiver, and the standby is promoted and
# produces more events.  With the option, every (resource, seq) the relay
# published exists on the new primary with the same payload; without it,
# the same run loses published events.
#
# Then, on the promoted standby with a standby of its own: a replicated
# claim waits while that standby's WAL receiver is stopped and returns once
# it runs again; with a second standby stopped, the claim counts the
# connected one only, unless ordering.min_standbys = 2, which makes it wait
# for both; WAL streamed to pg_receivewal or to a logical replication
# subscriber does not count as a standby; with no standby a replicated claim
# refuses, a relay without the option publishes, and after a failover the
# check finds exactly those events lost, their numbers given to others; and
# on a standby the function refuses to run.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $resources = 20;

my $broker = PostgreSQL::Test::Cluster->new('broker');
$broker->init;
$broker->start;
$broker->safe_psql('postgres', q{
	CREATE TABLE published (resource_id text NOT NULL, seq bigint NOT NULL,
	                        payload jsonb NOT NULL)});

(my $broker_conn = $broker->connstr('postgres')) =~ s/'/''/g;

# A new primary with the extension and the relay, and its streaming standby.
sub new_pair
{
	my ($name) = @_;
	my $primary = PostgreSQL::Test::Cluster->new("primary_$name");
	# logical: a logical replication subscriber connects below
	$primary->init(allows_streaming => 'logical');
	# The standbys stream without a slot, and one of them is paused below
	# while the primary takes base backups: keep the WAL it has not yet
	# received (the standby that replaces this primary inherits the setting).
	$primary->append_conf('postgresql.conf', "wal_keep_size = '256MB'");
	$primary->start;
	$primary->safe_psql('postgres', qq{
		CREATE EXTENSION ordering;
		CREATE EXTENSION dblink;
		-- The relay: claim a batch, publish it to the broker (committed
		-- there before anything is marked here), mark it published, commit;
		-- forever, or until a claim finds nothing.
		CREATE PROCEDURE relay(replicated boolean, batch integer, forever boolean)
		LANGUAGE plpgsql AS \$\$
		DECLARE
		    ids bigint[];
		    vals text;
		BEGIN
		    PERFORM dblink_connect('broker', '$broker_conn');
		    LOOP
		        SELECT array_agg(c.id),
		               string_agg(format('(%L, %s, %L)', c.resource_id, c.seq, c.payload), ', ')
		          INTO ids, vals
		          FROM ordering.claim_unpublished(batch, replicated => replicated,
		                                          timeout => '60s') c;
		        IF ids IS NULL THEN
		            COMMIT;
		            EXIT WHEN NOT forever;
		            PERFORM pg_sleep(0.002);
		            CONTINUE;
		        END IF;
		        PERFORM dblink_exec('broker', 'INSERT INTO published VALUES ' || vals);
		        PERFORM ordering.mark_published(ids);
		        COMMIT;
		    END LOOP;
		    PERFORM dblink_disconnect('broker');
		END
		\$\$;
	});
	$primary->backup('b');
	my $standby = PostgreSQL::Test::Cluster->new("standby_$name");
	$standby->init_from_backup($primary, 'b', has_streaming => 1);
	# it comes back after the loss of its WAL receiver below
	$standby->append_conf('postgresql.conf', 'restart_after_crash = on');
	$standby->start;
	return ($primary, $standby);
}

my $produce = PostgreSQL::Test::Utils::tempdir . '/produce.sql';
PostgreSQL::Test::Utils::append_to_file($produce, qq{
\\set r random(1, $resources)
BEGIN;
SELECT ordering.emit('r' || :r, 'e', jsonb_build_object('c', :client_id, 't', random()));
SELECT ordering.emit('r' || ((:r * 7) % $resources + 1), 'e', jsonb_build_object('c', :client_id, 't', random()));
COMMIT;
});

# Start a program in the background, output kept for diagnostics.
sub start_bg
{
	my (@cmd) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start(\@cmd, '>', \$out, '2>', \$err);
	return { h => $h, out => \$out, err => \$err };
}

sub stop_bg
{
	local $SIG{PIPE} = 'IGNORE';
	foreach my $bg (@_)
	{
		eval { $bg->{h}->kill_kill; };
	}
}

# Two producers, 100 transactions (200 events) a second: a rate the relay
# keeps up with, so that it publishes what has just committed.
sub producers
{
	my ($node) = @_;
	return start_bg('pgbench', '-n', '-h', $node->host, '-p', $node->port,
		'-c', '2', '-j', '2', '-T', '300', '-R', '100', '-f', $produce, 'postgres');
}

sub relay
{
	my ($node, $replicated, $forever) = @_;
	return start_bg('psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', "CALL relay($replicated, 20, $forever)");
}

# The published events that the node does not have with the same payload:
# "resource/seq" of each, sorted.
sub lost_events
{
	my ($node) = @_;
	my %have;
	foreach my $line (split /\n/, $node->safe_psql('postgres',
		'SELECT resource_id, seq, payload FROM ordering.outbox'))
	{
		my ($r, $s, $p) = split /\|/, $line, 3;
		$have{"$r/$s"} = $p;
	}
	my @lost;
	foreach my $line (split /\n/, $broker->safe_psql('postgres',
		'SELECT resource_id, seq, payload FROM published'))
	{
		my ($r, $s, $p) = split /\|/, $line, 3;
		push @lost, "$r/$s" unless defined $have{"$r/$s"} && $have{"$r/$s"} eq $p;
	}
	return sort @lost;
}

# After a failover: one more event per resource, which takes the number of
# any event the new primary does not have.
sub produce_after_failover
{
	my ($node, $tag) = @_;
	$node->safe_psql('postgres', qq{
		SELECT ordering.emit('r' || i, 'e', jsonb_build_object('after', '$tag'))
		  FROM generate_series(1, $resources) i});
}

sub published_count
{
	return $broker->safe_psql('postgres', 'SELECT count(*) FROM published');
}

# The pid of the node's WAL receiver.
sub wal_receiver
{
	my ($node) = @_;
	my $pid = $node->safe_psql('postgres', 'SELECT pid FROM pg_stat_wal_receiver');
	die "no WAL receiver on " . $node->name unless $pid =~ /^\d+$/;
	return $pid;
}

# 1. Under load, the standby behind, an immediate stop of the primary, the
# standby promoted.  Returns the promoted standby, the number of events
# published and the list of those lost.
sub failover_under_load
{
	my ($name, $replicated) = @_;
	my ($primary, $standby) = new_pair($name);
	$broker->safe_psql('postgres', 'TRUNCATE published');
	my $load = producers($primary);
	my $relay = relay($primary, $replicated, 'true');
	$broker->poll_query_until('postgres', 'SELECT count(*) >= 400 FROM published')
	  or die 'the relay published too little: ' . ${ $relay->{err} };
	$primary->poll_query_until('postgres',
		'SELECT count(*) < 20 FROM ordering.outbox WHERE published_at IS NULL')
	  or die 'the relay does not keep up';
	my $receiver = wal_receiver($standby);
	my $before = published_count();
	kill 'STOP', $receiver;
	# a second, and without the option until the relay has published 50 more
	usleep(1_000_000);
	$broker->poll_query_until('postgres', "SELECT count(*) >= $before + 50 FROM published")
	  or die 'the relay published nothing new'
	  if $replicated eq 'false';
	$primary->stop('immediate');
	stop_bg($load, $relay);
	# what it had received but not written goes with it
	kill 'KILL', $receiver;
	$standby->poll_query_until('postgres', 'SELECT pg_is_in_recovery()')
	  or die 'the standby did not come back';
	$standby->promote;
	produce_after_failover($standby, 'first');
	return ($standby, published_count(), lost_events($standby));
}

my ($lost_node, $n, @lost) = failover_under_load('plain', 'false');
cmp_ok(scalar(@lost), '>', 0,
	"without the option: the failover lost " . scalar(@lost) . " of the $n events the relay published");
$lost_node->stop;

my ($primary2, $published, @lost2) = failover_under_load('replicated', 'true');
is(join(' ', @lost2), '',
	"replicated: all $published events published before the failover are on the new primary");
is( $primary2->safe_psql('postgres', q{
		SELECT count(*) FROM (SELECT resource_id FROM ordering.outbox
		 GROUP BY resource_id HAVING count(*) <> max(seq)) x}),
	'0', 'the new primary continued every sequence without a gap');

# The promoted standby is the primary now; give it a standby of its own.
$broker->safe_psql('postgres', 'TRUNCATE published');
$primary2->backup('b2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($primary2, 'b2', has_streaming => 1);
$standby2->start;
$primary2->wait_for_catchup($standby2);
# publish what is waiting, so that what follows starts from an empty queue
my $drain = relay($primary2, 'true', 'false');
$drain->{h}->finish or die 'relay: ' . ${ $drain->{err} };

# 2. The wait: a replicated claim waits while the standby's WAL receiver is
# stopped, and returns once it runs again.
my $receiver = wal_receiver($standby2);
kill 'STOP', $receiver;
$primary2->safe_psql('postgres', q{SELECT ordering.emit('w', 'e', '{"n": 1}')});
my ($ret, $out, $err) = $primary2->psql('postgres',
	q{SELECT count(*) FROM ordering.claim_unpublished(10, replicated => true, timeout => '300ms')});
like($err, qr/ERROR:  the standbys have not confirmed within 300 ms.*\n.*DETAIL:  1 standby is connected; the one furthest behind has flushed up to [0-9A-F\/]+, before [0-9A-F\/]+\./,
	'a standby that has not flushed the claimed rows: the claim fails after its timeout');
my $claim = start_bg('psql', '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $primary2->connstr('postgres'),
	'-c', q{SELECT count(*) FROM ordering.claim_unpublished(10, replicated => true, timeout => '5min')});
$primary2->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query LIKE '%replicated => true%' AND wait_event_type = 'Extension'
	   AND now() - query_start > '500ms'})
  or die 'the claim did not wait';
ok($claim->{h}->pumpable, 'the claim is still waiting after half a second');
kill 'CONT', $receiver;
$claim->{h}->finish;
is(${ $claim->{out} }, "1\n", 'once the WAL receiver runs again, the claim returns the row');

# 2b. Which standbys count: those connected.  With a second standby that
# is stopped, a replicated claim returns once the connected one has the
# rows; ordering.min_standbys = 2 makes it wait for both, and fail while
# one is stopped.
# (the row claimed above is done with)
$primary2->safe_psql('postgres', q{
	SELECT ordering.mark_published(array_agg(id)) FROM ordering.outbox WHERE published_at IS NULL});
$primary2->backup('b2b');
my $standby2b = PostgreSQL::Test::Cluster->new('standby2b');
$standby2b->init_from_backup($primary2, 'b2b', has_streaming => 1);
$standby2b->start;
$primary2->wait_for_catchup($standby2b);
$standby2b->stop('fast');
$primary2->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'})
  or die 'the stopped standby is still connected';
$primary2->safe_psql('postgres', q{SELECT ordering.emit('w2', 'e', '{"n": 2}')});
is( $primary2->safe_psql('postgres', q{
		SELECT count(*) FROM ordering.claim_unpublished(10, replicated => true, timeout => '60s')}),
	'1', 'two standbys, one stopped: the claim counts the connected one only');
($ret, $out, $err) = $primary2->psql('postgres', q{
	SET ordering.min_standbys = 2;
	SELECT count(*) FROM ordering.claim_unpublished(10, replicated => true, timeout => '300ms')});
like($err, qr/DETAIL:  1 standby is connected; ordering\.min_standbys requires 2\./,
	'with ordering.min_standbys = 2, the claim fails while one of the two is stopped');
$claim = start_bg('psql', '-X', '-Atq', '-v', 'ON_ERROR_STOP=1', '-d', $primary2->connstr('postgres'),
	'-c', 'SET ordering.min_standbys = 2',
	'-c', q{SELECT count(*) FROM ordering.claim_unpublished(10, replicated => true, timeout => '5min')});
$primary2->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_stat_activity
	 WHERE query LIKE '%replicated => true%' AND wait_event_type = 'Extension'})
  or die 'the claim did not wait';
$standby2b->start;
$claim->{h}->finish;
is(${ $claim->{out} }, "1\n", 'it returns once the second standby is back and has the rows');
$standby2b->stop('fast');
$primary2->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'})
  or die 'the stopped standby is still connected';

# 3. Clients that stream WAL but are no standby do not count: pg_receivewal
# and a logical replication subscription (on the broker).
my $recvdir = PostgreSQL::Test::Utils::tempdir;
$standby2->stop('fast');
my $receivewal = start_bg('pg_receivewal', '-D', $recvdir, '-d', $primary2->connstr('postgres'));
$primary2->safe_psql('postgres', q{
	CREATE TABLE pub (id integer PRIMARY KEY);
	CREATE PUBLICATION pub FOR TABLE pub});
$broker->safe_psql('postgres', 'CREATE TABLE pub (id integer PRIMARY KEY)');
(my $primary2_conn = $primary2->connstr('postgres')) =~ s/'/''/g;
$broker->safe_psql('postgres', "CREATE SUBSCRIPTION sub CONNECTION '$primary2_conn' PUBLICATION pub");
$primary2->safe_psql('postgres', 'INSERT INTO pub VALUES (1)');
$broker->poll_query_until('postgres', 'SELECT count(*) = 1 FROM pub')
  or die 'the subscription does not apply';
# both stream; the subscriber reports a replay position, as a standby does
$primary2->poll_query_until('postgres', q{
	SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'
	   AND (application_name <> 'sub' OR replay_lsn IS NOT NULL)})
  or die 'pg_receivewal and the subscription did not connect';
($ret, $out, $err) = $primary2->psql('postgres', q{SELECT ordering.wait_for_standbys('1s')});
like($err, qr/DETAIL:  No standby is connected\./,
	'pg_receivewal and a logical replication subscriber are no standbys');
$broker->safe_psql('postgres', 'DROP SUBSCRIPTION sub');
stop_bg($receivewal);

# 4. Without the option the check catches the loss.  The standby is stopped
# (above): these events reach no standby.
my $unreplicated = 7;
my @expected = sort split / /, $primary2->safe_psql('postgres', qq{
	SELECT string_agg('r' || i || '/' || ordering.emit('r' || i, 'e', jsonb_build_object('unreplicated', i)), ' ')
	  FROM generate_series(1, $unreplicated) i});
($ret, $out, $err) = $primary2->psql('postgres',
	q{SELECT count(*) FROM ordering.claim_unpublished(100, replicated => true, timeout => '200ms')});
like($err, qr/DETAIL:  No standby is connected\./, 'with no standby, a replicated claim refuses');
my $plain = relay($primary2, 'false', 'false');
$plain->{h}->finish or die 'relay: ' . ${ $plain->{err} };
is($broker->safe_psql('postgres', q{SELECT count(*) FROM published WHERE payload ? 'unreplicated'}),
	$unreplicated, 'a relay without the option published them');
$primary2->stop('immediate');
$standby2->start;
$standby2->promote;
produce_after_failover($standby2, 'second');
is(join(' ', lost_events($standby2)), join(' ', @expected),
	"without the option: the check finds the $unreplicated events published and then lost by the failover");
my $pairs = join(', ', map { my ($r, $n) = split m{/}; "('$r', $n)" } @expected);
is( $standby2->safe_psql('postgres', qq{
		SELECT count(*) FROM ordering.outbox
		 WHERE (resource_id, seq) IN ($pairs) AND payload->>'after' = 'second'}),
	$unreplicated, 'their numbers now belong to other events');

# 5. On a standby the function refuses.
my $standby3 = PostgreSQL::Test::Cluster->new('standby3');
$standby2->backup('b3');
$standby3->init_from_backup($standby2, 'b3', has_streaming => 1);
$standby3->start;
($ret, $out, $err) = $standby3->psql('postgres', q{SELECT ordering.wait_for_standbys('0')});
like($err, qr/ERROR:  recovery is in progress/, 'wait_for_standbys on a standby: recovery is in progress');

$standby3->stop;
$standby2->stop;
$broker->stop;
done_testing();
