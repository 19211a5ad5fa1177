# ordering.metrics() checked by a small parser of the Prometheus text
# exposition format: HELP and TYPE once per family and before its samples,
# samples of a family together, metric and label names valid, label values
# escaped (backslash, double quote, newline) and unescaping to the real
# names, histogram buckets cumulative with increasing le ending at +Inf equal
# to _count, and every value equal to what ordering.stats says.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

my $node = PostgreSQL::Test::Cluster->new('metrics');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');

my $weird = "we\"ird\\name\nline two";
(my $weird_sql = $weird) =~ s/'/''/g;

# Deliveries with reordering, duplicates and gaps, for two consumers.
$node->safe_psql('postgres', qq{
	DO \$\$
	DECLARE s bigint;
	BEGIN
		FOREACH s IN ARRAY ARRAY[3, 1, 2, 2, 7, 5, 4, 6, 40, 1] LOOP
			PERFORM count(*) FROM ordering.deliver('billing', 'r1', s, '{}');
		END LOOP;
		FOREACH s IN ARRAY ARRAY[2, 1, 9, 500] LOOP
			PERFORM count(*) FROM ordering.deliver('$weird_sql', 'r' || s, s, '{}');
		END LOOP;
	END
	\$\$;
	SELECT ordering.emit('p1', 'e', '{}'), ordering.emit('p1', 'e', '{}');
});
# A reconciliation against a consumer that has seen nothing: p1 is behind,
# both its events are republished.
$node->safe_psql('postgres', q{
	UPDATE ordering.outbox SET published_at = now() - interval '1 hour';
	SELECT count(*) FROM ordering.reconcile('[]', 1, '{0}');
});

# when the scrape began: an age it reports grows from then on
my $scraped_at = time;
my $text = $node->safe_psql('postgres', 'SELECT ordering.metrics()');
ok($text =~ /\n\z/ || $text eq '', 'the text ends with a newline');

