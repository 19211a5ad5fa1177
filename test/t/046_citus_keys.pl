# Tenant keys of other types than text on a Citus cluster (a coordinator
# and two workers): outboxes distributed by bigint, uuid, varchar, citext
# and a domain over bigint, co-located with the tenants' own table.
#
# attach() gives each stream a counter table distributed by a column of the
# resource column's type, co-located with the outbox; every tenant is then
# numbered 1..N through single rows, multi-row inserts, COPY and INSERT ...
# SELECT, on the coordinator and on a worker, through a shard move; the
# counters agree with last_sequence() and next_sequence() on every node, a
# table filled before attach() continues after its numbers, and check() is
# clean.  A transaction that writes a tenant's row and its event commits on
# one node, without two-phase commit (a text copy of the key, not
# co-located, needs it).  What stays refused: a numeric resource (0A000) and
# a second table of a stream with another key type (42804).
#
# Consumers distributed with a projection keyed by bigint, uuid, citext,
# smallint, integer, varchar or a domain without constraints over bigint
# or uuid (1.2 refused them with 22004; numeric and domains with a CHECK
# or NOT NULL constraint stay refused, and a constraint added later stops
# the calls with 0A000, an id it refuses failing with 23514): their
# tables are distributed by a column of that type, co-located with the
# projection;
# events delivered in and out of order on resources of every shard, parked
# and drained, in batches, a dead letter discarded, a gap swept and
# skipped; a handler that writes the projection in the call's transaction
# commits on one node without two-phase commit; ids the type does not
# read, or writes otherwise, are refused (22P02); the coordinator's views,
# check() and reconciliation see them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use OrderingCitus qw(sql fails);

OrderingCitus::skip_unless_citus();

my $cluster = OrderingCitus->new('citus_keys', workers => 2);
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;

my $has_citext = sql($coord,
	q{SELECT count(*) FROM pg_available_extensions WHERE name = 'citext'});

# ---------------------------------------------------------------------------
# The tables: tenants and their outboxes, one per key type.  The tenant of
# number i is key(i): i itself, a uuid made of i, 't' || i.
# ---------------------------------------------------------------------------
my %key = (
	big => sub { "$_[0]" },
	int => sub { "$_[0]" },
	dom => sub { "$_[0]" },
	uuid => sub { sprintf("00000000-0000-0000-0000-%012d", $_[0]) },
	vc => sub { "t$_[0]" },
	ci => sub { "T$_[0]" },
);
my %type = (big => 'bigint', int => 'integer', dom => 'tenant_id',
	uuid => 'uuid', vc => 'varchar(40)', ci => 'citext');
my @kinds = qw(big int dom uuid vc);
push @kinds, 'ci' if $has_citext;

sql($coord, q{CREATE EXTENSION IF NOT EXISTS citext}) if $has_citext;
sql($coord, q{CREATE DOMAIN tenant_id AS bigint CHECK (VALUE > 0)});
for my $k (@kinds)
{
	sql($coord, qq{
		SET citus.shard_count = 4;
		CREATE TABLE tenants_$k (id $type{$k} PRIMARY KEY, name text);
		SELECT create_distributed_table('tenants_$k', 'id');
		CREATE TABLE ev_$k (id bigserial, tenant $type{$k} NOT NULL, seq bigint,
		                    payload text, PRIMARY KEY (tenant, id));
		SELECT create_distributed_table('ev_$k', 'tenant', colocate_with => 'tenants_$k');
		SELECT ordering.attach('ev_$k', 'tenant', 'seq');
	});
	ok(1, "attach() of an outbox distributed by $type{$k}");
	is(sql($coord, qq{
		SELECT c.colocationid = t.colocationid
		       AND column_to_column_name(c.logicalrelid, c.partkey) = 'resource_value'
		  FROM pg_dist_partition c, pg_dist_partition t
		 WHERE c.logicalrelid = ordering_internal.distributed_counters('public.ev_$k')
		   AND t.logicalrelid = 'tenants_$k'::regclass}), 't',
		"$type{$k}: the counters are distributed by resource_value, co-located with the tenants");
}

