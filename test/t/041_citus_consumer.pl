# Consumers whose state Citus distributes (ordering.distribute_consumer), on
# a coordinator and two workers (a third joins for the rebalance).  Skipped,
# with the reason printed, where the server has no citus.so.
#
# 1. A consumer "acct" distributed with its projection: pgbench sessions on
#    the coordinator deliver a shuffled stream (every resource's events in
#    random order, 10% duplicated, 5% lost) through a handler that writes
#    the distributed projection and logs each event it applies, with
#    on_error => 'dead_letter', while the shard groups are moved (logical,
#    block_writes), split (block_writes; non-blocking with the children on
#    another node) and rebalanced onto the third worker.  Then gap sweeps on
#    the coordinator ask for what is missing, which is delivered again
#    (republish), and reconciliation finds what was lost at the tails,
#    until nothing is behind.  Every event was applied exactly once and in
#    order per resource, nothing is left parked, ordering.check() is clean,
#    and the counters of all nodes add up.  A poison event, dead-lettered
#    on a worker, is retried there from the coordinator.
# 2. The randomized batch-vs-single equivalence test of 1.1
#    (sql/batch_equivalence.sql) with its thirty consumers distributed.
# 3. The transaction rules: two workers in one transaction (two-phase
#    commit), a rollback, prepared statements, a resource whose shard is on
#    the coordinator itself, the newer_only guard on a distributed
#    projection, a handler calling for another resource, and the parking
#    cap.
# 4. The privileges of sql/privileges.sql: a role without the consumer set
#    calls no consumer function and touches no table of a distributed
#    consumer (42501), on the coordinator or a worker; a role with it
#    consumes, and reads the tables, but does not write them with SQL.
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

my $cluster = OrderingCitus->new('ccons', workers => 2);
my $coord = $cluster->coordinator;
my ($worker1, $worker2) = $cluster->workers;
note sql($coord, 'SELECT citus_version()')
  . ' (extension version ' . $cluster->citus_version . ')';

# the resources of the stream, and the events of each
my $resources = 120;
my $per_resource = 20;

