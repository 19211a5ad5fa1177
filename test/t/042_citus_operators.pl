# What the people who run a Citus cluster meet, on a coordinator and two
# workers, one cluster for every case.  Skipped, with the reason printed,
# where the server's pkglibdir has no citus.so.
#
# 1. Bad input as on one node: next_sequence() of a distributed stream
#    refuses a resource id over 1,024 bytes (22023) on the coordinator and
#    on a worker, and leaves no counter behind; attach() on a worker of a
#    table attached on the coordinator says to run it on the coordinator
#    (0A000), not that a restore left its triggers.
# 2. A consumer that is not distributed, called in a query over a
#    distributed table (which Citus runs on the workers), is refused
#    (0A000), in its single and batch forms, and writes nothing on any
#    node; called in a statement of its own, on the coordinator or on a
#    worker, it works.
# 3. Statistics of transactions prepared for two-phase commit: what Citus
#    commits in two phases (a transaction on two workers, a multi-row
#    INSERT, an INSERT ... SELECT) is counted; on one node, PREPARE
#    TRANSACTION, a restart, then COMMIT PREPARED counts and ROLLBACK
#    PREPARED does not.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingCitus qw(sql fails);

OrderingCitus::skip_unless_citus();

my $cluster = OrderingCitus->new('citus_ops', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');

sql($coord, q{
	SET citus.shard_count = 4;
	CREATE TABLE events (id bigserial, resource_id text NOT NULL, seq bigint,
	                     PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('events', 'resource_id');
	SELECT ordering.attach('events');
});

# ---------------------------------------------------------------------------
# 1. Bad input as on one node
# ---------------------------------------------------------------------------
my $counters = sql($coord,
	q{SELECT ordering_internal.distributed_counters('public.events')});
for my $len (2000, 5000)
{
	for my $node ([ 'the coordinator', $coord ], [ 'a worker', $w1 ])
	{
		fails($node->[1],
			qq{SELECT ordering.next_sequence('public.events', repeat('x', $len))},
			'22023', qr/resource_id is too long \($len bytes, at most 1024\)/,
			"next_sequence() of a distributed stream on $node->[0], a $len-byte resource id");
	}
}
is(sql($coord, qq{SELECT count(*) FROM $counters WHERE octet_length(resource_id) > 1024}),
	'0', 'no counter of a too long resource id was made');
is(sql($w2, q{SELECT ordering.next_sequence('public.events', repeat('y', 1024))}),
	'1', 'next_sequence() of a distributed stream takes 1,024 bytes');

my $err = fails($w1, q{SELECT ordering.attach('events')}, '0A000',
	qr/must run on the coordinator/,
	'attach() on a worker of a table attached on the coordinator');
unlike($err, qr/restore/, '... and blames no restore');
fails($coord, q{SELECT ordering.attach('events')}, '42710',
	qr/is already attached/, 'attach() on the coordinator of an attached table');

# ---------------------------------------------------------------------------
# 2. A consumer that is not distributed, called where Citus carries a query
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE TABLE feed (resource_id text NOT NULL, seq bigint NOT NULL);
	SELECT create_distributed_table('feed', 'resource_id', colocate_with => 'events');
	INSERT INTO feed SELECT 'r' || i, 1 FROM generate_series(1, 20) i;
});
is(sql($coord, q{
	SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_shard s USING (shardid)
	 WHERE s.logicalrelid = 'feed'::regclass AND p.groupid = 0}),
	'0', 'the coordinator holds no shard of the table: a query over it runs on the workers');

my %calls = (
	'apply_if_newer()' =>
	  q{SELECT ordering.apply_if_newer('pdc', resource_id, seq) FROM feed},
	'deliver()' =>
	  q{SELECT ordering.deliver('pdc', resource_id, seq, '{}') FROM feed},
	'position()' =>
	  q{SELECT ordering.position('pdc', resource_id) FROM feed},
	'deliver_batch()' => q{
	SELECT ordering.deliver_batch('pdc', ARRAY[resource_id], ARRAY[seq], ARRAY['{}'::jsonb]) FROM feed});
for my $call (sort keys %calls)
{
	fails($coord, $calls{$call}, '0A000',
		qr/a call of consumer "pdc" cannot be made from a query that Citus runs on another node/,
		"a local consumer's $call in a query over a distributed table");
}
$cluster->each_node(sub {
	my ($node) = @_;
	is(sql($node, q{SELECT count(*) FROM ordering.positions WHERE consumer = 'pdc'})
		  . '/' . sql($node, q{SELECT count(*) FROM ordering.parked WHERE consumer = 'pdc'}),
		'0/0', 'no position or parked event of the consumer on ' . $node->name);
});

# in a statement of its own, where the application calls it
is(sql($coord, q{SELECT ordering.apply_if_newer('pdc', 'r1', 1)}), 't',
	'the local consumer on the coordinator');
