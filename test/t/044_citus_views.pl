# What an operator sees on the coordinator of a cluster: the state of a
# consumer distributed with ordering.distribute_consumer(), whose shards
# live on the workers, through the views, functions and metrics of one
# node.  Skipped, with the reason printed, where the server's pkglibdir has
# no citus.so.
#
# A distributed consumer "dc" has 3 dead letters and 5 parked events on the
# workers: 3 events after a gap (an hour old) and 2 events parked behind a
# dead letter (two hours old: no gap).  A consumer that is not distributed
# ("lc") has a dead letter on the coordinator.  On the coordinator:
#
# 1. ordering.dead_letters lists both consumers' dead letters, with the
#    events parked behind each; ordering.open_gaps lists dc's gap;
#    ordering.stats and ordering.metrics() give dc's gauges (5 parked, 3
#    dead letters, the gap's age, not the dead letter's); a sweep writes no
#    request of dc into ordering.gap_requests and check() stays clean;
# 2. the workers give no gauge of dc (Prometheus scrapes every node: nothing
#    is counted twice);
# 3. the alert expressions of monitoring/rules.yml over the samples of every
#    node (promtool test rules, where promtool is installed): dead letters
#    and an unresolved gap of dc;
# 4. the roles of the monitoring and consumer sets read what they read on
#    one node; a role without them is refused.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingCitus qw(sql);

OrderingCitus::skip_unless_citus();

my $cluster = OrderingCitus->new('citus_views', workers => 2);
my $coord = $cluster->coordinator;
my @workers = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');


sql($coord, q{
	CREATE TABLE acct (resource_id text PRIMARY KEY, v bigint);
	SELECT create_distributed_table('acct', 'resource_id', shard_count => 4);
	SELECT ordering.distribute_consumer('dc', 'acct');
});
my $tag = sql($coord,
	q{SELECT tag FROM ordering_internal.distributed_consumers WHERE consumer = 'dc'});

# dead letters of d1, d2, d3; d1 has two events parked behind its dead
# letter; g1 waits for 1 and 2 with three events parked
sql($coord, q{
	SELECT ordering.dead_letter('dc', 'd1', 1, '{"n": 1}', 'cannot be applied');
	SELECT ordering.dead_letter('dc', 'd2', 1, '{"n": 1}', 'cannot be applied');
	SELECT ordering.dead_letter('dc', 'd3', 1, '{"n": 1}', 'cannot be applied');
	SELECT count(*) FROM ordering.deliver('dc', 'd1', 2, '{"n": 2}');
	SELECT count(*) FROM ordering.deliver('dc', 'd1', 3, '{"n": 3}');
	SELECT count(*) FROM ordering.deliver('dc', 'g1', 3, '{"n": 3}');
	SELECT count(*) FROM ordering.deliver('dc', 'g1', 4, '{"n": 4}');
	SELECT count(*) FROM ordering.deliver('dc', 'g1', 5, '{"n": 5}');
	SELECT ordering.dead_letter('lc', 'x', 1, '{"n": 1}', 'local poison');
});
sql($coord, qq{
	UPDATE ordering_internal.${tag}_parked
	   SET parked_at = now() - CASE WHEN resource_id = 'g1' THEN interval '1 hour'
	                                ELSE interval '2 hours' END;
});
is(sql($coord, qq{
	WITH r AS MATERIALIZED (
	    SELECT resource_id FROM ordering_internal.${tag}_parked
	    UNION SELECT resource_id FROM ordering_internal.${tag}_dead_letters)
	SELECT count(*), count(*) FILTER (WHERE groupid = 0)
	  FROM r JOIN pg_dist_placement p
	    ON p.shardid = get_shard_id_for_distribution_column('acct', r.resource_id)}),
	'4|0', 'the state of dc lives on the workers');
is(sql($coord, q{SELECT count(*) FROM ordering.parked WHERE consumer = 'dc'}),
	'0', 'ordering.parked, the table of the consumers that are not distributed, has none of it');