sql($coord, q{
	CREATE TABLE acct (resource_id text PRIMARY KEY, last_seq bigint NOT NULL,
	                   applied bigint NOT NULL, total bigint NOT NULL);
	SELECT create_distributed_table('acct', 'resource_id', shard_count => 8);
	CREATE TABLE acct_log (resource_id text NOT NULL, seq bigint NOT NULL,
	                       PRIMARY KEY (resource_id, seq));
	SELECT create_distributed_table('acct_log', 'resource_id', colocate_with => 'acct');
	-- Applies one event to the projection: in order or not at all (the
	-- log's key refuses an event applied twice); a poison event fails
	-- unless cured.
	CREATE FUNCTION apply_event(r text, s bigint, p jsonb) RETURNS void
	LANGUAGE plpgsql AS $$
	BEGIN
	    IF (p->>'poison')::boolean AND NOT COALESCE((p->>'cured')::boolean, false) THEN
	        RAISE EXCEPTION 'poison event % of %', s, r;
	    END IF;
	    INSERT INTO acct_log VALUES (r, s);
	    UPDATE acct SET last_seq = s, applied = applied + 1, total = total + (p->>'v')::bigint
	     WHERE resource_id = r AND last_seq = s - 1;
	    IF NOT FOUND THEN
	        IF s <> 1 THEN
	            RAISE EXCEPTION 'event % of % out of order', s, r;
	        END IF;
	        INSERT INTO acct VALUES (r, 1, 1, (p->>'v')::bigint);
	    END IF;
	END $$;
	CREATE FUNCTION apply_cured(r text, s bigint, p jsonb) RETURNS void
	    LANGUAGE sql AS $$ SELECT apply_event(r, s, p || '{"cured": true}') $$;
});
# The stream: the truth, and the schedule the sessions deliver, shuffled
# as a whole, each event twice with probability 0.1 and lost with 0.05
# (never the last of a resource, and never the poison one).
sql($coord, qq{
	SELECT setseed(0.41);
	CREATE TABLE truth AS
	SELECT 'acct-' || r AS resource_id, s::bigint AS seq, (random() * 100)::int AS v
	  FROM generate_series(0, $resources - 1) r, generate_series(1, $per_resource) s;
	INSERT INTO truth SELECT 'acct-poison', s, 1 FROM generate_series(1, $per_resource) s;
	CREATE TABLE sched (n bigint PRIMARY KEY, resource_id text NOT NULL, seq bigint NOT NULL,
	                    payload jsonb NOT NULL);
	INSERT INTO sched
	SELECT row_number() OVER (ORDER BY random()), e.resource_id, e.seq, e.payload
	  FROM (SELECT t.resource_id, t.seq,
	               jsonb_build_object('v', t.v, 'poison', t.resource_id = 'acct-poison' AND t.seq = 3) AS payload,
	               random() AS lost, random() AS dup
	          FROM truth t) e,
	       generate_series(1, CASE WHEN e.dup < 0.1 THEN 2 ELSE 1 END)
	 WHERE e.lost >= 0.05 OR e.seq = $per_resource OR e.resource_id = 'acct-poison';
	CREATE SEQUENCE sched_n;
});
my $total = sql($coord, 'SELECT count(*) FROM sched');

# a consumer with state before it is distributed: it moves along
is(sql($coord, q{
	SELECT count(*) FROM ordering.deliver('acct', 'acct-0', 2,
	    (SELECT jsonb_build_object('v', v, 'poison', false) FROM truth
	      WHERE resource_id = 'acct-0' AND seq = 2));
	SELECT count(*) FROM (SELECT ordering.distribute_consumer('acct', 'acct')) x;
	SELECT count(*) FROM ordering.parked WHERE consumer = 'acct';
}), "0\n1\n0", 'distribute_consumer() moves the state the consumer had');
my $tag = sql($coord,
	q{SELECT tag FROM ordering_internal.distributed_consumers WHERE consumer = 'acct'});
like($tag, qr/^consumer_[0-9a-f]{16}$/, 'the consumer is registered with its tag');
is(sql($coord, qq{
	SELECT count(*) FROM ordering_internal.${tag}_parked WHERE resource_id = 'acct-0'}),
	'1', 'its parked event is in its distributed table');
is(sql($coord, qq{
	SELECT count(DISTINCT c.colocationid)
	  FROM pg_dist_partition c
	 WHERE c.logicalrelid IN ('acct'::regclass, 'ordering_internal.${tag}_positions'::regclass,
	                          'ordering_internal.${tag}_parked'::regclass,
	                          'ordering_internal.${tag}_dead_letters'::regclass,
	                          'ordering_internal.${tag}_gap_requests'::regclass)}),
	'1', 'its tables are co-located with its projection');
my ($code, $out, $err) = $coord->psql('postgres',
	q{SELECT ordering.distribute_consumer('acct', 'acct')});
like($err, qr/consumer "acct" is distributed already/, 'distributing it again is refused');


my $dir = PostgreSQL::Test::Utils::tempdir;
open(my $fh, '>', "$dir/deliver.sql") or die;
print $fh <<'EOF';
SELECT quote_literal(s.resource_id) AS r, s.seq, quote_literal(s.payload::text) AS p
  FROM sched s WHERE s.n = (SELECT (nextval('sched_n') - 1) % :total + 1) \gset
SELECT ordering.deliver('acct', :r, :seq, :p::jsonb, 'apply_event(text,bigint,jsonb)', 'dead_letter');
EOF
close $fh;

# pgbench runs of 10 s, one after the other, until told to stop; held to
# 100 deliveries a second, so that the moves below run under load without
# that load taking the cores from the rest of the test command
my $stop = "$dir/stop";
my ($bench_out, $bench_err) = ('', '');
my $bench = IPC::Run::start(
	[ 'bash', '-c', qq{
		while [ ! -e '$stop' ]; do
			pgbench -n -h '${\ $coord->host}' -p ${\ $coord->port} -c 4 -j 2 -T 10 -R 100 \\
				--max-tries=5 -D total=$total -f '$dir/deliver.sql' postgres || exit 1
		done } ],
	'>', \$bench_out, '2>', \$bench_err);

# the node of a shard group (that of a resource of acct), and another one
sub group_of
{
	my ($resource) = @_;
	my ($shard, $node, $min, $max) = split /\|/, sql($coord, qq{
		SELECT s.shardid, s.nodeport, d.shardminvalue, d.shardmaxvalue
		  FROM citus_shards s JOIN pg_dist_shard d USING (shardid)
		 WHERE s.shardid = get_shard_id_for_distribution_column('acct', '$resource')});
	return ($shard, $node, $min, $max);
}
sub node_id_of_port
{
	my ($port) = @_;
	return sql($coord,
		"SELECT nodeid FROM pg_dist_node WHERE nodeport = $port");
}
sub other_worker
{
	my ($port) = @_;
	return $port == $worker1->port ? $worker2->port : $worker1->port;
}
# wait until the sessions have delivered this many events more
sub wait_deliveries
{
	my ($more) = @_;
	my $start = sql($coord, 'SELECT last_value FROM sched_n');
	for (my $tries = 0;; $tries++)
	{
		$bench->pump_nb;
		die "the deliveries stopped:\n$bench_out\n$bench_err" unless $bench->pumpable;
		last if sql($coord, "SELECT last_value >= $start + $more FROM sched_n") eq 't';
		die "the deliveries stalled:\n$bench_out\n$bench_err" if $tries > 600;
		sleep 1;
	}
}

wait_deliveries(300);
my ($shard, $port) = group_of('acct-1');
$cluster->clean_orphans;
sql($coord, qq{
	SELECT citus_move_shard_placement($shard, '${\ $coord->host}', $port,
	       '${\ $coord->host}', ${\ other_worker($port)}, 'force_logical')});
note "moved the group of shard $shard from $port (logical)";
wait_deliveries(300);

($shard, $port) = group_of('acct-2');
$cluster->clean_orphans;
sql($coord, qq{
	SELECT citus_move_shard_placement($shard, '${\ $coord->host}', $port,
	       '${\ $coord->host}', ${\ other_worker($port)}, 'block_writes')});
note "moved the group of shard $shard from $port (block_writes)";
wait_deliveries(300);

my ($min, $max);
($shard, $port, $min, $max) = group_of('acct-3');
my $id = node_id_of_port($port);
sql($coord, qq{
	SELECT citus_split_shard_by_split_points($shard,
	       ARRAY[((($min)::bigint + ($max)::bigint) / 2)::text], ARRAY[$id, $id],
	       'block_writes')});
note "split the group of shard $shard on $port (block_writes)";
wait_deliveries(300);

# A non-blocking split stalls under updates when a child is on the source
# node (docs/citus.md): its children go to the other worker.
($shard, $port, $min, $max) = group_of('acct-4');
$id = node_id_of_port(other_worker($port));
sql($coord, qq{
	SELECT citus_split_shard_by_split_points($shard,
	       ARRAY[((($min)::bigint + ($max)::bigint) / 2)::text], ARRAY[$id, $id],
	       'force_logical')});
note "split the group of shard $shard from $port (non-blocking, children elsewhere)";
wait_deliveries(300);

my $worker3 = $cluster->add_worker;
$cluster->clean_orphans;
sql($coord, q{
	SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes');
	SELECT citus_rebalance_wait();
});
my $on3 = sql($coord, qq{
	SELECT count(*) FROM citus_shards
	 WHERE table_name = 'ordering_internal.${tag}_positions'::regclass
	   AND nodeport = ${\ $worker3->port}});
ok($on3 > 0, "the rebalance moved $on3 shard groups onto the third worker");
wait_deliveries(300);

open($fh, '>', $stop) or die;
close $fh;
$bench->finish;
my @failed = $bench_out =~ /number of failed transactions: (\d+)/g;
my @runs = $bench_out =~ /number of transactions actually processed: (\d+)/g;
my $delivered = 0;
$delivered += $_ foreach @runs;
ok(@runs > 0 && !grep({ $_ != 0 } @failed) && $bench_err !~ /aborted/,
	"$delivered deliveries in " . scalar(@runs) . ' pgbench runs during the moves, splits and rebalance, none failed')
  or diag "$bench_out\n$bench_err";
note "schedule of $total deliveries of "
  . sql($coord, 'SELECT count(*) FROM truth') . ' events';

# Republish what the gap sweeps ask for, and what reconciliation finds
# behind (lost last events), until nothing is behind but the poison
# resource, which waits behind its dead letter.  One transaction per event:
# the statistics of a transaction that wrote on several nodes are not
# counted (it commits in two phases, and 1.1 counts no prepared
# transaction), and the last test adds the nodes' counts up.
sql($coord, q{
	CREATE PROCEDURE redeliver(n INOUT bigint) LANGUAGE plpgsql AS $$
	DECLARE e record;
	BEGIN
	    n := 0;
	    FOR e IN SELECT * FROM todo ORDER BY random() LOOP
	        PERFORM ordering.deliver('acct', e.resource_id, e.seq,
	                                 jsonb_build_object('v', e.v, 'poison', e.resource_id = 'acct-poison' AND e.seq = 3),
	                                 'apply_event(text,bigint,jsonb)', 'dead_letter');
	        COMMIT;
	        n := n + 1;
	    END LOOP;
	END $$;
});
my $buckets = 16;
my $republished = 0;
my $behind = -1;
for (my $round = 1; $round <= 60 && $behind != 0; $round++)
{
	sleep 1;
	$republished += sql($coord, q{
		SET ordering.gap_deadline = 1;
		CREATE TEMP TABLE req AS SELECT resource_id, missing_from, missing_to FROM ordering.sweep_gaps();
		CREATE TEMP TABLE todo AS
		SELECT t.* FROM req r JOIN truth t ON t.resource_id = r.resource_id
		                 AND t.seq BETWEEN r.missing_from AND r.missing_to;
		CALL redeliver(0);
	});
	# reconciliation: the buckets whose summary differs from the truth's,
	# then the events above the consumer's position in them
	$republished += sql($coord, qq{
		CREATE TEMP TABLE differ AS
		SELECT COALESCE(e.b, a.bucket) AS b
		  FROM (SELECT ordering_internal.resource_bucket(resource_id, $buckets) AS b, count(*) AS n,
		               sum(m) AS s, bit_xor(ordering_internal.resource_fingerprint(resource_id, m)) AS f
		          FROM (SELECT resource_id, max(seq) AS m FROM truth GROUP BY 1) x GROUP BY 1) e
		  FULL JOIN ordering.consumer_summary('acct', $buckets) a ON a.bucket = e.b
		 WHERE a.bucket IS NULL OR e.b IS NULL
		    OR (a.resources, a.seq_sum, a.fingerprint) IS DISTINCT FROM (e.n, e.s, e.f);
		CREATE TEMP TABLE todo AS
		SELECT t.* FROM ordering.consumer_state('acct', $buckets, ARRAY(SELECT b FROM differ)) c
		  JOIN truth t ON t.resource_id = c.resource_id AND t.seq > c.position
		 WHERE c.parked_from IS NULL OR t.seq < c.parked_from;
		CALL redeliver(0);
	});
	$behind = sql($coord, qq{
		SELECT count(*) FROM (SELECT resource_id, max(seq) AS m FROM truth
		                       WHERE resource_id <> 'acct-poison' GROUP BY 1) t
		  LEFT JOIN ordering_internal.${tag}_positions p USING (resource_id)
		 WHERE COALESCE(p.position, 0) < t.m});
}
is($behind, '0', "republish and reconciliation caught up ($republished events delivered again)");

# the poison event is the dead letter of its resource, on a worker
is(sql($coord, qq{
	SELECT d.seq || ' ' || d.attempts || ' ' || d.sqlstate || ' ' || p.position
	  FROM ordering_internal.${tag}_dead_letters d
	  JOIN ordering_internal.${tag}_positions p USING (consumer, resource_id)}), '3 1 P0001 2',
	'the poison event is the dead letter, and its resource is blocked before it');
my $dead_port = sql($coord, qq{
	SELECT nodeport FROM citus_shards
	 WHERE shardid = get_shard_id_for_distribution_column('ordering_internal.${tag}_dead_letters',
	                                                      'acct-poison')});
isnt($dead_port, $coord->port, "it is kept on a worker (port $dead_port)");
is(sql($coord, q{
	SELECT ordering.retry_dead_letter('acct', 'acct-poison', 'apply_event(text,bigint,jsonb)')}),
	'0', 'a retry through the same handler fails again: nothing ran');
is(sql($coord, qq{
	SELECT attempts FROM ordering_internal.${tag}_dead_letters}), '2', '... and counts the attempt');
is(sql($coord, q{
	SELECT ordering.retry_dead_letter('acct', 'acct-poison', 'apply_cured(text,bigint,jsonb)')}),
	$per_resource - 2, 'a retry through the cured handler runs it and everything parked behind it');

# every event applied exactly once, in order
is(sql($coord, q{
	SELECT count(*) FROM (SELECT resource_id, count(*) AS n, sum(v) AS total FROM truth GROUP BY 1) t
	  JOIN acct a USING (resource_id)
	 WHERE a.last_seq = t.n AND a.applied = t.n AND a.total = t.total}),
	$resources + 1, 'every resource of the projection has every event, once, in order');
is(sql($coord, q{
	SELECT (SELECT count(*) FROM acct_log) = (SELECT count(*) FROM truth)}),
	't', 'the log of applied events holds each event once');
is(sql($coord, qq{
	SELECT (SELECT count(*) FROM ordering_internal.${tag}_parked) || ' '
	    || (SELECT count(*) FROM ordering_internal.${tag}_dead_letters) || ' '
	    || (SELECT count(*) FROM ordering_internal.${tag}_gap_requests) || ' '
	    || (SELECT count(*) FROM ordering_internal.${tag}_positions p
	         WHERE p.position <> $per_resource)}),
	'0 0 0 0', 'nothing is left parked, dead or requested, and every position is the last seq');
is(sql($coord, 'SELECT count(*) FROM ordering.check()'), '0',
	'ordering.check() finds nothing');
# each call counted where it ran: the nodes' counters add up
is(sql($coord, q{
	SELECT sum(r.result::bigint) FROM run_command_on_all_nodes(
	    $$SELECT COALESCE(sum(events_applied), 0) FROM ordering.stats WHERE consumer = 'acct'$$) r}),
	sql($coord, 'SELECT count(*) FROM truth'),
	'the events applied counted on all nodes are the events of the stream');
# for the record: what the stream and the deliveries were, and how the
# consumer decided (the counters of all nodes)
note 'schedule: '
  . sql($coord, q{
	SELECT (SELECT count(*) FROM truth) || ' events, '
	    || (SELECT count(*) - count(DISTINCT (resource_id, seq)) FROM sched) || ' scheduled twice, '
	    || (SELECT count(*) FROM truth t WHERE NOT EXISTS (SELECT FROM sched s
	         WHERE s.resource_id = t.resource_id AND s.seq = t.seq)) || ' lost'})
  . '; counted on all nodes: '
  . sql($coord, q{
	SELECT string_agg(k || ' ' || v, ', ' ORDER BY o)
	  FROM (SELECT j->>'consumer' AS consumer,
	               sum((j->>'events_consumed')::bigint) AS consumed,
	               sum((j->>'events_applied')::bigint) AS applied,
	               sum((j->>'events_duplicate')::bigint) AS duplicate,
	               sum((j->>'events_stale')::bigint) AS stale,
	               sum((j->>'events_parked')::bigint) AS parked,
	               sum((j->>'events_drained')::bigint) AS drained,
	               sum((j->>'events_dead_lettered')::bigint) AS dead_lettered
	          FROM run_command_on_all_nodes($$SELECT COALESCE(json_agg(s), '[]') FROM ordering.stats s
	                                          WHERE consumer = 'acct'$$) r,
	               json_array_elements(r.result::json) j
	         GROUP BY 1) c,
	       LATERAL (VALUES (1, 'consumed', c.consumed), (2, 'applied', c.applied),
	                       (3, 'duplicate', c.duplicate), (4, 'stale', c.stale),
	                       (5, 'parked', c.parked), (6, 'drained', c.drained),
	                       (7, 'dead-lettered', c.dead_lettered)) x(o, k, v)});

# check() sees a broken invariant on a worker: a parked event that should
# have drained, written with SQL behind the summary its position row keeps
sql($coord, qq{
	INSERT INTO ordering_internal.${tag}_parked (consumer, resource_id, seq, payload)
	VALUES ('acct', 'acct-7', $per_resource + 1, '{}')});
is(sql($coord, 'SELECT kind FROM ordering.check() ORDER BY 1'),
	"parked_not_drained\nparked_summary_mismatch",
	'check() reports a parked event that should have drained, and the stale summary, on its node');
sql($coord, qq{
	DELETE FROM ordering_internal.${tag}_parked WHERE resource_id = 'acct-7'});

# 2. The batch-vs-single equivalence test of 1.1, every consumer
# distributed.  Its tables are read through views over the distributed
# consumers' tables, its statistics and hot resources are the sums of all
# nodes' (each call is counted on the node that ran it).
my $be = slurp_file("$FindBin::RealBin/../../sql/batch_equivalence.sql");
my ($prelude, $rest) = split /\n(?=-- Trials:)/, $be, 2;
my ($trials, $cleanup) = split /\nDROP PROCEDURE/, $rest, 2;
sql($coord, q{
	CREATE TABLE be_anchor (resource_id text PRIMARY KEY);
	SELECT create_distributed_table('be_anchor', 'resource_id', shard_count => 4);
	SELECT ordering.distribute_consumer(p || kind || '-' || t, 'be_anchor')
	  FROM generate_series(1, 5) t, (VALUES (''), ('h-'), ('a-')) x(p),
	       (VALUES ('single'), ('batch')) y(kind);
	CREATE FUNCTION be_rows_of(suffix text, cols text) RETURNS SETOF record
	LANGUAGE plpgsql AS $$
	DECLARE d record;
	BEGIN
	    FOR d IN SELECT * FROM ordering_internal.distributed_consumers LOOP
	        RETURN QUERY EXECUTE format('SELECT %s FROM ordering_internal.%I', cols, d.tag || suffix);
	    END LOOP;
	END $$;
	CREATE VIEW be_positions AS SELECT * FROM be_rows_of('_positions',
	    'consumer::text, resource_id::text, position, blocked_at')
	    AS (consumer text, resource_id text, position bigint, blocked_at bigint);
	CREATE VIEW be_parked AS SELECT * FROM be_rows_of('_parked',
	    'consumer::text, resource_id::text, seq, payload, parked_at')
	    AS (consumer text, resource_id text, seq bigint, payload jsonb, parked_at timestamptz);
	CREATE VIEW be_dead AS SELECT * FROM be_rows_of('_dead_letters',
	    'consumer::text, resource_id::text, seq, payload, sqlstate, message, failed_at, attempts')
	    AS (consumer text, resource_id text, seq bigint, payload jsonb, sqlstate text,
	        message text, failed_at timestamptz, attempts int);
	-- the counters of all nodes, summed; the gauges from the tables
	CREATE VIEW be_stats AS
	WITH node AS (
	    SELECT j
	      FROM run_command_on_all_nodes($$SELECT COALESCE(json_agg(s), '[]') FROM ordering.stats s$$) r,
	           json_array_elements(r.result::json) j
	), buckets AS (
	    SELECT consumer, array_agg(n ORDER BY i) AS b
	      FROM (SELECT j->>'consumer' AS consumer, i, sum(x::bigint) AS n
	              FROM node, json_array_elements_text(j->'reorder_distance_buckets') WITH ORDINALITY e(x, i)
	             GROUP BY 1, 2) x
	     GROUP BY consumer
	)
	SELECT c.consumer, c.events_consumed, c.events_applied, c.events_stale, c.events_duplicate,
	       c.events_parked, c.events_drained, c.events_dead_lettered, c.events_skipped,
	       (SELECT count(*) FROM be_parked p WHERE p.consumer = c.consumer) AS parked_current,
	       (SELECT count(*) FROM be_dead d WHERE d.consumer = c.consumer) AS dead_letters_current,
	       b.b AS reorder_distance_buckets, c.reorder_distance_sum, NULL::interval AS oldest_gap_age
	  FROM (SELECT j->>'consumer' AS consumer,
	               sum((j->>'events_consumed')::bigint) AS events_consumed,
	               sum((j->>'events_applied')::bigint) AS events_applied,
	               sum((j->>'events_stale')::bigint) AS events_stale,
	               sum((j->>'events_duplicate')::bigint) AS events_duplicate,
	               sum((j->>'events_parked')::bigint) AS events_parked,
	               sum((j->>'events_drained')::bigint) AS events_drained,
	               sum((j->>'events_dead_lettered')::bigint) AS events_dead_lettered,
	               sum((j->>'events_skipped')::bigint) AS events_skipped,
	               sum((j->>'reorder_distance_sum')::bigint) AS reorder_distance_sum
	          FROM node GROUP BY 1) c
	  JOIN buckets b USING (consumer);
	CREATE FUNCTION be_hot(consumer text, n int) RETURNS TABLE (resource_id text, events bigint, max_error bigint)
	LANGUAGE sql AS $$
	    SELECT h.resource_id, sum(h.events)::bigint, sum(h.max_error)::bigint
	      FROM run_command_on_all_nodes(format(
	               'SELECT COALESCE(json_agg(h), ''[]'') FROM ordering.hot_resources(''consumer'', %L, %s) h',
	               consumer, n)) r,
	           json_to_recordset(r.result::json) AS h(resource_id text, events bigint, max_error bigint)
	     GROUP BY 1
	$$;
	SELECT count(*) FROM run_command_on_all_nodes('SELECT ordering.stats_reset()');
});
# the test itself, on those views; the handlers run on the workers, where
# the coordinator's settings are not: the trial comes with each event
for ($prelude, $trials)
{
	s/SELECT ordering\.stats_reset\(\);//;
	s/FROM ordering\.positions\b/FROM be_positions/g;
	s/FROM ordering\.parked\b/FROM be_parked/g;
	s/FROM ordering\.dead_letter_events\b/FROM be_dead/g;
	s/\bordering\.stats\b/be_stats/g;
	s/ordering\.hot_resources\('consumer', (\S+), (\d+)\)/be_hot($1, $2)/g;
	s/ordering\.hot_resources\('consumer', ('single-' \|\| t)\)/be_hot($1, 10)/g;
	s/current_setting\('be\.trial'\)/(p->>'t')/g;
	s/'poison', poison < poison_pct \/ 100\.0\)/'poison', poison < poison_pct \/ 100.0, 't', t)/g;
	# compared from a copy: Citus plans no SQL function with parameters
	# on a distributed table
	s/FROM be_handled\b/FROM be_handled_copy/g;
}
$trials =~ s/\n(?=-- One row per trial and form)/\nINSERT INTO be_handled_copy SELECT * FROM be_handled;\n/
  or die 'batch_equivalence.sql changed: no comparison found';
