# What the people who run a Citus cluster meet, on a coordinator and two
# workers, one cluster for every case.  Skipped, with the reason printed,
# where the server's pkglibdir has no citus.so.
#
# 1. Bad input as on one node: next_sequence() of a distributed stream
#    refuses a resource id over 1,024 bytes (22023) on the coordinator and
#    on a worker, and leaves no counter behind; attach() on a worker of a
#    table attached on the coordinator says to run it on the coordinator
#    (0A000), not that a restore left its triggers.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingCitus;

OrderingCitus::skip_unless_citus();

my $cluster = OrderingCitus->new('citus_ops', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');

sub sql
{
	my ($node, $query) = @_;
	return $node->safe_psql('postgres', $query);
}

# Run a statement that must fail; returns its stderr.
sub fails
{
	my ($node, $query, $sqlstate, $pattern, $name) = @_;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$query", on_error_stop => 1);
	isnt($ret, 0, "$name: fails");
	like($err, qr/ERROR:\s+$sqlstate/, "$name: SQLSTATE $sqlstate");
	like($err, $pattern, "$name: says why") if $pattern;
	return $err;
}

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

$cluster->stop;
done_testing();
