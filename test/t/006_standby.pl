# A physical standby (streaming, asynchronous): every write path of the
# extension fails there with SQLSTATE 25006 and the reads work, giving what
# the primary committed.  After a promotion, producing and consuming go on
# after the numbers the standby had replayed, and the gap sweeper starts.  A
# standby that had not replayed the primary's last commits hands their
# numbers out again once promoted: asynchronous replication can lose them
# (docs/replicas.md); a counter row inserted raises the counter past them, and
# a consumer database loses positions and applied rows together.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$primary->start;
$primary->safe_psql('postgres', 'CREATE DATABASE app');
$primary->safe_psql('app', q{
	CREATE EXTENSION ordering;
	-- producer: the outbox, an attached table, a next_sequence() stream
	SELECT ordering.emit('r1', 'e', jsonb_build_object('n', i)) FROM generate_series(1, 5) i;
	SELECT ordering.emit('r2', 'e', '{}');
	CREATE TABLE accounts_v (account text NOT NULL, version bigint NOT NULL);
	SELECT ordering.attach('accounts_v', 'account', 'version');
	INSERT INTO accounts_v (account) VALUES ('a'), ('a');
	SELECT ordering.next_sequence('invoices', 'shop') FROM generate_series(1, 3);
	CREATE TABLE plain_t (r text, s bigint);
	-- consumer: a state consumer, a step consumer with 3 parked behind 2
	SELECT ordering.apply_if_newer('billing', 'r1', 2);
	CREATE TABLE applied (resource_id text, seq bigint, payload jsonb);
	CREATE FUNCTION apply_event(r text, s bigint, p jsonb) RETURNS void
	    LANGUAGE sql AS $$ INSERT INTO applied VALUES (r, s, p) $$;
	INSERT INTO applied SELECT 'r1', seq, payload FROM ordering.deliver('ledger', 'r1', 1, '{}');
	INSERT INTO applied SELECT 'r1', seq, payload FROM ordering.deliver('ledger', 'r1', 3, '{"n": 3}');
	INSERT INTO applied SELECT 'r5', seq, payload FROM ordering.deliver('ledger', 'r5', 1, '{}');
	SELECT ordering.apply_if_newer('billing', 'r5', 1);
	-- a dead letter: r6 is blocked at 1
	SELECT ordering.dead_letter('ledger', 'r6', 1, '{}', 'cannot apply');
});

$primary->backup('base');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'base', has_streaming => 1);
$standby->start;
my $behind = PostgreSQL::Test::Cluster->new('behind');
$behind->init_from_backup($primary, 'base', has_streaming => 1);
$behind->start;
$primary->wait_for_catchup($standby);
$primary->wait_for_catchup($behind);
is($standby->safe_psql('app', 'SELECT pg_is_in_recovery()'), 't', 'the standby is in recovery');