sql($coord, "CREATE TABLE be_handled_copy (n bigint, consumer text, resource_id text, seq bigint, payload jsonb);\n$prelude");
# the handlers' record of their calls is written where they run
sql($coord,
	q{SELECT create_distributed_table('be_handled', 'resource_id', colocate_with => 'be_anchor')});
my $result = $coord->safe_psql('postgres', $trials, timeout => 900);
my @lines = split /\n/, $result;
my @compared = grep { /^\d\|/ } @lines;
is(scalar(grep { /\|nothing$/ } @compared), 15,
	'batches and single calls of distributed consumers come out the same (5 trials, 3 forms)')
  or diag $result;
# be_covered() reads the statistics: those of a transaction that wrote on
# several nodes are not counted (two-phase commit, which 1.1 never counts),
# so only trial 5, whose two resources share a node, is counted whole
like($result, qr/^5\|\d+\|stale, duplicate, parked, drained, parked at the end, dead-lettered, blocked at the end, newer and older states, hot resources$/m,
	'... and trial 5 went through every kind of decision')
  or diag $result;

# 3. The transaction rules
sql($coord, q{
	CREATE TABLE tx_view (resource_id text PRIMARY KEY, seq bigint NOT NULL);
	SELECT create_distributed_table('tx_view', 'resource_id', shard_count => 4);
	CREATE FUNCTION tx_apply(r text, s bigint, p jsonb) RETURNS void LANGUAGE sql AS $$
	    INSERT INTO tx_view VALUES (r, s) ON CONFLICT (resource_id) DO UPDATE SET seq = EXCLUDED.seq $$;
	SELECT ordering.distribute_consumer('tx', 'tx_view');
});
# two resources whose shards are on different workers
my ($ra, $rb) = split /\|/, sql($coord, q{
	WITH r AS (SELECT 'tx-' || i AS resource_id,
	                  (SELECT nodeport FROM citus_shards
	                    WHERE shardid = get_shard_id_for_distribution_column('tx_view', 'tx-' || i)) AS port
	             FROM generate_series(1, 50) i)
	SELECT (SELECT min(resource_id) FROM r WHERE port = (SELECT min(port) FROM r)),
	       (SELECT min(resource_id) FROM r WHERE port = (SELECT max(port) FROM r))});
