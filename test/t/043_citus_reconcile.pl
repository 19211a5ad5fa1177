# Reconciliation of a distributed stream on a Citus cluster (a coordinator
# and two workers), one cluster for every case.  Skipped, with the reason
# printed, where the server's pkglibdir has no citus.so.
#
# A distributed outbox, public.rec_ev, holds 1 to 4 events of each of 200
# resources.  Two consumers miss the last events of the same ten resources
# (the last one of eight, the last two of one, the only one of three of
# them): "dc", distributed with ordering.distribute_consumer() on the
# cluster, and "lc", a consumer in a database of its own without Citus.
#
# 1. ordering.stream_summary() of the distributed stream, on the
#    coordinator and on a worker, is the summary of the outbox's rows
#    computed with plain SQL (200 resources), under a resource prefix too;
#    a counter row of the stream left in ordering.sequences (a table
#    attached before it was distributed) is not counted.
# 2. The buckets whose summaries differ from each consumer's are those of
#    the ten resources, and ordering.reconcile() names exactly those ten,
#    behind, with their positions and last numbers.
# 3. tools/ordering-reconcile names exactly those ten for each consumer and
#    counts 200 resources on the producer and 197 with a position.
# 4. A role with the producer set summarises the stream; without SELECT on
#    ordering.sequences it is refused (42501), as on one node, by the
#    summary and by the function that reads the counter table.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingCitus qw(sql);

OrderingCitus::skip_unless_citus();

my $tool = "$FindBin::RealBin/../../tools/ordering-reconcile";
my $buckets = 64;

