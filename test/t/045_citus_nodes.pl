# Nodes added to a Citus cluster, on one cluster: a coordinator, two
# workers, and a spare added half-way.  Skipped, with the reason printed,
# where the server's pkglibdir has no citus.so.
#
# 1. Privilege sets reach every node, those added later included: roles
#    given their sets with the grant functions on the coordinator (and
#    nowhere else) hold them on every worker; after citus_add_node() the
#    new node has them too, with no step of ours, so a rebalance onto it
#    completes (Citus creates a moved shard's triggers as the table's
#    owner, who needs EXECUTE on the sequencing trigger functions there),
#    and on the new node the producer inserts and relays, the consumer
#    consumes, and numbers continue.  With Citus's propagation off, a grant
#    function gives the set on its own node only.
# 2. ordering_internal.seed_counters(), which PUBLIC may execute, plants no
#    counter of another role's distributed stream on any node: a role with
#    the producer set puts the sequencing triggers of that stream by hand on
#    a table of its own (local, or distributed and co-located), with large
#    numbers in it, and calls it: refused, nothing is written (in 1.2 it
#    wrote a counter row on the coordinator, after which the stream owner's
#    own attach() of a second table failed with 42501), and the owner
#    attaches a second table, whose numbers continue the stream.
# 3. isolate_tenant_to_new_shard() under load: in its default mode (a
#    non-blocking split that keeps the new shards on the source node, which
#    Citus cannot finish while the counters get UPDATEs) it is refused with
#    0A000 and the block_writes hint before anything is copied; with
#    block_writes it completes, and every resource's numbers stay 1..N.
use strict;
use warnings;
use FindBin;
use lib $FindBin::RealBin;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use OrderingCitus qw(sql fails_as);

OrderingCitus::skip_unless_citus();