($code, $out, $err) = $coord->psql('postgres', qq{
	SET citus.log_remote_commands = on;
	BEGIN;
	SELECT ordering.deliver('tx', '$ra', 1, '{}', 'tx_apply(text,bigint,jsonb)');
	SELECT ordering.apply_if_newer('tx', '$rb', 5);
	COMMIT;
});
is(scalar(() = $err =~ /issuing PREPARE TRANSACTION/g), 2,
	'a transaction delivering on two workers commits with two-phase commit');
is(sql($coord, qq{
	SELECT ordering.position('tx', '$ra') || ' ' || ordering.position('tx', '$rb');
	SELECT seq FROM tx_view WHERE resource_id = '$ra'}), "1 5\n1",
	'... and both calls and the handler\'s write are there');
# a consumer function inside a query that Citus sends to a worker (a router
# query on a table of that worker's shard) cannot reach another node
($code, $out, $err) = $coord->psql('postgres', qq{
	\\set VERBOSITY verbose
	SELECT ordering.position('tx', '$rb') FROM tx_view WHERE resource_id = '$ra'});
like($err, qr/0A000: a call of distributed consumer "tx" cannot be made from a query that Citus runs on another node/,
	'a call carried to another node by a router query is refused (0A000)');
sql($coord, qq{
	BEGIN;
	SELECT ordering.deliver('tx', '$ra', 2, '{}', 'tx_apply(text,bigint,jsonb)');
	SELECT ordering.apply_if_newer('tx', '$rb', 9);
	SELECT * FROM ordering.deliver('tx', '$rb', 7, '{}');
	ROLLBACK;
});
is(sql($coord, qq{
	SELECT ordering.position('tx', '$ra') || ' ' || ordering.position('tx', '$rb');
	SELECT seq FROM tx_view WHERE resource_id = '$ra';
	SELECT count(*) FROM ordering_internal.${\ tx_tag()}_parked}), "1 5\n1\n0",
	'a rollback undoes the calls on both workers');
