# A producer + relay + consumer workload for the reliability tests
# (020_consumer_crash, 021_consumer_dump, 022_soak).
#
# Producer database: pgbench clients emit into ordering.outbox, two events a
# transaction over a set of resources.  The relay (Perl, in the test
# process) claims unpublished rows, marks them published in the same
# statement, and puts them into an "inbox" table of the consumer database:
# the broker.  It can shuffle (every inbox row has a random pick order),
# duplicate and lose events.  Consumer database: pgbench clients call
# consume_one(), which takes one inbox row (SKIP LOCKED, in pick order),
# deletes it and, in the same transaction, passes it to ordering.deliver()
# for the step consumer "ledger" (applying the returned rows into table
# ledger) and to ordering.apply_if_newer() for the state consumer "state"
# (upserting table state).  A crash anywhere loses no inbox row that was not
# applied, and applies nothing twice.
#
# With poison => p, each event carries {"poison": true} with probability p,
# a payload the ledger's consumer rejects until handler_fixed says true (the
# operator's fix).  The step consumer then sets such an event aside as a
# dead letter, in one of two ways chosen by the parity of the inbox row:
# through ordering.deliver(..., 'apply_step(text, bigint, jsonb)', on_error
# => 'dead_letter'), whose handler rejects it; or as a table-form consumer
# that finds it among the rows deliver() returned, undoes that delivery
# (a savepoint), gives up on it with ordering.dead_letter() and delivers
# again, which then applies the events before it.
package OrderingWorkload;

use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Utils;
use Test::More;