my $cluster = OrderingCitus->new('citus_nodes', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
note 'Citus ' . $cluster->citus_version . ', '
  . $coord->safe_psql('postgres', 'SELECT version()');


sub psql_as
{
	my ($node, $user, $query) = @_;
	return $node->psql('postgres', "\\set VERBOSITY verbose\n$query",
		on_error_stop => 1, extra_params => [ '-U', $user ]);
}

# Run a statement as a role; it must succeed.  Returns its output.
sub sql_as
{
	my ($node, $user, $query, $name) = @_;
	my ($ret, $out, $err) = psql_as($node, $user, $query);
	is($ret, 0, "$name: runs") or diag $err;
	return $out;
}

# ---------------------------------------------------------------------------
# 1. Privilege sets on every node, new ones included
# ---------------------------------------------------------------------------
# The roles get their sets on the coordinator only, as docs/citus.md says.
sql($coord, q{
	CREATE ROLE app LOGIN;
	CREATE ROLE billing LOGIN;
	CREATE ROLE oncall LOGIN;
	SELECT ordering.grant_producer('app');
	SELECT ordering.grant_consumer('billing');
	SELECT ordering.grant_operator('oncall');
});

# What a role holds on a node: one function of each set.
sub holds
{
	my ($node, $role) = @_;
	return sql($node, qq{
		SELECT concat_ws(',',
		    CASE WHEN has_function_privilege('$role', 'ordering.attach(regclass, name, name, text)', 'EXECUTE')
		          AND has_function_privilege('$role', 'ordering.sequence_trigger()', 'EXECUTE')
		          AND has_function_privilege('$role', 'ordering.claim_unpublished(anyelement, integer)', 'EXECUTE')
		         THEN 'producer' END,
		    CASE WHEN has_function_privilege('$role', 'ordering.deliver(text, text, bigint, jsonb)', 'EXECUTE')
		          AND has_function_privilege('$role', 'ordering.newer_only()', 'EXECUTE')
		         THEN 'consumer' END,
		    CASE WHEN has_function_privilege('$role', 'ordering.metrics()', 'EXECUTE') THEN 'monitor' END,
		    CASE WHEN has_function_privilege('$role', 'ordering.skip_gap(text, text)', 'EXECUTE') THEN 'operator' END,
		    CASE WHEN has_schema_privilege('$role', 'ordering', 'USAGE') THEN 'usage' END)});
}
my %sets = (app => 'producer,usage', billing => 'consumer,usage',
	oncall => 'consumer,monitor,operator,usage');
$cluster->each_node(sub {
	my ($node) = @_;
	is(holds($node, $_), $sets{$_}, "$_ holds its set on " . $node->name)
	  for sort keys %sets;
});

# With Citus's propagation off, a grant function gives the set on its own
# node only, as on a worker.
sql($coord, q{
	CREATE ROLE here_only LOGIN;
	SET citus.enable_ddl_propagation = off;
	SELECT ordering.grant_monitor('here_only');
});
is(holds($coord, 'here_only') . ';' . holds($w1, 'here_only'), 'monitor,usage;',
	'with propagation off a grant function gives the set on its own node only');

# A stream of role app (attached by the extension's owner, whose first
# attach makes the counter table, then given to app), its relay log, and a
# distributed consumer with its projection.
sql($coord, q{
	SET citus.shard_count = 4;
	CREATE TABLE events (id bigserial, resource_id text NOT NULL, seq bigint,
	                     published_at timestamptz, PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('events', 'resource_id');
	SELECT ordering.attach('events');
	-- Citus creates a moved shard as the table's owner, in its schema
	GRANT CREATE ON SCHEMA public TO app;
	ALTER TABLE events OWNER TO app;
	CREATE TABLE view_rows (resource_id text PRIMARY KEY, seq bigint NOT NULL);
	SELECT create_distributed_table('view_rows', 'resource_id', colocate_with => 'events');
	SELECT ordering.distribute_consumer('billing', 'view_rows');
});
sql_as($coord, 'app', q{
	INSERT INTO events (resource_id) SELECT 'r' || (i % 40) FROM generate_series(1, 400) i},
	'the producer inserts before the new node');
sql_as($coord, 'billing', q{
	SELECT count(*) FROM generate_series(1, 40) i,
	       ordering.apply_if_newer('billing', 'r' || (i - 1), 5) a WHERE a},
	'the consumer consumes before the new node');

# The spare joins; nothing is run on it.
my $w3 = $cluster->add_worker;
is(holds($w3, $_), $sets{$_}, "$_ holds its set on the node added later")
  for sort keys %sets;

# A rebalance onto it completes: its moves create the shards' triggers as
# their table's owner, app.  A hang is a failure (the rebalancer retries a
# failed move for ever): citus_rebalance_wait() is given 5 minutes.
$cluster->clean_orphans;
sql($coord, q{SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')});
my ($ret, $out, $err) = $coord->psql('postgres', q{
	SET statement_timeout = '300s';
	SELECT citus_rebalance_wait()});
is($ret, 0, 'the rebalance onto the new node completes')
  or diag $err, sql($coord, q{
	SELECT string_agg(status || ': ' || coalesce(message, ''), E'\n')
	  FROM pg_dist_background_task WHERE status <> 'done'});
$coord->psql('postgres', 'SELECT citus_rebalance_stop()') if $ret != 0;
my $on3 = sql($coord, qq{
	SELECT count(*) FROM citus_shards WHERE nodeport = ${\ $w3->port } AND table_name = 'events'::regclass});
ok($on3 > 0, "the rebalance moved $on3 shards of the stream onto the new node");

# On the new node: a resource whose shard is there
my $r3 = sql($coord, qq{
	SELECT min(r) FROM (SELECT 'r' || i AS r FROM generate_series(0, 39) i) s
	 WHERE (SELECT nodeport FROM citus_shards
	         WHERE shardid = get_shard_id_for_distribution_column('events', s.r)) = ${\ $w3->port }});
ok($r3 ne '', "resource $r3 lives on the new node");
sql_as($w3, 'app', qq{INSERT INTO events (resource_id) VALUES ('$r3'), ('$r3')},
	'the producer inserts through the new node');
sql_as($coord, 'app', qq{INSERT INTO events (resource_id) VALUES ('$r3')},
	'the producer inserts through the coordinator into a shard on the new node');
is(sql($coord, qq{SELECT string_agg(seq::text, ',' ORDER BY seq) FROM events WHERE resource_id = '$r3'}),
	join(',', 1 .. 13), "the numbers of $r3 continue on the new node");
my $rows3 = sql($coord, qq{
	SELECT count(*) FROM events e
	 WHERE (SELECT nodeport FROM citus_shards
	         WHERE shardid = get_shard_id_for_distribution_column('events', e.resource_id)) = ${\ $w3->port }});
is(sql_as($w3, 'app', q{
	BEGIN;
	SELECT count(*) FROM ordering.claim_unpublished(NULL::events, 1000);
	ROLLBACK;}, 'the relay claims on the new node'),
	$rows3, "the relay of the new node claims the $rows3 rows of its shards");
is(sql_as($coord, 'billing', qq{
	SELECT ordering.apply_if_newer('billing', '$r3', 6) || ',' || ordering.position('billing', '$r3')},
	'the consumer consumes a resource on the new node'),
	'true,6', 'the consumer moves the position of a resource on the new node');
is(sql_as($coord, 'oncall', q{SELECT count(*) FROM ordering.check()}, 'the operator checks'),
	'0', 'ordering.check() is clean');

# ---------------------------------------------------------------------------
# 2. seed_counters() plants no counter of another role's distributed stream
# ---------------------------------------------------------------------------

my $counters = sql($coord,
	q{SELECT ordering_internal.distributed_counters('public.events')});
sql($coord, q{
	CREATE ROLE intruder LOGIN;
	GRANT CREATE ON SCHEMA public TO intruder;
	SELECT ordering.grant_producer('intruder');
});
# The three sequencing triggers of stream public.events, made by hand on
# a table ($counters: the distributed form, with the counter table).
sub sequencing_triggers
{
	my ($table, $counters) = @_;
	my $fourth = defined $counters ? ", '$counters'" : '';
	return qq{
	CREATE TRIGGER ordering_sequence BEFORE INSERT ON $table FOR EACH ROW
	  EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', 'public.events'$fourth);
	CREATE TRIGGER ordering_sequence_stored AFTER INSERT ON $table FOR EACH ROW
	  WHEN (ordering_internal.sequence_stored()) EXECUTE FUNCTION ordering_internal.sequence_stored_trigger();
	CREATE TRIGGER ordering_sequence_guard BEFORE UPDATE OR DELETE ON $table FOR EACH ROW
	  EXECUTE FUNCTION ordering_internal.sequence_guard('resource_id', 'seq', 'public.events');};
}
my $state = sub {
	return join(';',
		sql($coord, qq{SELECT max(last_seq) || '/' || count(*) FROM $counters}),
		map { sql($_, q{SELECT count(*) FROM ordering.sequences WHERE stream = 'public.events'}) }
		  $cluster->nodes);
};
my $before = $state->();
# the intruder's distributed table, co-located with the stream, with the
# distributed form of the triggers
sql_as($coord, 'intruder', q{
	CREATE TABLE planted_dist (id bigserial, resource_id text NOT NULL, seq bigint,
	                           PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('planted_dist', 'resource_id', colocate_with => 'events');
	INSERT INTO planted_dist (resource_id, seq) VALUES ('r1', 1000000), ('r2', 9223372036854775807);
	SET citus.enable_unsafe_triggers = on;} . sequencing_triggers('planted_dist', $counters),
	'the intruder makes the stream\'s triggers on a distributed table of its own');
fails_as($coord, 'intruder', q{SELECT ordering_internal.seed_counters('planted_dist')},
	'42501', undef, 'seed_counters() of a distributed table with triggers made by hand');
for my $node ($coord, $w1, $w3)
{
	my $name = $node->name;
	sql($node, q{SET citus.enable_ddl_propagation = off; GRANT CREATE ON SCHEMA public TO intruder});
	sql_as($node, 'intruder', q{
		CREATE TABLE planted (resource_id text NOT NULL, seq bigint);
		INSERT INTO planted VALUES ('r1', 1000000), ('r2', 9223372036854775807);}
		  . sequencing_triggers('planted'),
		"the intruder makes the stream's triggers on a local table on $name");
	fails_as($node, 'intruder', q{SELECT ordering_internal.seed_counters('planted')},
		'(42501|55000)', undef, "seed_counters() of a local table with triggers made by hand on $name");
}
is($state->(), $before, 'no counter of the stream changed or was planted, on any node');

# the stream's owner attaches a second table to it: its numbers continue
my $next = sql($coord, q{SELECT max(seq) + 1 FROM events WHERE resource_id = 'r1'});
sql_as($coord, 'app', q{
	CREATE TABLE events2 (id bigserial, resource_id text NOT NULL, seq bigint,
	                      PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('events2', 'resource_id', colocate_with => 'events');
	SELECT ordering.attach('events2', stream => 'public.events');
	INSERT INTO events2 (resource_id) VALUES ('r1');},
	'the owner attaches a second table to the stream');
is(sql($coord, q{SELECT seq FROM events2 WHERE resource_id = 'r1'}), $next,
	'the second table continues the stream');

sql_as($coord, 'intruder', q{DROP TABLE planted_dist}, 'the intruder drops its distributed table');
sql_as($_, 'intruder', q{DROP TABLE planted}, 'the intruder drops its table on ' . $_->name)
  for ($coord, $w1, $w3);

# ---------------------------------------------------------------------------
# 3. isolate_tenant_to_new_shard() under load
# ---------------------------------------------------------------------------
my $script = PostgreSQL::Test::Utils::tempdir() . '/insert.sql';
PostgreSQL::Test::Utils::append_to_file($script,
	"\\set r random(0, 39)\nINSERT INTO events (resource_id) VALUES ('r' || :r);\n");
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'pgbench', '-n', '-T', '40', '-c', '2', '-h', $coord->host, '-p', $coord->port,
	  '-U', 'app', '-f', $script, 'postgres' ],
	'>', \$bench_out, '2>', \$bench_err);
sleep 2;
($ret, $out, $err) = $coord->psql('postgres', q{
	\set VERBOSITY verbose
	SET statement_timeout = '60s';
	SELECT isolate_tenant_to_new_shard('events', 'r5', 'CASCADE')});
isnt($ret, 0, 'isolate_tenant_to_new_shard() in its default mode under load: refused');
like($err, qr/ERROR:\s+0A000: a non-blocking split cannot keep a child of shard "sequences_[0-9a-f]+_\d+" on its node/,
	'... with 0A000, before it stalls');
like($err, qr/HINT:\s+Split with shard_transfer_mode => 'block_writes'/, '... and the block_writes hint');
$cluster->clean_orphans;
my $shards_before = sql($coord, q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass});
($ret, $out, $err) = $coord->psql('postgres', q{
	SET statement_timeout = '120s';
	SELECT isolate_tenant_to_new_shard('events', 'r5', 'CASCADE', shard_transfer_mode => 'block_writes')});
is($ret, 0, 'isolate_tenant_to_new_shard() with block_writes under load completes') or diag $err;
ok(sql($coord, q{SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'events'::regclass}) > $shards_before,
	'... and made the tenant a shard of its own');
ok($bench->pumpable, 'the producers were still inserting');
$bench->finish;
is($bench->result(0), 0, 'no producer transaction failed') or diag $bench_err;
like($bench_out, qr/number of failed transactions: 0 /, 'pgbench counts no failure');
is(sql($coord, q{
	WITH e AS MATERIALIZED (SELECT resource_id, seq FROM events UNION ALL SELECT resource_id, seq FROM events2)
	SELECT count(*) FROM (SELECT resource_id, count(*) AS n, count(DISTINCT seq) AS d, min(seq) AS lo, max(seq) AS hi
	                        FROM e GROUP BY 1) x
	 WHERE n <> d OR lo <> 1 OR hi <> n}),
	'0', 'every resource of the stream holds the numbers 1..N once');
is(sql($coord, q{SELECT count(*) FROM ordering.check()}), '0', 'ordering.check() is clean after the split')
  or diag sql($coord, q{SELECT * FROM ordering.check()});

$cluster->stop;
done_testing();