sub tx_tag
{
	return sql($coord,
		q{SELECT tag FROM ordering_internal.distributed_consumers WHERE consumer = 'tx'});
}

# prepared statements: past the plan cache's custom plans too
is(sql($coord, q{
	PREPARE d(text, bigint) AS SELECT ordering.deliver('tx', $1, $2, '{}', 'tx_apply(text,bigint,jsonb)');
	EXECUTE d('tx-p', 1); EXECUTE d('tx-p', 2); EXECUTE d('tx-p', 3); EXECUTE d('tx-p', 4);
	EXECUTE d('tx-p', 5); EXECUTE d('tx-p', 6); EXECUTE d('tx-p', 7); EXECUTE d('tx-p', 8);
	SELECT ordering.position('tx', 'tx-p');
}), "1\n1\n1\n1\n1\n1\n1\n1\n8", 'a prepared statement delivers through its generic plan too');

# a shard group on the coordinator: the call runs there, in the session,
# and a transaction that also writes on a worker commits in two phases
my ($cshard, $cport) = split /\|/, sql($coord, qq{
	SELECT shardid, nodeport FROM citus_shards
	 WHERE shardid = get_shard_id_for_distribution_column('tx_view', '$ra')});
$cluster->clean_orphans;
sql($coord, qq{
	SELECT citus_set_node_property('${\ $coord->host}', ${\ $coord->port}, 'shouldhaveshards', true);
	SELECT citus_move_shard_placement($cshard, '${\ $coord->host}', $cport,
	       '${\ $coord->host}', ${\ $coord->port}, 'block_writes');
});
($code, $out, $err) = $coord->psql('postgres', qq{
	SET citus.log_remote_commands = on;
	BEGIN;
	SELECT * FROM ordering.deliver('tx', '$ra', 3, '{}');
	SELECT * FROM ordering.deliver('tx', '$ra', 2, '{}');
	SELECT ordering.deliver('tx', '$rb', 6, '{}', 'tx_apply(text,bigint,jsonb)');
	COMMIT;
});
is($code, 0, 'a call for a resource on the coordinator runs there');
like($err, qr/issuing PREPARE TRANSACTION/,
	'... and its transaction, which wrote on a worker too, commits in two phases');