# The numbers of each tenant of an outbox: 1..N (rows inserted on a worker
# take ids from another range: no order by id).
sub numbered
{
	my ($k, $name) = @_;
	is(sql($coord, qq{
		SELECT count(*) FROM ev_$k
		 WHERE ordering.resource_key(tenant) <> '424242'   -- next_sequence() took its 1
		 GROUP BY ordering.resource_key(tenant)
		HAVING count(*) <> count(DISTINCT seq) OR min(seq) <> 1 OR max(seq) <> count(*)}),
		'', "$type{$k}: $name: every tenant numbered 1..N");
	is(sql($coord, qq{
		SELECT count(*) FROM (SELECT ordering.resource_key(tenant) AS k, max(seq) AS hi
		                        FROM ev_$k GROUP BY 1) x
		 WHERE ordering.last_sequence('public.ev_$k', x.k) <> x.hi}),
		'0', "$type{$k}: $name: last_sequence() is each tenant's highest number");
	return;
}

# Single rows and multi-row inserts through the coordinator, single rows
# through a worker, COPY, INSERT ... SELECT (pulled to the coordinator and
# pushed down from a co-located table).
for my $k (@kinds)
{
	my @t = map { $key{$k}->($_) } 1 .. 6;
	sql($coord, "INSERT INTO ev_$k (tenant, payload) VALUES ('$_', 'one')") for @t[0 .. 2];
	sql($coord, "INSERT INTO ev_$k (tenant, payload) VALUES "
		  . join(', ', map { "('$_', 'multi')" } (@t, @t, @t[0 .. 1])));
	sql($w1, "INSERT INTO ev_$k (tenant, payload) VALUES ('$_', 'worker')") for @t[2 .. 5];
	sql($coord, "COPY ev_$k (tenant, payload) FROM stdin;\n"
		  . join('', map { "$_\tcopy\n" } (@t, @t[3 .. 5])) . "\\.\n");
	sql($coord, qq{INSERT INTO tenants_$k (id, name) VALUES }
		  . join(', ', map { "('$_', 'tenant')" } @t));
	sql($coord, qq{INSERT INTO ev_$k (tenant, payload)
		SELECT id, 'pushed down' FROM tenants_$k});
	sql($coord, qq{INSERT INTO ev_$k (tenant, payload)
		SELECT id, 'pulled' FROM tenants_$k ORDER BY id LIMIT 3});
	numbered($k, 'rows, multi-row, a worker, COPY, INSERT ... SELECT');
	is(sql($coord, qq{SELECT count(*) FROM ev_$k}), 3 + 14 + 4 + 9 + 6 + 3,
		"$type{$k}: every row stored");
}

# citext keeps its key: 'T1' and 't1' are two resources, in one shard
if ($has_citext)
{
	sql($coord, q{INSERT INTO ev_ci (tenant, payload) VALUES ('t1', 'lower')});
	is(sql($coord, q{SELECT seq FROM ev_ci WHERE tenant::text = 't1'}), '1',
		'citext: a resource that differs in case only has a counter of its own');
	numbered('ci', 'a resource differing in case');
}

# next_sequence() and last_sequence() of a typed stream, on every node
for my $node ($coord, $w2)
{
	my $last = sql($node, q{SELECT ordering.last_sequence('public.ev_uuid', '00000000-0000-0000-0000-000000000009')});
	is(sql($node, q{SELECT ordering.next_sequence('public.ev_uuid', '00000000-0000-0000-0000-000000000009')}),
		$last + 1, 'uuid: next_sequence() on ' . $node->name . ' continues the counter');
}
is(sql($w1, q{SELECT ordering.last_sequence('public.ev_uuid', '00000000-0000-0000-0000-000000000009')}),
	'2', 'uuid: last_sequence() on a worker reads what next_sequence() took on two nodes');
is(sql($coord, q{SELECT ordering.next_sequence('public.ev_big', '424242')}), '1',
	'bigint: next_sequence() of a new resource creates its counter');
is(sql($w1, q{SELECT ordering.last_sequence('public.ev_big', '424242')}), '1',
	'bigint: ... and last_sequence() on a worker reads it');
sql($coord, q{INSERT INTO ev_big (tenant, payload) VALUES (424242, 'after next_sequence')});
is(sql($coord, q{SELECT seq FROM ev_big WHERE tenant = 424242}), '2',
	'bigint: a row after next_sequence() takes the next number');