# Create both databases, the extension and the consumer's tables.
sub setup
{
	my ($node, %opt) = @_;
	$node->safe_psql('postgres', 'CREATE DATABASE producerdb');
	$node->safe_psql('postgres', 'CREATE DATABASE consumerdb');
	$node->safe_psql('producerdb', 'CREATE EXTENSION ordering');
	my $poison = $opt{poison} // 0;
	(my $consumer_sql = q{
		CREATE EXTENSION ordering;
		CREATE TABLE inbox (id bigserial PRIMARY KEY,
		                    pick float8 NOT NULL DEFAULT random(),
		                    resource_id text NOT NULL, seq bigint NOT NULL,
		                    payload jsonb NOT NULL);
		CREATE INDEX inbox_pick ON inbox (pick);
		CREATE TABLE ledger (id bigserial PRIMARY KEY, resource_id text NOT NULL,
		                     seq bigint NOT NULL, payload jsonb NOT NULL);
		CREATE TABLE state (resource_id text PRIMARY KEY, seq bigint NOT NULL,
		                    payload jsonb NOT NULL);
		CREATE TABLE handler_fixed (fixed boolean NOT NULL);
		INSERT INTO handler_fixed VALUES (false);
		-- the ledger's handler: rejects poison until it is fixed
		CREATE FUNCTION apply_step(r text, s bigint, p jsonb) RETURNS void
		LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO ledger (resource_id, seq, payload) VALUES (r, s, p);
		    IF p ? 'poison' AND NOT (SELECT fixed FROM handler_fixed) THEN
		        RAISE EXCEPTION 'cannot apply event % of %', s, r
		            USING ERRCODE = 'check_violation';
		    END IF;
		END
		$$;
		-- the table-form consumer of poison runs (see the file header)
		CREATE FUNCTION deliver_table(m inbox) RETURNS void LANGUAGE plpgsql AS $$
		DECLARE
		    d record;
		    bad bigint;
		    bad_payload jsonb;
		BEGIN
		    BEGIN
		        FOR d IN SELECT * FROM ordering.deliver('ledger', m.resource_id, m.seq, m.payload)
		        LOOP
		            IF d.payload ? 'poison' AND NOT (SELECT fixed FROM handler_fixed) THEN
		                bad := d.seq;
		                bad_payload := d.payload;
		                RAISE EXCEPTION 'cannot apply event % of %', d.seq, m.resource_id
		                    USING ERRCODE = 'check_violation';
		            END IF;
		            INSERT INTO ledger (resource_id, seq, payload) VALUES (m.resource_id, d.seq, d.payload);
		        END LOOP;
		    EXCEPTION WHEN check_violation THEN
		        PERFORM ordering.dead_letter('ledger', m.resource_id, bad, bad_payload, SQLERRM);
		        INSERT INTO ledger (resource_id, seq, payload)
		        SELECT m.resource_id, x.seq, x.payload
		          FROM ordering.deliver('ledger', m.resource_id, m.seq, m.payload) x;
		    END;
		END
		$$;
		CREATE FUNCTION consume_one() RETURNS integer LANGUAGE plpgsql AS $$
		DECLARE
		    m inbox;
		BEGIN
		    DELETE FROM inbox
		     WHERE id = (SELECT i.id FROM inbox i ORDER BY i.pick
		                  LIMIT 1 FOR UPDATE SKIP LOCKED)
		    RETURNING * INTO m;
		    IF NOT FOUND THEN
		        RETURN 0;
		    END IF;
		    IF NOT POISON THEN
		        INSERT INTO ledger (resource_id, seq, payload)
		        SELECT m.resource_id, d.seq, d.payload
		          FROM ordering.deliver('ledger', m.resource_id, m.seq, m.payload) d;
		    ELSIF m.id % 2 = 0 THEN
		        PERFORM deliver_table(m);
		    ELSE
		        PERFORM ordering.deliver('ledger', m.resource_id, m.seq, m.payload,
		                                 'apply_step(text, bigint, jsonb)', on_error => 'dead_letter');
		    END IF;
		    IF ordering.apply_if_newer('state', m.resource_id, m.seq) THEN
		        INSERT INTO state VALUES (m.resource_id, m.seq, m.payload)
		        ON CONFLICT (resource_id)
		        DO UPDATE SET seq = EXCLUDED.seq, payload = EXCLUDED.payload;
		    END IF;
		    RETURN 1;
		END
		$$;
	}) =~ s/NOT POISON/$poison > 0 ? 'false' : 'true'/e;
	$node->safe_psql('consumerdb', $consumer_sql);
	my $dir = PostgreSQL::Test::Utils::tempdir;
	my $nres = $opt{resources} // 20;
	# poison: an event is poison when its draw (1..1000000) is at most this
	my $bound = int($poison * 1000000);
	my ($draw, $mark) = ('', '');
	($draw, $mark) = ("\\set p1 random(1, 1000000)\n\\set p2 random(1, 1000000)\n",
		" || CASE WHEN :p%s <= $bound THEN '{\"poison\": true}' ELSE '{}' END::jsonb")
	  if $poison > 0;
	PostgreSQL::Test::Utils::append_to_file("$dir/produce.sql", qq{
\\set a random(1, $nres)
\\set b random(1, $nres)
\\set lo least(:a, :b)
\\set hi greatest(:a, :b)
${draw}BEGIN;
SELECT ordering.emit('r' || :lo, 'e', jsonb_build_object('c', :client_id, 't', random())}
	  . sprintf($mark, 1) . qq{);
SELECT ordering.emit('r' || :hi, 'e', jsonb_build_object('c', :client_id, 't', random())}
	  . sprintf($mark, 2) . qq{);
COMMIT;
});
	PostgreSQL::Test::Utils::append_to_file("$dir/consume.sql", q{
SELECT consume_one() AS got \gset
\if :got = 0
\sleep 20 ms
\endif
});
	return { node => $node, dir => $dir, relayed => 0, duplicated => 0, lost => 0,
		republished => 0, answered => {}, cdb => 'consumerdb' };
}