is(sql($coord, qq{
	SELECT ordering.position('tx', '$ra') || ' ' || ordering.position('tx', '$rb')}), '3 6',
	'... with every call done');
($code, $out, $err) = $coord->psql('postgres', qq{
	SET citus.enable_local_execution = off;
	SELECT ordering.apply_if_newer('tx', '$ra', 10);
});
like($err, qr/citus.enable_local_execution is off/,
	'without local execution, a call for a resource on the coordinator is refused');

# the newer_only guard on a distributed projection (its trigger needs
# citus.enable_unsafe_triggers), before and after a move of its shard
sql($coord, q{
	CREATE TABLE tx_state (resource_id text PRIMARY KEY, version bigint NOT NULL, v text);
	SELECT create_distributed_table('tx_state', 'resource_id', colocate_with => 'tx_view');
	SET citus.enable_unsafe_triggers = on;
	CREATE TRIGGER newer_only BEFORE UPDATE ON tx_state
	    FOR EACH ROW EXECUTE FUNCTION ordering.newer_only('version', 'tx');
});
my $upsert = q{INSERT INTO tx_state VALUES ('tx-s', %d, '%d')
	ON CONFLICT (resource_id) DO UPDATE SET version = EXCLUDED.version, v = EXCLUDED.v};
sql($coord, sprintf($upsert, 5, 5) . ';' . sprintf($upsert, 3, 3));
my ($sshard, $sport) = split /\|/, sql($coord, q{
	SELECT shardid, nodeport FROM citus_shards
	 WHERE shardid = get_shard_id_for_distribution_column('tx_state', 'tx-s')});