my (%help, %type, %samples, @order);
my $current = '';
my $label_re = qr/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"/;
my $ok_syntax = 1;
foreach my $line (split /\n/, $text)
{
	if ($line =~ /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/)
	{
		ok(!exists $help{$1}, "HELP once for $1");
		$help{$1} = $2;
		$current = $1;
		push @order, $1;
	}
	elsif ($line =~ /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$/)
	{
		ok(!exists $type{$1}, "TYPE once for $1");
		is($1, $current, "TYPE of $1 follows its HELP");
		$type{$1} = $2;
	}
	elsif ($line =~ /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)$/)
	{
		my ($name, $labels, $value) = ($1, $2 // '', $3);
		my %l;
		my $rest = $labels;
		while ($rest =~ s/^$label_re(,|$)//)
		{
			my ($k, $v) = ($1, $2);
			$v =~ s/\\(["\\n])/$1 eq 'n' ? "\n" : $1/ge;
			$l{$k} = $v;
		}
		if ($rest ne '')
		{
			$ok_syntax = 0;
			diag("bad labels: $line");
		}
		my $family = $name;
		$family =~ s/_(bucket|sum|count)$// if !exists $type{$name};
		if ($family ne $current)
		{
			$ok_syntax = 0;
			diag("sample outside its family: $line");
		}
		push @{ $samples{$family} }, { name => $name, labels => \%l, value => $value };
	}
	else
	{
		$ok_syntax = 0;
		diag("unparsable line: $line");
	}
}
ok($ok_syntax, 'every line parses, samples follow their HELP/TYPE');

my %expect_type = (
	ordering_events_consumed_total => 'counter',
	ordering_events_applied_total => 'counter',
	ordering_events_stale_total => 'counter',
	ordering_events_duplicate_total => 'counter',
	ordering_events_parked_total => 'counter',
	ordering_events_drained_total => 'counter',
	ordering_event_gaps_escalated_total => 'counter',
	ordering_events_parked_current => 'gauge',
	ordering_event_reorder_distance => 'histogram',
	ordering_sequences_assigned_total => 'counter',
	ordering_events_dead_lettered_total => 'counter',
	ordering_dead_letters_current => 'gauge',
	ordering_events_skipped_total => 'counter',
	ordering_oldest_gap_age_seconds => 'gauge',
	ordering_sequence_conflicts_total => 'counter',
	ordering_outbox_oldest_unpublished_age_seconds => 'gauge',
	ordering_stream_hot_resource_events_total => 'counter',
	ordering_consumer_hot_resource_events_total => 'counter',
	ordering_reconcile_resources_behind_total => 'counter',
	ordering_reconcile_events_republished_total => 'counter',
	ordering_reconcile_events_purged_total => 'counter');
is_deeply(\%type, \%expect_type, 'the metric families and their types');

# Every counter and gauge against the view, consumer names unescaped.
my %column = (
	ordering_events_consumed_total => 'events_consumed',
	ordering_events_applied_total => 'events_applied',
	ordering_events_stale_total => 'events_stale',
	ordering_events_duplicate_total => 'events_duplicate',
	ordering_events_parked_total => 'events_parked',
	ordering_events_drained_total => 'events_drained',
	ordering_event_gaps_escalated_total => 'gaps_escalated',
	ordering_events_parked_current => 'parked_current',
	ordering_events_dead_lettered_total => 'events_dead_lettered',
	ordering_dead_letters_current => 'dead_letters_current',
	ordering_events_skipped_total => 'events_skipped',
	ordering_oldest_gap_age_seconds =>
	  'COALESCE(extract(epoch FROM oldest_gap_age), 0)');
foreach my $family (sort keys %column)
{
	my %got = map { $_->{labels}{consumer} => $_->{value} } @{ $samples{$family} };
	foreach my $consumer ('billing', $weird)
	{
		(my $c = $consumer) =~ s/'/''/g;
		my $want = $node->safe_psql('postgres',
			"SELECT $column{$family} FROM ordering.stats WHERE consumer = '$c'");
		my $what = "$family for " . ($consumer eq 'billing' ? 'billing' : 'the weird name');
		# an age grows between the two reads, by at most the time since
		# the scrape began (a second more for rounding)
		if ($family =~ /_age_seconds$/)
		{
			my $since = time - $scraped_at + 1;
			ok($got{$consumer} > 0 && $want - $got{$consumer} >= 0 && $want - $got{$consumer} < $since,
				"$what (grew by " . ($want - $got{$consumer}) . " s, at most $since)");
		}
		else
		{
			is($got{$consumer}, $want, $what);
		}
	}
}
is(scalar(grep { $_->{labels}{consumer} eq $weird } @{ $samples{ordering_events_consumed_total} }),
	1, 'the escaped label value unescapes to the real consumer name');

# Histogram: per consumer, cumulative buckets with increasing le ending at
# +Inf, and +Inf equal to _count.
foreach my $consumer ('billing', $weird)
{
	my @mine = grep { $_->{labels}{consumer} eq $consumer }
	  @{ $samples{ordering_event_reorder_distance} };
	my @buckets = grep { $_->{name} eq 'ordering_event_reorder_distance_bucket' } @mine;
	my ($sum) = grep { $_->{name} eq 'ordering_event_reorder_distance_sum' } @mine;
	my ($count) = grep { $_->{name} eq 'ordering_event_reorder_distance_count' } @mine;
	is_deeply([ map { $_->{labels}{le} } @buckets ],
		[ '1', '2', '3', '5', '10', '25', '100', '+Inf' ], 'bucket bounds in order');
	my $cumulative = 1;
	for my $i (1 .. $#buckets)
	{
		$cumulative = 0 if $buckets[$i]{value} < $buckets[ $i - 1 ]{value};
	}
	ok($cumulative, 'buckets are cumulative');
	ok(defined $sum && defined $count, '_sum and _count present');
	is($buckets[-1]{value}, $count->{value}, '+Inf bucket equals _count');
}

# The histogram is the view's buckets made cumulative.
my $view = $node->safe_psql('postgres',
	q{SELECT array_to_string(reorder_distance_buckets, ',') FROM ordering.stats WHERE consumer = 'billing'});
my @plain = split /,/, $view;
my @cum;
my $acc = 0;
push @cum, ($acc += $_) foreach @plain;
is_deeply([ map { $_->{value} } grep { $_->{labels}{consumer} eq 'billing' && $_->{name} =~ /_bucket$/ }
	  @{ $samples{ordering_event_reorder_distance} } ],
	\@cum, 'the histogram is the view\'s buckets, made cumulative');

is_deeply([ map { "$_->{labels}{stream}=$_->{value}" } @{ $samples{ordering_sequences_assigned_total} } ],
	['ordering.outbox=2'], 'sequences assigned per stream');
is_deeply([ map { "$_->{labels}{stream}=$_->{value}" } @{ $samples{ordering_sequence_conflicts_total} } ],
	['ordering.outbox=0'], 'sequence conflicts per stream');
# The reconciliation counters per stream, against the view.
foreach my $c ([ 'resources_behind', 'reconcile_resources_behind', 1 ],
	[ 'events_republished', 'reconcile_events_republished', 2 ],
	[ 'events_purged', 'reconcile_events_purged', 0 ])
{
	my ($family, $column, $n) = @$c;
	my $want = $node->safe_psql('postgres',
		"SELECT string_agg(stream || '=' || $column, ',' ORDER BY stream) FROM ordering.stream_stats");
	is(join(',', map { "$_->{labels}{stream}=$_->{value}" }
			@{ $samples{"ordering_reconcile_${family}_total"} }),
		$want, "reconciliation: $family per stream, as in the view");
	is($want, "ordering.outbox=$n", "reconciliation: $n $family");
}
is_deeply([ map { "$_->{labels}{stream}/$_->{labels}{resource}=$_->{value}" }
	  @{ $samples{ordering_stream_hot_resource_events_total} } ],
	['ordering.outbox/p1=2'], 'the hot resource of the stream, with its labels');
is(scalar(grep { $_->{labels}{consumer} eq $weird && $_->{labels}{resource} eq 'r500' }
	  @{ $samples{ordering_consumer_hot_resource_events_total} }),
	1, 'hot resources of a consumer carry both labels, unescaped');
is_deeply([ map { scalar(keys %{ $_->{labels} }) } @{ $samples{ordering_outbox_oldest_unpublished_age_seconds} } ],
	[0], 'the relay lag is one sample without labels');

$node->stop;
done_testing();