# ---------------------------------------------------------------------------
# 1. The views, functions and metrics on the coordinator
# ---------------------------------------------------------------------------
is(sql($coord, q{
	SELECT string_agg(format('%s %s %s %s %s %s', consumer, resource_id, seq,
	                         parked_behind, message, attempts), E'\n'
	                  ORDER BY consumer, resource_id)
	  FROM ordering.dead_letters}),
	"dc d1 1 2 cannot be applied 1\n"
	  . "dc d2 1 0 cannot be applied 1\n"
	  . "dc d3 1 0 cannot be applied 1\n"
	  . "lc x 1 0 local poison 1",
	'ordering.dead_letters lists the dead letters of the distributed consumer and of the local one');
is(sql($coord, q{
	SELECT string_agg(format('%s %s %s..%s %s %s', consumer, resource_id, missing_from,
	                         missing_to, parked_count,
	                         now() - first_parked_at > interval '59 minutes'), E'\n'
	                  ORDER BY consumer, resource_id)
	  FROM ordering.open_gaps}),
	'dc g1 1..2 3 t',
	'ordering.open_gaps lists the gap of the distributed consumer, not the events behind its dead letter');
is(sql($coord, q{
	SELECT format('%s %s %s', parked_current, dead_letters_current,
	              oldest_gap_age BETWEEN interval '59 minutes' AND interval '90 minutes')
	  FROM ordering.stats WHERE consumer = 'dc'}),
	'5 3 t', 'ordering.stats: 5 parked, 3 dead letters, the age of the gap (not of the dead letter)');
is(sql($coord, q{
	SELECT format('%s %s %s', parked_current, dead_letters_current, oldest_gap_age IS NULL)
	  FROM ordering.stats WHERE consumer = 'lc'}),
	'0 1 t', 'ordering.stats: the local consumer as before');

my %metrics;
for my $line (split /\n/, sql($coord, 'SELECT ordering.metrics()'))
{
	$metrics{$1} = $2 if $line =~ /^(\S+\{consumer="dc"\}) (\S+)$/;
}
is($metrics{'ordering_events_parked_current{consumer="dc"}'}, 5,
	'metrics(): ordering_events_parked_current of dc');
is($metrics{'ordering_dead_letters_current{consumer="dc"}'}, 3,
	'metrics(): ordering_dead_letters_current of dc');
my $age = $metrics{'ordering_oldest_gap_age_seconds{consumer="dc"}'} // 0;
ok($age > 3500 && $age < 5400, "metrics(): ordering_oldest_gap_age_seconds of dc is the gap's ($age)");

# the coordinator's sweep requests the gap on the worker that holds it,
# never in its own ordering.gap_requests
is(sql($coord, q{
	SELECT string_agg(consumer || ' ' || resource_id, ',') FROM ordering.sweep_gaps()}),
	'dc g1', 'the sweep requests the gap of dc');
is(sql($coord, qq{
	SELECT (SELECT count(*) FROM ordering.gap_requests)
	       || ' ' || (SELECT count(*) FROM ordering_internal.${tag}_gap_requests)}),
	'0 1', '... in the tables of dc only');
is(sql($coord, q{SELECT string_agg(kind || ': ' || detail, E'\n') FROM ordering.check()}),
	'', 'check() is clean (its gauges of ordering.stats agree with the tables of dc)');