$cluster->clean_orphans;
sql($coord, qq{
	SELECT citus_move_shard_placement($sshard, '${\ $coord->host}', $sport,
	       '${\ $coord->host}', ${\ ($sport == $worker3->port ? $worker1->port : $worker3->port)},
	       'force_logical')});
sql($coord, sprintf($upsert, 4, 4) . ';' . sprintf($upsert, 8, 8));
is(sql($coord, q{SELECT version || ' ' || v FROM tx_state}), '8 8',
	'newer_only skips older versions on a distributed projection, also after a move');

# a handler may not call for another resource: it runs on that resource's
# node, with Citus's force delegation
sql($coord, q{
	CREATE FUNCTION tx_nested(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
	    PERFORM ordering.apply_if_newer('tx', r || '-other', s);
	END $$;
});
($code, $out, $err) = $coord->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT ordering.deliver('tx', 'tx-n', 1, '{}', 'tx_nested(text,bigint,jsonb)')});
like($err, qr/0A000: a handler of distributed consumer "tx" cannot call the consumer functions for another consumer or resource/,
	'a handler calling for another resource is refused (0A000)');

# the parking cap of the node that runs the call: SQLSTATE 54000 comes back
# (Citus runs ALTER DATABASE ... SET on the workers)
sql($coord, q{ALTER DATABASE postgres SET ordering.max_parked_per_resource = 2});
($code, $out, $err) = $coord->psql('postgres', q{
	\set VERBOSITY verbose
	SELECT * FROM ordering.deliver('tx', 'tx-cap', 3, '{}');
	SELECT * FROM ordering.deliver('tx', 'tx-cap', 4, '{}');
	SELECT * FROM ordering.deliver('tx', 'tx-cap', 5, '{}');
});
like($err, qr/54000: too many events parked for consumer "tx" and resource "tx-cap"/,
	'the parking cap is refused with 54000 from the worker');
sql($coord, q{ALTER DATABASE postgres RESET ordering.max_parked_per_resource});

# 4. Privileges: the consumers' rules of sql/privileges.sql, on a cluster.
# A role without the consumer set (a producer here) can neither call the
# consumer functions of a distributed consumer (on the coordinator, on a
# worker, or through the consumer's call and batch functions themselves)
# nor read or write its tables; a role with the consumer set consumes
# (through the coordinator, where the calls are made), and reads the
# tables, but writes them through the functions only, as ordering.positions
# on one node.  The roles get their sets from the grant functions on the
# coordinator before the consumer is distributed (docs/citus.md).
sql($coord, q{
	CREATE ROLE priv_consumer LOGIN;
	CREATE ROLE priv_producer LOGIN;
});
sql($coord, q{
	SELECT ordering.grant_consumer('priv_consumer');
	SELECT ordering.grant_producer('priv_producer');
});
# the coordinator has shards since the tests above: a projection of its own
# gets one there too
sql($coord, q{
	CREATE TABLE priv_view (resource_id text PRIMARY KEY, seq bigint);
	SELECT create_distributed_table('priv_view', 'resource_id', colocate_with => 'none',
	                                shard_count => 4);
	SELECT ordering.distribute_consumer('priv', 'priv_view');
});
my $ptag = sql($coord,
	q{SELECT tag FROM ordering_internal.distributed_consumers WHERE consumer = 'priv'});
# a resource on the coordinator ($pa), one on a worker ($pb)
my ($pa, $pb) = split /\|/, sql($coord, qq{
	WITH r AS (SELECT 'priv-' || i AS resource_id,
	                  (SELECT nodeport FROM citus_shards
	                    WHERE shardid = get_shard_id_for_distribution_column('priv_view', 'priv-' || i)) AS port
	             FROM generate_series(1, 50) i)
	SELECT (SELECT min(resource_id) FROM r WHERE port = ${\ $coord->port}),
	       (SELECT min(resource_id) FROM r WHERE port <> ${\ $coord->port})});
my %by_port = map { ($_->port => $_) } $cluster->nodes;
my $pb_node = $by_port{ sql($coord, qq{
	SELECT nodeport FROM citus_shards
	 WHERE shardid = get_shard_id_for_distribution_column('priv_view', '$pb')}) };
ok($pa ne '' && $pb ne '' && $pb_node->port != $coord->port,
	"consumer priv has resource $pa on the coordinator, $pb on a worker (" . $pb_node->name . ')');