my $cluster = OrderingCitus->new('citus_rec', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');


# ---------------------------------------------------------------------------
# The stream, its two consumers, and what they missed
# ---------------------------------------------------------------------------
sql($coord, q{
	SET citus.shard_count = 8;
	CREATE TABLE rec_ev (id bigserial, resource_id text NOT NULL, seq bigint NOT NULL,
	                     event_type text NOT NULL DEFAULT 'e',
	                     payload jsonb NOT NULL DEFAULT '{}',
	                     published_at timestamptz,
	                     PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('rec_ev', 'resource_id');
	SELECT ordering.attach('rec_ev');
	-- resource res-r gets 1 + r % 4 events
	INSERT INTO rec_ev (resource_id)
	SELECT 'res-' || r FROM generate_series(1, 200) r, generate_series(1, 1 + r % 4) k;

	CREATE TABLE rec_view (resource_id text PRIMARY KEY, seq bigint NOT NULL);
	SELECT create_distributed_table('rec_view', 'resource_id', colocate_with => 'rec_ev');
	SELECT ordering.distribute_consumer('dc', 'rec_view');
});
is(sql($coord, q{SELECT count(*), count(DISTINCT resource_id) FROM rec_ev}),
	'500|200', '500 events of 200 resources in the distributed outbox');

# resource => last seq, from the outbox's rows
my %last = map { split /\|/ } split /\n/, sql($coord,
	q{SELECT resource_id, max(seq) FROM rec_ev GROUP BY resource_id});

# Lost: the last event of eight resources (three of which have only that
# one: the consumers never hear of them), the last two of res-7.
my %lost = map { ("res-$_" => 1) } (23, 46, 69, 92, 115, 138, 161, 184, 200);
my %lost_from = map { ($_ => $last{$_}) } keys %lost;
$lost_from{'res-7'} = $last{'res-7'} - 1;
my @behind = sort keys %lost_from;
is(scalar(@behind), 10, 'ten resources lose their last events');
is(scalar(grep { $lost_from{$_} == 1 } @behind), 3,
	'three of them lose their only event');

my (@r, @s);
for my $row (split /\n/, sql($coord,
	q{SELECT resource_id, seq FROM rec_ev ORDER BY resource_id, seq}))
{
	my ($res, $seq) = split /\|/, $row;
	next if exists $lost_from{$res} && $seq >= $lost_from{$res};
	push @r, $res;
	push @s, $seq;
}
my $batch = sprintf(q{ARRAY[%s]::text[], ARRAY[%s]::bigint[]},
	join(',', map { "'$_'" } @r), join(',', @s));
is(sql($coord, "SELECT count(*) FILTER (WHERE applied) FROM ordering.apply_batch('dc', $batch)"),
	scalar(@r), 'the distributed consumer applied what reached it');

sql($coord, 'CREATE DATABASE billing');
sql($coord, 'CREATE EXTENSION ordering', 'billing');
is(sql($coord, "SELECT count(*) FILTER (WHERE applied) FROM ordering.apply_batch('lc', $batch)",
	'billing'), scalar(@r), 'the consumer of a database without Citus applied it too');

# ---------------------------------------------------------------------------
# 1. The producer's summary
# ---------------------------------------------------------------------------
my $expected_summary = sql($coord, qq{
	SELECT ordering_internal.resource_bucket(resource_id, $buckets) AS b, count(*), sum(last),
	       bit_xor(ordering_internal.resource_fingerprint(resource_id, last))
	  FROM (SELECT resource_id, max(seq) AS last FROM rec_ev GROUP BY resource_id) x
	 GROUP BY b ORDER BY b});
for my $node ([ 'the coordinator', $coord ], [ 'a worker', $w1 ])
{
	is(sql($node->[1], qq{SELECT * FROM ordering.stream_summary('public.rec_ev', $buckets)}),
		$expected_summary, "stream_summary() of the distributed stream on $node->[0]");
}
is(sql($coord, qq{SELECT sum(resources) FROM ordering.stream_summary('public.rec_ev', $buckets)}),
	'200', '... 200 resources');
is(sql($w2, q{SELECT sum(resources) FROM ordering.stream_summary('public.rec_ev', 16, 'res-1')}),
	'111', '... 111 of them under the prefix res-1');

# a counter of the stream in ordering.sequences, as a table attached before
# it was distributed leaves, is not the stream's
sql($coord, q{INSERT INTO ordering.sequences VALUES ('public.rec_ev', 'res-1', 99),
                                                    ('public.rec_ev', 'old-1', 5)});
is(sql($coord, qq{SELECT * FROM ordering.stream_summary('public.rec_ev', $buckets)}),
	$expected_summary, 'a counter of the stream left in ordering.sequences is not counted');
sql($coord, q{DELETE FROM ordering.sequences WHERE stream = 'public.rec_ev'});

# ---------------------------------------------------------------------------
# 2. Differing buckets and reconcile() by hand
# ---------------------------------------------------------------------------
my $behind_buckets = join(',', sort { $a <=> $b } split /\n/, sql($coord, sprintf(
	q{SELECT DISTINCT ordering_internal.resource_bucket(r, %d) FROM unnest(ARRAY[%s]) r},
	$buckets, join(',', map { "'$_'" } @behind))));
my $expected_rows = join("\n", map {
	sprintf('%s|%d|%d|behind', $_, $lost_from{$_} - 1, $last{$_}) } @behind);

for my $c ([ 'dc', 'postgres', 'the distributed consumer' ],
	[ 'lc', 'billing', 'the consumer without Citus' ])
{
	my ($consumer, $db, $name) = @$c;
	my %prod = map { my @f = split /\|/; ($f[0] => join('|', @f[1 .. 3])) }
	  split /\n/, sql($coord, qq{SELECT * FROM ordering.stream_summary('public.rec_ev', $buckets)});
	my %cons = map { my @f = split /\|/; ($f[0] => join('|', @f[1 .. 3])) }
	  split /\n/, sql($coord, qq{SELECT * FROM ordering.consumer_summary('$consumer', $buckets)}, $db);
	my $differing = join(',', sort { $a <=> $b } grep {
		($prod{$_} // '') ne ($cons{$_} // '') } keys %{ { %prod, %cons } });
	is($differing, $behind_buckets, "$name: the buckets that differ are those of the ten");

	my $state = sql($coord, qq{
		SELECT coalesce(jsonb_agg(s), '[]')
		  FROM ordering.consumer_state('$consumer', $buckets, '{$differing}') s}, $db);
	is(sql($coord, qq{
		SELECT resource_id, position, last_seq, status
		  FROM ordering.reconcile('$state', $buckets, '{$differing}', stream => 'public.rec_ev')
		 WHERE status <> 'in_sync' ORDER BY resource_id}),
		$expected_rows, "$name: reconcile() names exactly the ten, behind");
	is(sql($coord, qq{
		SELECT count(*) FILTER (WHERE status = 'in_sync'),
		       count(*) FILTER (WHERE republished IS NOT NULL)
		  FROM ordering.reconcile('$state', $buckets, '{$differing}', stream => 'public.rec_ev')}),
		sql($coord, qq{
		SELECT count(*) - 10 || '|0' FROM (SELECT DISTINCT resource_id FROM rec_ev) x
		 WHERE ordering_internal.resource_bucket(resource_id, $buckets) = ANY ('{$differing}')}),
		"$name: the other resources of those buckets are in sync; nothing is republished from a table the extension does not relay");
}

# ---------------------------------------------------------------------------
# 3. tools/ordering-reconcile
# ---------------------------------------------------------------------------
sub run_tool
{
	my ($consumer, $db, @opt) = @_;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $tool, '--producer', $coord->connstr('postgres'),
		'--consumer', $coord->connstr($db), '--consumer-name', $consumer,
		'--stream', 'public.rec_ev', '--json', @opt ], '>', \$out, '2>', \$err);
	ok($ok, "ordering-reconcile $consumer @opt runs") or diag($err);
	return decode_json($out);
}
for my $c ([ 'dc', 'postgres' ], [ 'lc', 'billing' ])
{
	for my $opt ([], [ '--buckets', '16' ])
	{
		my $o = run_tool(@$c, @$opt);
		my $what = "ordering-reconcile of $c->[0] @$opt";
		is("$o->{producer_resources}/$o->{consumer_resources}", '200/197',
			"$what: 200 resources on the producer, 197 with a position");
		is(join(',', map { "$_->{resource_id}:$_->{status}" } @{ $o->{resources} }),
			join(',', map { "$_:behind" } @behind), "$what: names exactly the ten, behind");
		is("$o->{behind}/$o->{unknown}/$o->{ahead}", '10/0/0', "$what: 10 behind, nothing else");
	}
}

# ---------------------------------------------------------------------------
# 4. Privileges, as on one node
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE ROLE rec_producer;
	SELECT ordering.grant_producer('rec_producer');
});
is(sql($coord, qq{SET ROLE rec_producer;
	SELECT * FROM ordering.stream_summary('public.rec_ev', $buckets)}),
	$expected_summary, 'a role with the producer set summarises the distributed stream');
sql($coord, q{REVOKE SELECT ON ordering.sequences FROM rec_producer});
my ($ret, $out, $err) = $coord->psql('postgres', qq{\\set VERBOSITY verbose
	SET ROLE rec_producer;
	SELECT * FROM ordering.stream_summary('public.rec_ev', $buckets)});
like($err, qr/ERROR:\s+42501/,
	'without SELECT on ordering.sequences it is refused (42501), as on one node');
# the function that reads the counter table as its owner checks it itself
($ret, $out, $err) = $coord->psql('postgres', q{\set VERBOSITY verbose
	SET ROLE rec_producer;
	SELECT count(*) FROM ordering_internal.distributed_stream_resources('public.rec_ev', NULL)});
like($err, qr/ERROR:\s+42501:\s+permission denied for table sequences/,
	'... and so is its direct call of the function that reads the counter table');

$cluster->stop;
done_testing();