is(sql($w1, q{SELECT seq FROM ordering.deliver('pdc', 'r1', 1, '{}')}), '1',
	'a local consumer of a worker, called on the worker');
is(sql($coord, q{SELECT ordering.position('pdc', 'r1')}), '1',
	'each node keeps its own local consumer');
# a distributed table's rows fed to it on the coordinator: read first, by a
# CTE that Citus runs on its own, then the consumer in the local query
is(sql($coord, q{
	WITH f AS MATERIALIZED (SELECT resource_id, seq FROM feed WHERE resource_id <> 'r1')
	SELECT count(*) FILTER (WHERE ordering.apply_if_newer('pdc', f.resource_id, f.seq)) FROM f}),
	'19', 'rows of a distributed table fed to the consumer on the coordinator');

# ---------------------------------------------------------------------------
# 3. Statistics of transactions prepared for two-phase commit
# ---------------------------------------------------------------------------
# The numbers a stream assigned, added up over the nodes.
sub assigned
{
	my ($stream) = @_;
	my $sum = 0;
	$cluster->each_node(sub {
		$sum += sql($_[0], qq{
			SELECT coalesce(sum(sequences_assigned), 0) FROM ordering.stream_stats
			 WHERE stream = '$stream'});
	});
	return $sum;
}

sql($coord, q{
	CREATE TABLE tx_events (id bigserial, resource_id text NOT NULL, seq bigint,
	                        PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('tx_events', 'resource_id', shard_count => 4);
	SELECT ordering.attach('tx_events');
});
# two resources whose shards are on different workers
my ($res_a, $res_b) = split /\n/, sql($coord, q{
	WITH r AS (SELECT 'tx-' || i AS resource_id,
	                  (SELECT p.groupid FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	                    WHERE s.logicalrelid = 'tx_events'::regclass
	                      AND s.shardid = get_shard_id_for_distribution_column('tx_events', 'tx-' || i)) AS g
	             FROM generate_series(1, 100) i)
	SELECT (SELECT resource_id FROM r WHERE g = (SELECT min(g) FROM r) LIMIT 1)
	UNION ALL
	SELECT (SELECT resource_id FROM r WHERE g = (SELECT max(g) FROM r) LIMIT 1)});
sql($coord, qq{
	BEGIN;
	INSERT INTO tx_events (resource_id) VALUES ('$res_a');
	INSERT INTO tx_events (resource_id) VALUES ('$res_b');
	COMMIT;
	INSERT INTO tx_events (resource_id) VALUES ('$res_a'), ('$res_b'), ('$res_a');
	INSERT INTO tx_events (resource_id) SELECT 'bulk-' || (i % 97) FROM generate_series(1, 1000) i;
});
is(assigned('public.tx_events'), sql($coord, q{SELECT count(*) FROM tx_events}),
	'statistics count the numbers of transactions Citus commits in two phases: '
	  . 'one on two workers, a multi-row INSERT, an INSERT ... SELECT of 1,000 rows');

# On one node: PREPARE TRANSACTION, a restart, then COMMIT PREPARED counts,
# ROLLBACK PREPARED does not; producer and consumer counts alike.
sql($w1, q{
	CREATE TABLE local_ev (id bigserial PRIMARY KEY, resource_id text NOT NULL, seq bigint);
	SELECT ordering.attach('local_ev');
	BEGIN;
	INSERT INTO local_ev (resource_id) VALUES ('a'), ('a'), ('b');
	SELECT ordering.apply_if_newer('prep_c', 'a', 1);
	PREPARE TRANSACTION 'ordering_kept';
	BEGIN;
	INSERT INTO local_ev (resource_id) VALUES ('c');
	SELECT ordering.apply_if_newer('prep_c', 'c', 1);
	PREPARE TRANSACTION 'ordering_dropped';
});
is(sql($w1, q{SELECT count(*) FROM ordering.stream_stats WHERE stream = 'public.local_ev'}),
	'0', 'a prepared transaction is not counted before it commits');
$w1->restart;
sql($w1, q{COMMIT PREPARED 'ordering_kept'});
sql($w1, q{ROLLBACK PREPARED 'ordering_dropped'});
is(sql($w1, q{
	SELECT (SELECT sequences_assigned FROM ordering.stream_stats WHERE stream = 'public.local_ev')
	       || '/' || (SELECT events_applied FROM ordering.stats WHERE consumer = 'prep_c')}),
	'3/1', 'COMMIT PREPARED after a restart counts the prepared transaction, ROLLBACK PREPARED does not');
is(sql($w1, q{SELECT count(*) FROM pg_ls_dir('pg_stat') f WHERE f LIKE 'ordering_prepared_%'}),
	'0', 'nothing is left of the prepared transactions');

$cluster->stop;
done_testing();