# Start pgbench in the background: $what is 'produce' (producerdb) or
# 'consume' (consumerdb); $seconds may be undef when @extra has -t.
sub start_pgbench
{
	my ($w, $what, $clients, $seconds, @extra) = @_;
	my $node = $w->{node};
	my ($out, $err) = ('', '');
	my $db = $what eq 'produce' ? 'producerdb' : $w->{cdb};
	my $h = IPC::Run::start(
		[ 'pgbench', '-n', '-h', $node->host, '-p', $node->port,
		  '-c', $clients, '-j', ($clients > 1 ? 2 : 1),
		  (defined $seconds ? ('-T', $seconds) : ()), @extra, '-f', "$w->{dir}/$what.sql", $db ],
		'>', \$out, '2>', \$err);
	return $h;
}

# Stop background pgbench runs (they fail anyway when the server goes).
sub stop_pgbench
{
	local $SIG{PIPE} = 'IGNORE';
	foreach my $h (@_)
	{
		eval { $h->kill_kill; };
	}
}

# SQL quoting of a literal.
sub lit
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# One relay batch: claim and mark published up to $batch rows in one
# statement, then put them into the inbox, each duplicated with
# probability dup and left out (lost for real) with probability loss.
# Returns the number of rows claimed.  Dies on connection errors unless
# $eval_ok, so that a crash in the middle of a batch can be survived.
sub relay
{
	my ($w, %opt) = @_;
	my $node = $w->{node};
	my $batch = $opt{batch} // 200;
	my $rows = $node->safe_psql('producerdb', qq{
		WITH c AS (SELECT id, resource_id, seq, payload
		             FROM ordering.claim_unpublished($batch)),
		     m AS (SELECT ordering.mark_published(ARRAY(SELECT id FROM c)) AS n)
		SELECT c.resource_id, c.seq, c.payload FROM c, m});
	my @values;
	my $n = 0;
	foreach my $line (split /\n/, $rows)
	{
		my ($res, $seq, $payload) = split /\|/, $line, 3;
		$n++;
		if (($opt{loss} // 0) > 0 && rand() < $opt{loss})
		{
			$w->{lost}++;
			next;
		}
		my $v = '(' . lit($res) . ", $seq, " . lit($payload) . ')';
		push @values, $v;
		if (($opt{dup} // 0) > 0 && rand() < $opt{dup})
		{
			push @values, $v;
			$w->{duplicated}++;
		}
	}
	$node->safe_psql($w->{cdb},
		'INSERT INTO inbox (resource_id, seq, payload) VALUES ' . join(',', @values))
	  if @values;
	$w->{relayed} += $n;
	return $n;
}

# The gap listener: every gap request the sweeper emitted (new, or repeated
# with a higher attempt count) since the last call is answered with a
# republish of its missing range in the producer database.  Reads
# ordering.gap_requests, which is what the NOTIFY payloads carry.
# Returns the number of ranges republished.
sub answer_gap_requests
{
	my ($w) = @_;
	my $node = $w->{node};
	my @republish;
	foreach my $line (split /\n/, $node->safe_psql($w->{cdb}, q{
		SELECT resource_id, missing_from, missing_to, attempts FROM ordering.gap_requests}))
	{
		next if $w->{answered}{$line}++;
		my ($r, $from, $to) = split /\|/, $line;
		push @republish, 'SELECT ordering.republish(' . lit($r) . ", $from, $to);";
	}
	$node->safe_psql('producerdb', join("\n", @republish)) if @republish;
	$w->{republished} += @republish;
	return scalar(@republish);
}

# Consume the whole inbox in this process (in random pick order).
sub drain_inbox
{
	my ($w) = @_;
	my $node = $w->{node};
	my $total = 0;
	while (1)
	{
		my $n = $node->safe_psql($w->{cdb},
			'SELECT COALESCE(sum(consume_one()), 0) FROM generate_series(1, 500)');
		$total += $n;
		last if $n == 0;
	}
	return $total;
}

# The resources of ordering.outbox that are not numbered 1..n without gap or
# repeat with their counter at n, space-separated (empty when none).  Also
# used by 003_producer_crash.
our $producer_violations_sql = q{
	SELECT string_agg(COALESCE(o.resource_id, s.resource_id), ' ')
	  FROM (SELECT resource_id, count(*) AS n, count(DISTINCT seq) AS d,
	               min(seq) AS lo, max(seq) AS hi
	          FROM ordering.outbox GROUP BY resource_id) o
	  FULL JOIN (SELECT resource_id, last_seq FROM ordering.sequences
	              WHERE stream = 'ordering.outbox') s USING (resource_id)
	 WHERE o.n IS DISTINCT FROM o.hi OR o.d IS DISTINCT FROM o.n
	    OR o.lo IS DISTINCT FROM 1 OR s.last_seq IS DISTINCT FROM o.hi};

# Every resource of the outbox is numbered 1..n with its counter at n;
# returns the offending resources.
sub producer_violations
{
	my ($w) = @_;
	return $w->{node}->safe_psql('producerdb', $producer_violations_sql);
}

# The consumer invariants, as one query listing every violation.
our $consumer_violations_sql = q{
	WITH pos AS (SELECT resource_id, position FROM ordering.positions
	              WHERE consumer = 'ledger'),
	     l AS (SELECT resource_id, count(*) AS n, count(DISTINCT seq) AS d,
	                  min(seq) AS lo, max(seq) AS hi
	             FROM ledger GROUP BY resource_id)
	SELECT string_agg(v, ' ') FROM (
	-- the ledger of a resource is exactly 1..position, each once
	SELECT 'ledger:' || COALESCE(l.resource_id, pos.resource_id) AS v
	  FROM l FULL JOIN pos USING (resource_id)
	 WHERE COALESCE(l.n, 0) <> COALESCE(pos.position, 0)
	    OR l.d <> l.n OR l.lo <> 1 OR l.hi <> pos.position
	UNION ALL
	-- ... applied in order
	SELECT 'order:' || resource_id
	  FROM (SELECT resource_id, seq,
	               lag(seq) OVER (PARTITION BY resource_id ORDER BY id) AS prev
	          FROM ledger) x
	 WHERE prev IS NOT NULL AND seq <> prev + 1
	UNION ALL
	-- a parked event is never the next one or an old one
	SELECT 'parked:' || p.resource_id || '/' || p.seq
	  FROM ordering.parked p
	  LEFT JOIN ordering.positions o USING (consumer, resource_id)
	 WHERE p.seq <= COALESCE(o.position, 0) + 1 OR p.consumer <> 'ledger'
	UNION ALL
	-- a gap request only while events are parked, for a range not applied
	-- (a sweep and a delivery that fills the gap wait for each other, so
	-- this holds at any moment, also while both run side by side)
	SELECT 'gap:' || g.resource_id
	  FROM ordering.gap_requests g
	  LEFT JOIN ordering.positions o USING (consumer, resource_id)
	 WHERE g.missing_from > g.missing_to
	    OR (STRICT_GAPS
	        AND (NOT EXISTS (SELECT FROM ordering.parked p
	                          WHERE p.consumer = g.consumer AND p.resource_id = g.resource_id)
	             OR g.missing_to <= COALESCE(o.position, 0)))
	UNION ALL
	-- the state consumer's table follows its positions
	SELECT 'state:' || COALESCE(s.resource_id, o.resource_id)
	  FROM state s
	  FULL JOIN (SELECT resource_id, position FROM ordering.positions
	              WHERE consumer = 'state') o USING (resource_id)
	 WHERE s.seq IS DISTINCT FROM o.position
	UNION ALL
	-- both consumers saw the same events in the same transactions: the
	-- state is at the highest seq the step consumer applied, parked or
	-- set aside as a dead letter (resources a test delivers to the step
	-- consumer only, named victim..., are not the workload's)
	SELECT 'state-vs-ledger:' || COALESCE(s.resource_id, pos.resource_id)
	  FROM state s
	  FULL JOIN pos USING (resource_id)
	 WHERE COALESCE(s.resource_id, pos.resource_id) NOT LIKE 'victim%'
	   AND s.seq IS DISTINCT FROM GREATEST(pos.position,
	           (SELECT max(p.seq) FROM ordering.parked p
	             WHERE p.consumer = 'ledger'
	               AND p.resource_id = COALESCE(s.resource_id, pos.resource_id)),
	           (SELECT d.seq FROM ordering.dead_letter_events d
	             WHERE d.consumer = 'ledger'
	               AND d.resource_id = COALESCE(s.resource_id, pos.resource_id)))
	UNION ALL
	-- a dead letter is a poison event and the next one of its resource,
	-- which is blocked at it; a blocked resource has its dead letter
	SELECT 'dead:' || COALESCE(d.resource_id, o.resource_id)
	  FROM ordering.dead_letter_events d
	  FULL JOIN (SELECT * FROM ordering.positions WHERE blocked_at IS NOT NULL) o
	    USING (consumer, resource_id)
	 WHERE d.consumer IS DISTINCT FROM 'ledger' OR NOT d.payload ? 'poison'
	    OR d.seq IS DISTINCT FROM o.blocked_at OR d.seq IS DISTINCT FROM o.position + 1
	) v
};

# Payload check across the databases: every ledger row and every state row
# carries the payload the producer emitted for that (resource, seq).
sub payload_violations
{
	my ($w) = @_;
	my $node = $w->{node};
	# the ledger first: the outbox only grows, so every event applied
	# before this read is in the outbox read after it
	my $applied = $node->safe_psql($w->{cdb}, q{
		SELECT resource_id, seq, md5(payload::text) FROM ledger
		UNION ALL
		SELECT resource_id, seq, md5(payload::text) FROM state});
	my %out;
	foreach my $line (split /\n/, $node->safe_psql('producerdb',
		'SELECT resource_id, seq, md5(payload::text) FROM ordering.outbox'))
	{
		my ($r, $s, $h) = split /\|/, $line;
		$out{"$r/$s"} = $h;
	}
	my @bad;
	foreach my $line (split /\n/, $applied)
	{
		my ($r, $s, $h) = split /\|/, $line;
		push @bad, "$r/$s" unless defined $out{"$r/$s"} && $out{"$r/$s"} eq $h;
	}
	return join(' ', @bad);
}

# ordering.check() of database $db finds nothing; $what names the moment.
# Also used by 002_dump_restore and 003_producer_crash.
sub self_check
{
	my ($node, $db, $what) = @_;
	is($node->safe_psql($db,
			q{SELECT string_agg(kind || ': ' || detail, E'\n') FROM ordering.check()}),
		'', "$what: ordering.check() finds nothing in $db");
	return;
}

# Check every invariant (ordering.check() of both databases included);
# $what names the moment.  Options: strict => 0
# leaves out the staleness of gap requests; settle => 1 checks without it,
# then sweeps once (nothing may be delivering then) and checks the gap
# requests strictly.  Returns the number of ledger rows.
sub check_invariants
{
	my ($w, $what, %opt) = @_;
	my $node = $w->{node};
	my $strict = ($opt{strict} // 1) && !$opt{settle};
	(my $sql = $consumer_violations_sql) =~ s/STRICT_GAPS/$strict ? 'true' : 'false'/e;
	is(producer_violations($w), '', "$what: every outbox resource is 1..n, counter at n");
	is($node->safe_psql($w->{cdb}, $sql), '',
		"$what: ledger is 1..position once each in order, parking, gap requests and state consistent");
	is(payload_violations($w), '', "$what: every applied event is the one produced");
	if ($opt{settle})
	{
		$node->safe_psql($w->{cdb}, 'SELECT count(*) FROM ordering.sweep_gaps()');
		($sql = $consumer_violations_sql) =~ s/STRICT_GAPS/true/;
		is($node->safe_psql($w->{cdb}, $sql), '',
			"$what: after a quiet sweep, gap requests exactly for the open gaps");
	}
	self_check($node, 'producerdb', $what);
	self_check($node, $w->{cdb}, $what);
	return $node->safe_psql($w->{cdb}, 'SELECT count(*) FROM ledger');
}

# The end state after healing: every produced event applied exactly once,
# nothing parked or requested, the state consumer at the last event.
sub check_complete
{
	my ($w, $what) = @_;
	my $node = $w->{node};
	my $produced = $node->safe_psql('producerdb', q{
		SELECT string_agg(resource_id || '=' || n, ' ' ORDER BY resource_id)
		  FROM (SELECT resource_id, max(seq) AS n FROM ordering.outbox GROUP BY 1) x});
	is($node->safe_psql($w->{cdb}, q{
		SELECT string_agg(resource_id || '=' || position, ' ' ORDER BY resource_id)
		  FROM ordering.positions WHERE consumer = 'ledger'}),
		$produced, "$what: the step consumer is at the last event of every resource");
	is($node->safe_psql($w->{cdb}, q{
		SELECT string_agg(resource_id || '=' || seq, ' ' ORDER BY resource_id) FROM state}),
		$produced, "$what: the state consumer is at the last event of every resource");
	is($node->safe_psql($w->{cdb}, q{
		SELECT (SELECT count(*) FROM ledger) = (SELECT count(*) FROM ledger l
		         WHERE l.seq <= (SELECT position FROM ordering.positions p
		                          WHERE p.consumer = 'ledger' AND p.resource_id = l.resource_id))}),
		't', "$what: ledger holds nothing beyond the positions");
	is($node->safe_psql($w->{cdb}, q{
		SELECT (SELECT count(*) FROM ordering.parked) || '/' ||
		       (SELECT count(*) FROM ordering.gap_requests) || '/' ||
		       (SELECT count(*) FROM inbox) || '/' ||
		       (SELECT count(*) FROM ordering.dead_letter_events)}),
		'0/0/0/0', "$what: nothing parked, requested, waiting in the inbox or dead");
	return $node->safe_psql($w->{cdb}, 'SELECT count(*) FROM ledger');
}

# The events of each resource the step consumer holds: applied (its
# position), parked, or set aside as its dead letter, as "resource|count"
# lines.  A resource holds all its n events when the count is n.
our $held_sql = q{
	SELECT o.resource_id, o.position
	       + (SELECT count(*) FROM ordering.parked p
	           WHERE p.consumer = o.consumer AND p.resource_id = o.resource_id)
	       + (SELECT count(*) FROM ordering.dead_letter_events d
	           WHERE d.consumer = o.consumer AND d.resource_id = o.resource_id)
	  FROM ordering.positions o WHERE o.consumer = 'ledger'};

# Heal every loss: relay what is unpublished, drain the inbox, then for
# each resource whose step consumer does not hold all its events (applied,
# parked or dead), republish the range after its position (what a gap
# listener and a tail check would do; behind a dead letter, what is missing
# then parks behind it).  Returns the number of ranges republished.
sub heal
{
	my ($w) = @_;
	my $node = $w->{node};
	my $ranges = 0;
	foreach my $round (1 .. 10)
	{
		1 while relay($w, batch => 1000);
		drain_inbox($w);
		my %pos = map { split /\|/ } split /\n/, $node->safe_psql($w->{cdb},
			q{SELECT resource_id, position FROM ordering.positions WHERE consumer = 'ledger'});
		my %held = map { split /\|/ } split /\n/, $node->safe_psql($w->{cdb}, $held_sql);
		my @behind;
		foreach my $line (split /\n/, $node->safe_psql('producerdb',
			'SELECT resource_id, max(seq) FROM ordering.outbox GROUP BY 1'))
		{
			my ($r, $n) = split /\|/, $line;
			my $p = $pos{$r} // 0;
			push @behind, "SELECT ordering.republish(" . lit($r) . ", " . ($p + 1) . ", $n);"
			  if ($held{$r} // 0) < $n;
		}
		last unless @behind;
		$ranges += @behind;
		$node->safe_psql('producerdb', join("\n", @behind));
	}
	return $ranges;
}

1;