# ---------------------------------------------------------------------------
# One node, no two-phase commit: a tenant's row and its event in one
# transaction.  Citus logs the commands it sends; a transaction it prepares
# in two phases sends PREPARE TRANSACTION.
# ---------------------------------------------------------------------------
sub remote_commands
{
	my ($query) = @_;
	my ($ret, $out, $err) = $coord->psql('postgres', qq{
		SET citus.log_remote_commands = on;
		SET client_min_messages = notice;
		BEGIN;
		$query
		COMMIT;});
	die "the transaction failed: $err" if $ret != 0;
	return $err;
}
for my $k (qw(big uuid))
{
	my $t = $key{$k}->(77);
	my $log = remote_commands(qq{
		INSERT INTO tenants_$k (id, name) VALUES ('$t', 'new');
		INSERT INTO ev_$k (tenant, payload) VALUES ('$t', 'created');
		UPDATE tenants_$k SET name = 'renamed' WHERE id = '$t';
		INSERT INTO ev_$k (tenant, payload) VALUES ('$t', 'renamed');});
	like($log, qr/issuing .*INSERT INTO public\.ev_${k}_/, "$type{$k}: the transaction ran on a worker");
	unlike($log, qr/PREPARE TRANSACTION/,
		"$type{$k}: a tenant's row and its events commit on one node, without two-phase commit");
	is(sql($coord, qq{SELECT string_agg(seq::text, ',' ORDER BY id) FROM ev_$k WHERE tenant = '$t'}),
		'1,2', "$type{$k}: ... numbered 1, 2");
}
# the same with a text copy of the key, as 1.2 required: the outbox is not
# co-located with the tenants, and the transaction spans two nodes
sql($coord, q{
	CREATE TABLE ev_text (id bigserial, tenant text NOT NULL, seq bigint, payload text,
	                      PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('ev_text', 'tenant');
	SELECT ordering.attach('ev_text', 'tenant', 'seq');});
my $spans = 0;
for my $t (78 .. 90)
{
	my $log = remote_commands(qq{
		INSERT INTO tenants_big (id, name) VALUES ($t, 'new');
		INSERT INTO ev_text (tenant, payload) VALUES ('$t', 'created');});
	$spans++ if $log =~ /PREPARE TRANSACTION/;
}
ok($spans > 0, "a text copy of the key: $spans of 13 such transactions prepared in two phases");

# ---------------------------------------------------------------------------
# A shard move: the tenant's counters move with its rows
# ---------------------------------------------------------------------------
my ($w1h, $w1p, $w2h, $w2p) = ($w1->host, $w1->port, $w2->host, $w2->port);
for my $k (qw(big uuid vc))
{
	my $t = $key{$k}->(1);
	my ($shard, $port) = split /\|/, sql($coord, qq{
		SELECT s.shardid, p.nodeport FROM pg_dist_shard s JOIN pg_dist_shard_placement p USING (shardid)
		 WHERE s.shardid = get_shard_id_for_distribution_column('ev_$k', '$t')});
	my @to = $port == $w1p ? ($w1h, $w1p, $w2h, $w2p) : ($w2h, $w2p, $w1h, $w1p);
	$cluster->clean_orphans;
	sql($coord, qq{SELECT citus_move_shard_placement($shard, '$to[0]', $to[1], '$to[2]', $to[3], 'block_writes')});
	sql($coord, qq{INSERT INTO ev_$k (tenant, payload) VALUES ('$t', 'moved'), ('$t', 'moved')});
	sql($w1, qq{INSERT INTO ev_$k (tenant, payload) VALUES ('$t', 'moved, on a worker')});
	numbered($k, 'after a shard move');
}

# ---------------------------------------------------------------------------
# A table filled before attach() continues after its numbers, and a table
# of a stream with another key type is refused
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE TABLE ev_pre (id bigserial, tenant bigint NOT NULL, seq bigint, payload text,
	                     PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('ev_pre', 'tenant', colocate_with => 'tenants_big');
	INSERT INTO ev_pre (tenant, seq) SELECT t, n FROM generate_series(1, 5) t, generate_series(1, 3) n;
	SELECT ordering.attach('ev_pre', 'tenant', 'seq');
	INSERT INTO ev_pre (tenant) SELECT generate_series(1, 5);});
is(sql($coord, q{SELECT string_agg(DISTINCT seq::text, ',') FROM ev_pre WHERE id > 15}), '4',
	'bigint: a table filled before attach() continues after its numbers');