sub psql_as
{
	my ($node, $user, $query) = @_;
	return $node->psql('postgres', "\\set VERBOSITY verbose\n$query",
		on_error_stop => 1, extra_params => [ '-U', $user ]);
}
sub is_as
{
	my ($node, $user, $query, $expected, $name) = @_;
	my ($ret, $out, $err) = psql_as($node, $user, $query);
	is($ret, 0, "$name: runs") or diag $err;
	is($out, $expected, $name);
	return;
}
sub refused_as
{
	my ($node, $user, $query, $pattern, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	fails_as($node, $user, $query, '42501', qr/ERROR:\s+42501: $pattern/, $name);
	return;
}

# the consumer set consumes, through the coordinator, a resource on a worker
# and one on the coordinator itself (a call for a resource on the caller's
# node tells Citus of its write with a statement of its own, which runs as
# the owner of the consumer's tables: the set may not write them with SQL)
is_as($coord, 'priv_consumer', qq{
	SELECT ordering.apply_if_newer('priv', '$pa', 1), ordering.apply_if_newer('priv', '$pb', 1);
	SELECT count(*) FROM ordering.deliver('priv', '$pa', 2, '{}');
	SELECT count(*) FROM ordering.deliver('priv', '$pb', 2, '{}');
	SELECT count(*) FROM ordering.deliver_batch('priv', ARRAY['$pa', '$pb'], ARRAY[3, 3]::bigint[],
	                                            ARRAY['{}', '{}']::jsonb[]);
	SELECT count(*) FILTER (WHERE applied) FROM ordering.apply_batch('priv', ARRAY['$pa', '$pb'], ARRAY[4, 4]::bigint[]);
	SELECT ordering.position('priv', '$pa') || ' ' || ordering.position('priv', '$pb');
}, "t|t\n1\n1\n2\n2\n4 4", 'the consumer set consumes a distributed consumer through the coordinator');
my $positions = qq{SELECT string_agg(resource_id || ':' || position, ',' ORDER BY resource_id <> '$pa', resource_id)
                     FROM ordering_internal.${ptag}_positions};
my $positions_before = sql($coord, $positions);
is($positions_before, "$pa:4,$pb:4", 'the positions the calls moved');

# what a role may do to the consumer's tables with SQL, on the coordinator,
# on the worker, and on the worker's shard of positions
my $pshard = sql($pb_node, qq{
	SELECT pg_catalog.shard_name('ordering_internal.${ptag}_positions'::regclass,
	                             get_shard_id_for_distribution_column('ordering_internal.${ptag}_positions', '$pb'),
	                             false)});
my @places = ([ $coord, '' ], [ $pb_node, '' ], [ $pb_node, $pshard ]);
for my $place (@places)
{
	my ($node, $shard) = @$place;
	for my $suffix ('_positions', '_parked', '_dead_letters', '_gap_requests')
	{
		my $rel = $shard && $suffix eq '_positions' ? $shard : "ordering_internal.$ptag$suffix";
		next if $shard && $suffix ne '_positions';
		my $where = "$rel on " . $node->name;
		my $denied = 'permission denied for table';
		is_as($node, 'priv_consumer', qq{SELECT count(*) >= 0 FROM $rel}, 't',
			"the consumer set reads $where");
		refused_as($node, 'priv_consumer', qq{UPDATE $rel SET consumer = consumer},
			$denied, "the consumer set cannot UPDATE $where");
		refused_as($node, 'priv_consumer', qq{DELETE FROM $rel},
			$denied, "the consumer set cannot DELETE from $where");
		refused_as($node, 'priv_consumer', qq{INSERT INTO $rel SELECT * FROM $rel},
			$denied, "the consumer set cannot INSERT into $where");
		refused_as($node, 'priv_producer', qq{SELECT count(*) FROM $rel},
			$denied, "a role without the consumer set cannot read $where");
		refused_as($node, 'priv_producer', qq{UPDATE $rel SET consumer = consumer},
			$denied, "a role without the consumer set cannot UPDATE $where");
		refused_as($node, 'priv_producer', qq{DELETE FROM $rel},
			$denied, "a role without the consumer set cannot DELETE from $where");
	}
}
# operators' actions are not the consumer set's
refused_as($coord, 'priv_consumer', qq{SELECT * FROM ordering.skip_gap('priv', '$pb')},
	'permission denied for function skip_gap', 'the consumer set cannot skip a gap');

# a role without the consumer set calls nothing of the consumer, on the
# coordinator or on the worker, nor the call and batch functions
# (executable by every role: they check the consumer function they stand
# for), directly
for my $node ($coord, $pb_node)
{
	my $on = ' on ' . $node->name;
	for my $call (
		[ qq{SELECT ordering.apply_if_newer('priv', '$pb', 9)}, 'apply_if_newer' ],
		[ qq{SELECT * FROM ordering.deliver('priv', '$pb', 9, '{}')}, 'deliver' ],
		[ qq{SELECT ordering.deliver('priv', '$pb', 9, '{}', 'tx_apply(text,bigint,jsonb)')}, 'deliver' ],
		[ qq{SELECT * FROM ordering.deliver_batch('priv', ARRAY['$pb'], ARRAY[9]::bigint[], ARRAY['{}']::jsonb[])},
		  'deliver_batch' ],
		[ qq{SELECT ordering.deliver_batch('priv', ARRAY['$pb'], ARRAY[9]::bigint[], ARRAY['{}']::jsonb[],
		                                   'tx_apply(text,bigint,jsonb)')}, 'deliver_batch' ],
		[ qq{SELECT * FROM ordering.apply_batch('priv', ARRAY['$pb'], ARRAY[9]::bigint[])}, 'apply_batch' ],
		[ qq{SELECT ordering.position('priv', '$pb')}, 'position' ],
		[ qq{SELECT * FROM ordering_internal.${ptag}_call('a', '$pb', 'priv', 9, NULL, NULL, NULL)},
		  'ordering\.apply_if_newer\(text,text,bigint\)' ],
		[ qq{SELECT * FROM ordering_internal.${ptag}_call('d', '$pb', 'priv', 9, '{}', NULL, NULL)},
		  'ordering\.deliver\(text,text,bigint,jsonb\)' ],
		[ qq{SELECT * FROM ordering_internal.${ptag}_batch('A', '$pb', 'priv', ARRAY[1], ARRAY['$pb'],
		                                                   ARRAY[9]::bigint[], NULL, NULL, NULL)},
		  'ordering\.apply_batch\(text,text\[\],bigint\[\]\)' ],
		[ qq{SELECT * FROM ordering_internal.${ptag}_batch('b', '$pb', 'priv', ARRAY[1], ARRAY['$pb'],
		                                                   ARRAY[9]::bigint[], ARRAY['{}']::jsonb[], NULL, NULL)},
		  'ordering\.deliver_batch\(text,text\[\],bigint\[\],jsonb\[\]\)' ])
	{
		my ($query, $fn) = @$call;
		refused_as($node, 'priv_producer', $query, "permission denied for function $fn",
			"a role without the consumer set: $query$on");
	}
}
is(sql($coord, $positions), $positions_before,
	'the refused calls and statements moved no position');

$cluster->stop;
done_testing();