# ---------------------------------------------------------------------------
# 2. The workers count no gauge of the distributed consumer
# ---------------------------------------------------------------------------
for my $i (0 .. $#workers)
{
	is(sql($workers[$i], q{
		SELECT format('%s %s %s', COALESCE(sum(parked_current), 0),
		              COALESCE(sum(dead_letters_current), 0), count(oldest_gap_age))
		  FROM ordering.stats WHERE consumer = 'dc'}),
		'0 0 0', 'worker ' . ($i + 1) . ': no gauge of dc (the coordinator gives them)');
	is(sql($workers[$i], q{
		SELECT (SELECT count(*) FROM ordering.dead_letters WHERE consumer = 'dc')
		       + (SELECT count(*) FROM ordering.open_gaps WHERE consumer = 'dc')}),
		'0', 'worker ' . ($i + 1) . ': no dead letter or gap of dc in its views');
}

# ---------------------------------------------------------------------------
# 3. The alerts of monitoring/rules.yml, over what every node serves
# ---------------------------------------------------------------------------
my $rules = "$FindBin::RealBin/../../monitoring/rules.yml";
my ($promtool) = grep { -x } map { "$_/promtool" } split(/:/, $ENV{PATH} // ''), '/usr/bin';
$promtool //= '';
SKIP:
{
	skip 'promtool is not installed', 2 if $promtool eq '';

	# the expression of an alert, a one-line "expr:" of rules.yml
	open(my $rfh, '<', $rules) or die "$rules: $!";
	my $text = do { local $/; <$rfh> };
	close $rfh;
	my %expr;
	$expr{$1} = $2 while $text =~ /- alert: (\w+)\n\s+expr: ([^|\n][^\n]*)\n/g;

	# each node's gauges, as Prometheus would store them (the exporter adds
	# datname; every node is an instance of its own)
	my @series;
	my $gap_age;
	my @nodes = $cluster->nodes;
	for my $n (0 .. $#nodes)
	{
		for my $line (split /\n/, sql($nodes[$n], 'SELECT ordering.metrics()'))
		{
			next unless $line =~
			  /^(ordering_(?:dead_letters_current|oldest_gap_age_seconds|events_parked_current))\{(.*)\} (\S+)$/;
			push @series, "      - series: '$1\{datname=\"postgres\",instance=\"node$n\",$2\}'\n"
			  . "        values: '$3+0x20'\n";
			$gap_age = $3
			  if $1 eq 'ordering_oldest_gap_age_seconds' && $2 eq 'consumer="dc"' && $n == 0;
		}
	}
	my $dir = PostgreSQL::Test::Utils::tempdir;
	open(my $fh, '>', "$dir/cluster_test.yml") or die;
	print $fh <<"EOF";
rule_files:
  - $rules
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
@{[ join '', @series ]}
    promql_expr_test:
      - expr: '$expr{OrderingDeadLetters}'
        eval_time: 10m
        exp_samples:
          - labels: '{consumer="dc",datname="postgres"}'
            value: 3
          - labels: '{consumer="lc",datname="postgres"}'
            value: 1
      - expr: '$expr{OrderingGapUnresolved}'
        eval_time: 10m
        exp_samples:
          - labels: '{consumer="dc",datname="postgres"}'
            value: @{[ $gap_age // 0 ]}
EOF
	close $fh;
	ok(defined $expr{OrderingDeadLetters} && defined $expr{OrderingGapUnresolved},
		'rules.yml has the alerts OrderingDeadLetters and OrderingGapUnresolved');
	my $out = `"$promtool" test rules "$dir/cluster_test.yml" 2>&1`;
	is($?, 0, 'the dead letters and the gap of dc fire their alerts over the samples of every node')
	  or diag $out;
}

# ---------------------------------------------------------------------------
# 4. Privileges: as on one node
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE ROLE v_monitor LOGIN;
	CREATE ROLE v_consumer LOGIN;
	CREATE ROLE v_nobody LOGIN;
	SELECT ordering.grant_monitor('v_monitor');
	SELECT ordering.grant_consumer('v_consumer');
});
sub as_role
{
	my ($user, $query) = @_;
	my ($ret, $out, $err) = $coord->psql('postgres', $query,
		extra_params => [ '-U', $user ]);
	return $ret == 0 ? $out : "ERROR $err";
}
is(as_role('v_monitor', q{
	SELECT format('%s %s', parked_current, dead_letters_current) FROM ordering.stats
	 WHERE consumer = 'dc';
	SELECT count(*) FROM ordering.open_gaps WHERE consumer = 'dc';
	SELECT position('ordering_dead_letters_current{consumer="dc"} 3' IN ordering.metrics()) > 0}),
	"5 3\n1\nt", 'the monitoring set reads the gauges and the gaps of dc');
is(as_role('v_consumer', q{SELECT count(*) FROM ordering.dead_letters WHERE consumer = 'dc'}),
	'3', 'the consumer set reads the dead letters of dc');
like(as_role('v_nobody', q{SELECT count(*) FROM ordering.dead_letters}),
	qr/permission denied/, 'a role without the sets reads nothing');
like(as_role('v_monitor', q{SELECT count(*) FROM ordering.dead_letters}),
	qr/permission denied/, 'the monitoring set reads no dead letter, as on one node');

$cluster->stop;
done_testing();