sql($coord, q{
	CREATE TABLE ev_other (id bigserial, tenant uuid NOT NULL, seq bigint, PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('ev_other', 'tenant', colocate_with => 'tenants_uuid');});
fails($coord, q{SELECT ordering.attach('ev_other', 'tenant', 'seq', 'public.ev_big')},
	'42804', qr/is of type uuid, but stream "public\.ev_big" counts resources of type bigint/,
	'a uuid table attached to a bigint stream');
fails($coord, q{SELECT ordering.attach('ev_other', 'tenant', 'seq', 'public.ev_text')},
	'42804', qr/counts resources of type text/, 'a uuid table attached to a text stream');

sql($coord, q{
	CREATE TABLE ev_num (id bigserial, tenant numeric NOT NULL, seq bigint, PRIMARY KEY (tenant, id));
	SELECT create_distributed_table('ev_num', 'tenant');});
fails($coord, q{SELECT ordering.attach('ev_num', 'tenant', 'seq')},
	'0A000', qr/is of type numeric, which a distributed stream cannot key its counters by.*HINT:\s+Distribute the table by a bigint, uuid or text/s,
	'a numeric resource column');

# ---------------------------------------------------------------------------
# Consumers keyed by bigint and uuid, co-located with their tenants
# ---------------------------------------------------------------------------
sql($coord, q{
	CREATE TABLE proj_num (id numeric PRIMARY KEY, version bigint);
	SELECT create_distributed_table('proj_num', 'id');});
fails($coord, q{SELECT ordering.distribute_consumer('cons_num', 'proj_num')},
	'0A000', qr/of type numeric, which a distributed consumer cannot be keyed by.*HINT:\s+Distribute the projection by a bigint, uuid or text/s,
	'distribute_consumer() of a projection distributed by numeric');
sql($coord, q{
	CREATE TABLE proj_dom (id tenant_id PRIMARY KEY, version bigint);
	SELECT create_distributed_table('proj_dom', 'id', colocate_with => 'tenants_dom');});
fails($coord, q{SELECT ordering.distribute_consumer('cons_dom', 'proj_dom')},
	'0A000', qr/of domain (public\.)?tenant_id, which has constraints: a distributed consumer cannot be keyed by it.*HINT:\s+Distribute the projection by the domain's base type, bigint, or by a domain without constraints/s,
	'distribute_consumer() of a projection distributed by a domain with a CHECK');
sql($coord, q{
	CREATE DOMAIN tenant_nn AS uuid NOT NULL;
	CREATE DOMAIN tenant_nn2 AS tenant_nn;
	CREATE TABLE proj_nn (id tenant_nn2 PRIMARY KEY, version bigint);
	SELECT create_distributed_table('proj_nn', 'id');});
fails($coord, q{SELECT ordering.distribute_consumer('cons_nn', 'proj_nn')},
	'0A000', qr/of domain (public\.)?tenant_nn2, which has constraints.*HINT:\s+Distribute the projection by the domain's base type, uuid/s,
	'distribute_consumer() of a projection distributed by a domain over a NOT NULL domain');

my %cons_tag;
for my $k (qw(big uuid))
{
	# the handler writes the projection, and fails on a poison event
	sql($coord, qq{
		CREATE TABLE proj_$k (id $type{$k} PRIMARY KEY, last_seq bigint NOT NULL, log text NOT NULL);
		SELECT create_distributed_table('proj_$k', 'id', colocate_with => 'tenants_$k');
		CREATE FUNCTION apply_$k(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS \$\$
		BEGIN
			IF p ? 'poison' THEN
				RAISE EXCEPTION 'poison event % of %', s, r;
			END IF;
			INSERT INTO proj_$k AS t (id, last_seq, log) VALUES (r::$type{$k}, s, s::text)
			ON CONFLICT (id) DO UPDATE SET last_seq = EXCLUDED.last_seq,
			                               log = t.log || ',' || EXCLUDED.log;
		END \$\$;});
	# a state kept on one node before moves along
	my $t1 = $key{$k}->(1);
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t1', 1, '{}', 'apply_$k(text,bigint,jsonb)')});
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t1', 3, '{}', 'apply_$k(text,bigint,jsonb)')});
	sql($coord, qq{SELECT ordering.distribute_consumer('cons_$k', 'proj_$k')});
	$cons_tag{$k} = sql($coord, qq{SELECT ordering_internal.consumer_tag('cons_$k')});
	is(sql($coord, qq{
		SELECT count(*) FROM pg_dist_partition c, pg_dist_partition t
		 WHERE c.logicalrelid IN (SELECT ordering_internal.distributed_consumer_table('cons_$k', s)
		                            FROM unnest(ARRAY['_positions', '_parked', '_dead_letters', '_gap_requests']) s)
		   AND column_to_column_name(c.logicalrelid, c.partkey) = 'resource_value'
		   AND c.colocationid = t.colocationid AND t.logicalrelid = 'proj_$k'::regclass}), '4',
		"$type{$k}: the consumer's four tables are distributed by resource_value, co-located with the projection");
	is(sql($coord, qq{SELECT ordering.position('cons_$k', '$t1')}), '1',
		"$type{$k}: the position kept on one node moved along");

	# every tenant's events out of order: parked, then drained in order
	for my $i (1 .. 12)
	{
		my $t = $key{$k}->($i);
		my @order = $i == 1 ? (2, 5, 4) : (3, 2, 5, 1, 4, 3);
		sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t', $_, '{}', 'apply_$k(text,bigint,jsonb)', 'dead_letter')})
		  for @order;
	}
	is(sql($coord, qq{
		SELECT count(*) FROM generate_series(1, 12) i
		 WHERE ordering.position('cons_$k', } . ($k eq 'big' ? q{i::text} : q{'00000000-0000-0000-0000-' || lpad(i::text, 12, '0')})
		  . q{) <> 5}), '0', "$type{$k}: every tenant's position is 5");
	is(sql($coord, qq{SELECT count(*) FROM proj_$k WHERE log <> '1,2,3,4,5'}), '0',
		"$type{$k}: the handler applied each tenant's events once and in order, on the shards of 12 tenants");
	is(sql($coord, qq{SELECT count(DISTINCT nodeport) FROM citus_shards
		 WHERE shardid IN (SELECT get_shard_id_for_distribution_column('proj_$k', id) FROM proj_$k)}), '2',
		"$type{$k}: ... whose shards are on both workers");

	# a batch across shards
	is(sql($coord, qq{
		SELECT ordering.deliver_batch('cons_$k',
		    ARRAY(SELECT t FROM unnest(ARRAY[} . join(', ', map { "'" . $key{$k}->($_) . "'" } 1 .. 12) . qq{]) t),
		    array_fill(6::bigint, ARRAY[12]), array_fill('{}'::jsonb, ARRAY[12]),
		    'apply_$k(text,bigint,jsonb)', 'dead_letter')}), '12',
		"$type{$k}: deliver_batch() across shards");
	is(sql($coord, qq{SELECT count(*) FROM proj_$k WHERE last_seq = 6}), '12', "$type{$k}: ... applied every event");

	# a dead letter, with an event parked behind it; discarded
	my $t2 = $key{$k}->(2);
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t2', 7, '{"poison": true}', 'apply_$k(text,bigint,jsonb)', 'dead_letter')});
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t2', 8, '{}', 'apply_$k(text,bigint,jsonb)', 'dead_letter')});
	is(sql($coord, qq{SELECT resource_id || ':' || seq || ':' || parked_behind FROM ordering.dead_letters WHERE consumer = 'cons_$k'}),
		"$t2:7:1", "$type{$k}: the dead letter shows on the coordinator, one event parked behind it");
	is(sql($coord, qq{SELECT string_agg(seq::text, ',') FROM ordering.discard_dead_letter('cons_$k', '$t2')}), '8',
		"$type{$k}: discard_dead_letter() returns the event parked behind");
	is(sql($coord, qq{SELECT ordering.position('cons_$k', '$t2')}), '8', "$type{$k}: ... and the position passes both");

	# a gap: swept on the coordinator, then skipped
	my $t3 = $key{$k}->(3);
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t3', 9, '{}', 'apply_$k(text,bigint,jsonb)')});
	sleep 2;
	is(sql($coord, qq{SET ordering.gap_deadline = 1;
		SELECT resource_id || ':' || missing_from || '-' || missing_to FROM ordering.sweep_gaps() WHERE consumer = 'cons_$k'}),
		"$t3:7-8", "$type{$k}: sweep_gaps() asks for the missing events");
	is(sql($coord, qq{SET ordering.gap_deadline = 1;
		SELECT count(*) FROM ordering.open_gaps WHERE consumer = 'cons_$k'}), '1', "$type{$k}: ordering.open_gaps shows the gap");
	is(sql($coord, qq{SELECT string_agg(seq::text, ',') FROM ordering.skip_gap('cons_$k', '$t3')}), '9',
		"$type{$k}: skip_gap() returns what drains");
	is(sql($coord, qq{SELECT count(*) FROM ordering_internal.$cons_tag{$k}_gap_requests}), '0',
		"$type{$k}: ... and the gap request is gone");

	# reconciliation reads the consumer's positions by their ids
	is(sql($coord, qq{SELECT sum(resources) FROM ordering.consumer_summary('cons_$k', 16)}), '12',
		"$type{$k}: consumer_summary() counts the consumer's 12 resources");
	is(sql($coord, qq{SELECT count(*) FROM ordering.consumer_state('cons_$k', 16, ARRAY(SELECT generate_series(0, 15)))}), '12',
		"$type{$k}: consumer_state() lists them");
}

# citext (its equality is not in pg_catalog): in and out of order, a dead
# letter seen and discarded on the coordinator
if ($has_citext)
{
	sql($coord, q{
		CREATE TABLE proj_ci (id citext PRIMARY KEY, log text NOT NULL);
		SELECT create_distributed_table('proj_ci', 'id', colocate_with => 'tenants_ci');
		CREATE FUNCTION apply_ci(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS $$
		BEGIN
			IF p ? 'poison' THEN
				RAISE EXCEPTION 'poison event % of %', s, r;
			END IF;
			INSERT INTO proj_ci AS t (id, log) VALUES (r::citext, s::text)
			ON CONFLICT (id) DO UPDATE SET log = t.log || ',' || EXCLUDED.log;
		END $$;
		SELECT ordering.distribute_consumer('cons_ci', 'proj_ci');});
	for my $t (map { $key{ci}->($_) } 1 .. 6)
	{
		sql($coord, qq{SELECT ordering.deliver('cons_ci', '$t', $_, '{}', 'apply_ci(text,bigint,jsonb)', 'dead_letter')})
		  for (2, 3, 1);
	}
	is(sql($coord, q{SELECT string_agg(DISTINCT log, ' ') || ' ' || count(*) FROM proj_ci}), '1,2,3 6',
		"citext: a consumer keyed by citext applies every tenant's events in order");
	sql($coord, q{SELECT ordering.deliver('cons_ci', 'T1', 4, '{"poison": true}', 'apply_ci(text,bigint,jsonb)', 'dead_letter')});
	is(sql($coord, q{SELECT resource_id || ':' || seq FROM ordering.dead_letters WHERE consumer = 'cons_ci'}),
		'T1:4', 'citext: a dead letter shows on the coordinator');
	is(sql($coord, q{SELECT count(*) FROM ordering.discard_dead_letter('cons_ci', 'T1')}), '0',
		'citext: ... and is discarded');
	is(sql($coord, q{SELECT ordering.position('cons_ci', 'T1')}), '4', 'citext: ... past it');
}

# Consumers keyed by smallint, integer, varchar and by domains without
# constraints over bigint and uuid: events out of order parked, then
# drained in order by a handler that writes the projection on the
# resource's node; a batch across shards; ids the type does not read
my %ckey = (
	sm => sub { "$_[0]" },
	i4 => sub { "$_[0]" },
	vcc => sub { "t$_[0]" },
	bdom => sub { "$_[0]" },
	udom => sub { sprintf("00000000-0000-0000-0000-%012d", $_[0]) },
);
my %ctype = (sm => 'smallint', i4 => 'integer', vcc => 'varchar(40)',
	bdom => 'plain_tenant', udom => 'plain_uuid');
sql($coord, q{
	CREATE DOMAIN plain_tenant AS bigint;
	CREATE DOMAIN plain_uuid AS uuid;});
for my $k (qw(sm i4 vcc bdom udom))
{
	sql($coord, qq{
		SET citus.shard_count = 4;
		CREATE TABLE proj_$k (id $ctype{$k} PRIMARY KEY, log text NOT NULL);
		SELECT create_distributed_table('proj_$k', 'id');
		CREATE FUNCTION apply_$k(r text, s bigint, p jsonb) RETURNS void LANGUAGE plpgsql AS \$\$
		BEGIN
			INSERT INTO proj_$k AS t (id, log) VALUES (r::$ctype{$k}, s::text)
			ON CONFLICT (id) DO UPDATE SET log = t.log || ',' || EXCLUDED.log;
		END \$\$;
		SELECT ordering.distribute_consumer('cons_$k', 'proj_$k');});
	is(sql($coord, qq{
		SELECT string_agg(DISTINCT format_type(a.atttypid, NULL), ',')
		  FROM pg_attribute a
		 WHERE a.attrelid IN (SELECT ordering_internal.distributed_consumer_table('cons_$k', s)
		                        FROM unnest(ARRAY['_positions', '_parked', '_dead_letters', '_gap_requests']) s)
		   AND a.attname = 'resource_value'}),
		$ctype{$k} =~ s/\(40\)//r =~ s/^varchar$/character varying/r,
		"$ctype{$k}: the consumer's tables are distributed by a column of that type");
	my @tenants = map { $ckey{$k}->($_) } 1 .. 8;
	for my $t (@tenants)
	{
		sql($coord, qq{SELECT ordering.deliver('cons_$k', '$t', $_, '{}', 'apply_$k(text,bigint,jsonb)')})
		  for (3, 2);
	}
	is(sql($coord, qq{SELECT count(*) FROM unnest(ARRAY['} . join("','", @tenants) . qq{']) t
		 WHERE ordering.position('cons_$k', t) = 0}), '8',
		"$ctype{$k}: early events parked, no position moved");
	$cons_tag{$k} = sql($coord, qq{SELECT ordering_internal.consumer_tag('cons_$k')});
	is(sql($coord, qq{SELECT count(*) FROM ordering_internal.$cons_tag{$k}_parked}), '16',
		"$ctype{$k}: ... 16 events parked in the consumer's distributed table");
	sql($coord, qq{SELECT ordering.deliver('cons_$k', '$_', 1, '{}', 'apply_$k(text,bigint,jsonb)')})
	  for @tenants;
	is(sql($coord, qq{SELECT string_agg(DISTINCT log, ' ') || ' ' || count(*) FROM proj_$k}), '1,2,3 8',
		"$ctype{$k}: the parked events drained in order, applied once, on the projection's shards");
	is(sql($coord, qq{SELECT count(DISTINCT nodeport) FROM citus_shards
		 WHERE shardid IN (SELECT get_shard_id_for_distribution_column('proj_$k', id) FROM proj_$k)}), '2',
		"$ctype{$k}: ... whose shards are on both workers");
	is(sql($coord, qq{
		SELECT ordering.deliver_batch('cons_$k', ARRAY['} . join("','", @tenants) . qq{'],
		    array_fill(4::bigint, ARRAY[8]), array_fill('{}'::jsonb, ARRAY[8]),
		    'apply_$k(text,bigint,jsonb)', 'dead_letter')}), '8',
		"$ctype{$k}: deliver_batch() across shards");
	is(sql($coord, qq{SELECT count(*) FROM proj_$k WHERE log = '1,2,3,4'}), '8', "$ctype{$k}: ... applied every event");
}
for my $bad (['cons_sm', '70000', 'out of range', '22003'],
	['cons_sm', 'x', 'invalid input syntax for type smallint'],
	['cons_sm', '07', 'resource id "07" is not written as type smallint writes it'],
	['cons_i4', '3000000000', 'out of range', '22003'],
	['cons_i4', '1.5', 'invalid input syntax for type integer'],
	['cons_vcc', 'x' x 1025, 'is too long', '22023'],
	['cons_vcc', 'x' x 41, 'value too long for type character varying(40)', '22001'],
	['cons_bdom', 'x', 'invalid input syntax for type bigint'],
	['cons_bdom', '042', 'resource id "042" is not written as type plain_tenant writes it'],
	['cons_udom', '00000000-0000-0000-0000-00000000000A', 'is not written as type plain_uuid writes it'])
{
	my ($c, $id, $msg, $state) = @$bad;
	fails($coord, qq{SELECT ordering.deliver('$c', '$id', 1, '{}')}, $state // '22P02', qr/\Q$msg\E/,
		"$c: resource id '" . (length($id) > 40 ? substr($id, 0, 8) . '...' . length($id) . ' bytes' : $id) . "' refused");
}
is(sql($coord, 'SELECT ' . join(' + ', map { "(SELECT count(*) FROM ordering_internal.$cons_tag{$_}_positions)" } qw(sm i4 vcc bdom udom))),
	'40', '... and no position was written for any of them');

# A constraint added to the domain later: the calls are refused (Citus
# would run them on the coordinator), an id it refuses fails with the
# domain's own error; dropped again, the calls run on the resource's node
sql($coord, q{ALTER DOMAIN plain_tenant ADD CONSTRAINT plain_tenant_positive CHECK (VALUE > 0)});
fails($coord, q{SELECT ordering.deliver('cons_bdom', '1', 5, '{}', 'apply_bdom(text,bigint,jsonb)')},
	'0A000', qr/distributed consumer "cons_bdom" is keyed by domain plain_tenant, which has constraints/,
	'a domain that gained a CHECK: the call is refused');
fails($coord, q{SELECT ordering.deliver('cons_bdom', '-1', 1, '{}')},
	'23514', qr/value for domain plain_tenant violates check constraint "plain_tenant_positive"/,
	'... an id the CHECK refuses fails with the domain\'s error');
sql($coord, q{ALTER DOMAIN plain_tenant DROP CONSTRAINT plain_tenant_positive});
my $dlog = remote_commands(q{
	SELECT ordering.deliver('cons_bdom', '1', 5, '{}', 'apply_bdom(text,bigint,jsonb)');});
like($dlog, qr/issuing .*_call\(.*'1'::public\.plain_tenant/, 'the constraint dropped: the call runs on the resource\'s worker');
unlike($dlog, qr/PREPARE TRANSACTION/, '... with the handler\'s write, on one node, without two-phase commit');
is(sql($coord, q{SELECT log FROM proj_bdom WHERE id = 1}), '1,2,3,4,5', '... applied');

# ids the type does not read, or writes otherwise: refused, nothing written
for my $bad (['cons_big', 'x', 'invalid input syntax for type bigint'],
	['cons_big', '042', 'resource id "042" is not written as type bigint writes it'],
	['cons_big', '+42', 'resource id "\+42" is not written as type bigint writes it'],
	['cons_big', '99999999999999999999', 'out of range', '22003'],
	['cons_uuid', '00000000-0000-0000-0000-00000000000A', 'is not written as type uuid writes it'],
	['cons_uuid', '{00000000-0000-0000-0000-00000000000a}', 'is not written as type uuid writes it'],
	['cons_uuid', 'not-a-uuid', 'invalid input syntax for type uuid'])
{
	my ($c, $id, $msg, $state) = @$bad;
	fails($coord, qq{SELECT ordering.deliver('$c', '$id', 1, '{}')}, $state // '22P02', qr/\Q$msg\E|$msg/,
		"$c: resource id '$id' refused");
}
fails($coord, q{SELECT * FROM ordering.deliver_batch('cons_big', ARRAY['1', '01'], ARRAY[7, 1]::bigint[], ARRAY['{}', '{}']::jsonb[])},
	'22P02', qr/resource id "01" is not written as type bigint writes it/, 'cons_big: a batch with one bad id refused');
is(sql($coord, q{SELECT ordering.position('cons_big', '1')}), '6', '... and none of it applied');

# One node, no two-phase commit: the handler writes the tenant's projection
# row, the transaction its tenant row, with the consumer's position
for my $k (qw(big uuid))
{
	my $t = $key{$k}->(77);
	my $log = remote_commands(qq{
		SELECT ordering.deliver('cons_$k', '$t', 1, '{}', 'apply_$k(text,bigint,jsonb)');
		UPDATE tenants_$k SET name = 'consumed' WHERE id = '$t';});
	like($log, qr/issuing .*$cons_tag{$k}_call/, "$type{$k}: the call ran on the tenant's worker");
	unlike($log, qr/PREPARE TRANSACTION/,
		"$type{$k}: the handler's projection row, the tenant's row and the position commit on one node, without two-phase commit");
	is(sql($coord, qq{SELECT log FROM proj_$k WHERE id = '$t'}), '1', "$type{$k}: ... applied");
}

# ---------------------------------------------------------------------------
# check() on the coordinator compares every typed stream with its counters
# ---------------------------------------------------------------------------
is(sql($coord, q{SELECT count(*) FROM ordering.check()}), '0',
	'ordering.check() is clean on the coordinator');
# reconciliation reads a typed stream's counters by their keys
is(sql($coord, q{SELECT sum(resources) FROM ordering.stream_summary('public.ev_uuid', 16)}),
	sql($coord, q{SELECT count(*) FROM ordering_internal.}
		  . sql($coord, q{SELECT ordering_internal.counter_table_name('public.ev_uuid')})),
	'stream_summary() of a uuid stream counts its resources');
# a counter set back is found, by its key
sql($coord, q{UPDATE ordering_internal.} . sql($coord, q{SELECT ordering_internal.counter_table_name('public.ev_uuid')})
	  . q{ SET last_seq = 1 WHERE resource_id = '00000000-0000-0000-0000-000000000002'});
like(sql($coord, q{SELECT string_agg(detail, '; ') FROM ordering.check() WHERE kind = 'counter_behind_table'}),
	qr/ev_uuid.*resource '00000000-0000-0000-0000-000000000002'/,
	'check() finds a typed stream\'s counter behind its table, by its key');

$cluster->stop;
done_testing();