# Run $sql on $node; returns its SQLSTATE ('00000' when it succeeded) and
# the error message.
sub sqlstate
{
	my ($node, $sql) = @_;
	my ($ret, $out, $err) = $node->psql('app', "$sql;\n\\echo SQLSTATE :SQLSTATE",
		on_error_stop => 0);
	my ($state) = $out =~ /SQLSTATE (\w+)\s*$/;
	return ($state // "none ($err)", $err);
}

# Every write path, with the data of the primary above.
my @writes = (
	[ 'emit, next number', q{SELECT ordering.emit('r1', 'e', '{}')} ],
	[ 'emit, new resource', q{SELECT ordering.emit('r9', 'e', '{}')} ],
	[ 'emit with expected_seq', q{SELECT ordering.emit('r1', 'e', '{}', 6)} ],
	[ 'INSERT into an attached table', q{INSERT INTO accounts_v (account) VALUES ('a')} ],
	[ 'INSERT of a supplied number', q{INSERT INTO accounts_v VALUES ('a', 3)} ],
	[ 'next_sequence', q{SELECT ordering.next_sequence('invoices', 'shop')} ],
	[ 'next_sequence, new stream', q{SELECT ordering.next_sequence('other', 'x')} ],
	[ 'apply_if_newer, newer', q{SELECT ordering.apply_if_newer('billing', 'r1', 3)} ],
	[ 'apply_if_newer, stale', q{SELECT ordering.apply_if_newer('billing', 'r1', 1)} ],
	[ 'apply_if_newer, new consumer', q{SELECT ordering.apply_if_newer('audit', 'r1', 1)} ],
	[ 'deliver, in order', q{SELECT * FROM ordering.deliver('ledger', 'r1', 2, '{}')} ],
	[ 'deliver, early', q{SELECT * FROM ordering.deliver('ledger', 'r1', 5, '{}')} ],
	[ 'deliver, duplicate', q{SELECT * FROM ordering.deliver('ledger', 'r1', 1, '{}')} ],
	[ 'deliver with a handler, in order',
	  q{SELECT ordering.deliver('ledger', 'r1', 2, '{}', 'apply_event(text, bigint, jsonb)')} ],
	[ 'deliver with a handler, early',
	  q{SELECT ordering.deliver('ledger', 'r1', 6, '{}', 'apply_event(text, bigint, jsonb)')} ],
	[ 'deliver, dead-lettering form',
	  q{SELECT ordering.deliver('ledger', 'r1', 2, '{}', 'apply_event(text, bigint, jsonb)', 'dead_letter')} ],
	[ 'skip_gap', q{SELECT * FROM ordering.skip_gap('ledger', 'r1')} ],
	[ 'dead_letter', q{SELECT ordering.dead_letter('ledger', 'r7', 1, '{}', 'cannot apply')} ],
	[ 'retry_dead_letter', q{SELECT * FROM ordering.retry_dead_letter('ledger', 'r6')} ],
	[ 'retry_dead_letter with a handler',
	  q{SELECT ordering.retry_dead_letter('ledger', 'r6', 'apply_event(text, bigint, jsonb)')} ],
	[ 'discard_dead_letter', q{SELECT * FROM ordering.discard_dead_letter('ledger', 'r6')} ],
	[ 'sweep_gaps', q{SELECT * FROM ordering.sweep_gaps()} ],
	[ 'claim_unpublished', q{SELECT * FROM ordering.claim_unpublished(10)} ],
	[ 'claim_unpublished, replicated',
	  q{SELECT * FROM ordering.claim_unpublished(10, replicated => true)} ],
	[ 'mark_published', q{SELECT ordering.mark_published(ARRAY[1, 2])} ],
	[ 'republish', q{SELECT ordering.republish('r1', 1)} ],
	[ 'purge_published', q{SELECT ordering.purge_published('0')} ],
	[ 'attach', q{SELECT ordering.attach('plain_t', 'r', 's')} ],
	[ 'detach', q{SELECT ordering.detach('accounts_v')} ],
	[ 'pre_restore', q{SELECT ordering.pre_restore()} ],
	[ 'post_restore', q{SELECT ordering.post_restore()} ]);

foreach my $w (@writes)
{
	my ($name, $sql) = @$w;
	my ($state, $err) = sqlstate($standby, $sql);
	is($state, '25006', "standby: $name fails with 25006") or diag($err);
	like($err, qr/cannot execute ordering\.sweep_gaps\(\) during recovery/,
		'standby: the error names sweep_gaps()') if $name eq 'sweep_gaps';
	# the same call in a read-only transaction of the primary
	($state, $err) = sqlstate($primary, "BEGIN READ ONLY;\n$sql");
	is($state, '25006', "primary, read-only transaction: $name fails with 25006") or diag($err);
	like($err, qr/cannot execute ordering\.sweep_gaps\(\) in a read-only transaction/,
		'primary, read-only transaction: the error names sweep_gaps()') if $name eq 'sweep_gaps';
}

# Reads work on the standby and show what the primary committed.
my $reads = q{
	SELECT ordering.position('billing', 'r1'), ordering.position('ledger', 'r1'),
	       ordering.position('ledger', 'nothing'),
	       ordering.last_sequence('ordering.outbox', 'r1'),
	       ordering.last_sequence('public.accounts_v', 'a'),
	       ordering.last_sequence('invoices', 'shop'),
	       ordering.last_sequence('invoices', 'nothing'),
	       (SELECT string_agg(format('%s/%s/%s', consumer, resource_id, seq), ' ')
	          FROM ordering.parked),
	       (SELECT count(*) FROM ordering.outbox WHERE published_at IS NULL)};
my $on_primary = $primary->safe_psql('app', $reads);
is($on_primary, '2|1|0|5|2|3|0|ledger/r1/3|6', 'primary: positions, counters, parked');
is($standby->safe_psql('app', $reads), $on_primary,
	'standby: position(), last_sequence() and the tables read as on the primary');
is($standby->safe_psql('app', q{
	SELECT (SELECT count(*) >= 0 FROM ordering.stats) AND
	       (SELECT count(*) >= 0 FROM ordering.stream_stats) AND
	       (SELECT count(*) = 0 FROM ordering.open_gaps) AND
	       (SELECT count(*) = 1 FROM ordering.dead_letters) AND
	       (SELECT count(*) = 0 FROM ordering.check()) AND
	       ordering.metrics() LIKE '%# TYPE ordering_events_consumed_total counter%'}),
	't', 'standby: the statistics views, metrics(), open_gaps, dead_letters and check() read');
# The counters of the statistics are each server's own; parked_current is
# read from the replicated table.
my $stats_sql = q{SELECT sum(events_consumed) || ' ' || sum(parked_current) FROM ordering.stats};
like($primary->safe_psql('app', $stats_sql), qr/^[1-9]\d* 1$/,
	'primary: the consumers are counted, one event is parked');
is($standby->safe_psql('app', $stats_sql), '0 1',
	'standby: ordering.stats counts what ran on the standby (nothing), and the parked event');

# The primary's last commits that one standby never receives.
$behind->stop;
$primary->safe_psql('app', q{
	SELECT ordering.emit('r1', 'e', '{"lost": true}') FROM generate_series(1, 3);
	SELECT ordering.next_sequence('invoices', 'shop');
	INSERT INTO applied SELECT 'r5', seq, payload FROM ordering.deliver('ledger', 'r5', 2, '{}');
	SELECT ordering.apply_if_newer('billing', 'r5', 2);});
$primary->wait_for_catchup($standby);
my $last = $primary->safe_psql('app', q{
	SELECT ordering.last_sequence('ordering.outbox', 'r1') || ' ' ||
	       ordering.last_sequence('invoices', 'shop')});
is($last, '8 4', 'primary: the last numbers');

# The primary fails; the standby that replayed everything is promoted.
$primary->stop;
$standby->promote;
is($standby->safe_psql('app', 'SELECT pg_is_in_recovery()'), 'f', 'the standby is promoted');
$standby->append_conf('postgresql.conf', q{
ordering.sweep_databases = 'app'
ordering.sweep_interval = '1s'
ordering.gap_deadline = '1s'
});
$standby->reload;

# Producing continues after the last numbers.
is($standby->safe_psql('app', q{
	SELECT ordering.emit('r1', 'e', '{}') || ' ' || ordering.emit('r2', 'e', '{}') || ' ' ||
	       ordering.emit('r3', 'e', '{}') || ' ' ||
	       ordering.next_sequence('invoices', 'shop') || ' ' ||
	       ordering.next_sequence('other', 'x')}),
	'9 2 1 5 1', 'promoted: emit and next_sequence continue after the last numbers');
is($standby->safe_psql('app', q{
	INSERT INTO accounts_v (account) VALUES ('a'), ('b') RETURNING account || version}),
	"a3\nb1", 'promoted: an attached table continues its stream');
is((sqlstate($standby, q{INSERT INTO accounts_v VALUES ('a', 3)}))[0], '40001',
	'promoted: a supplied number is asserted again');

# Consuming continues: the parked event drains, a state event applies, a
# new gap is parked and swept by the worker, which starts at promotion.
is($standby->safe_psql('app', q{
	SELECT string_agg(seq::text, ',') FROM ordering.deliver('ledger', 'r1', 2, '{}')}),
	'2,3', 'promoted: an in-order event drains the parked one behind it');
is($standby->safe_psql('app', q{
	SELECT ordering.apply_if_newer('billing', 'r1', 3)::text || ' ' ||
	       ordering.apply_if_newer('billing', 'r1', 2)::text}),
	'true false', 'promoted: apply_if_newer applies the newer event, not the stale one');
is($standby->safe_psql('app', q{
	SELECT ordering.deliver('ledger', 'r2', 3, '{}', 'apply_event(text, bigint, jsonb)')}),
	'0', 'promoted: an early event is parked');
ok($standby->poll_query_until('app', q{
	SELECT count(*) = 1 FROM ordering.gap_requests
	 WHERE consumer = 'ledger' AND resource_id = 'r2' AND missing_from = 1 AND missing_to = 2}),
	'promoted: the gap sweeper requests the missing events');

# The standby that had not replayed the last commits, promoted instead,
# hands their numbers out again, to other events.
$behind->start;
$behind->promote;
is($behind->safe_psql('app', q{
	SELECT ordering.last_sequence('ordering.outbox', 'r1') || ' ' ||
	       ordering.last_sequence('invoices', 'shop')}),
	'5 3', 'behind: it had replayed only up to 5 and 3');
is($behind->safe_psql('app', q{
	SELECT ordering.emit('r1', 'e', '{"after": "promotion"}') || ' ' ||
	       ordering.next_sequence('invoices', 'shop')}),
	'6 4', 'behind, promoted: numbers 6 and 4, which the lost commits also had');
is($standby->safe_psql('app', q{SELECT payload FROM ordering.outbox WHERE resource_id = 'r1' AND seq = 6}),
	'{"lost": true}', 'the old primary gave 6 to another event');
# A counter is raised past numbers known to be used by inserting a counter
# row: it merges, keeping the higher value.
is($behind->safe_psql('app', q{
	INSERT INTO ordering.sequences VALUES ('ordering.outbox', 'r1', 8), ('invoices', 'shop', 2);
	SELECT ordering.emit('r1', 'e', '{}') || ' ' || ordering.next_sequence('invoices', 'shop')}),
	'9 5', 'behind, promoted: a counter row inserted raises the counter, never lowers it');
# On the consumer side the lost commits took their positions and their
# applied rows with them: the events are missing as a whole, and delivered
# again they apply.
is($behind->safe_psql('app', q{
	SELECT ordering.position('ledger', 'r5') || ' ' || ordering.position('billing', 'r5') || ' ' ||
	       (SELECT count(*) FROM applied WHERE resource_id = 'r5')}),
	'1 1 1', 'behind, promoted: positions and applied rows of the lost commits are both gone');
is($behind->safe_psql('app', q{
	SELECT (SELECT string_agg(seq::text, ',') FROM ordering.deliver('ledger', 'r5', 2, '{}')) || ' ' ||
	       ordering.apply_if_newer('billing', 'r5', 2)::text}),
	'2 true', 'behind, promoted: the lost events apply when delivered again');

$standby->stop;
$behind->stop;
done_testing();
