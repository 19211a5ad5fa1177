# A logical replication subscriber whose table is attached
# (docs/replicas.md, "Logical replication").  With the triggers as attach()
# makes them, they do not fire for the rows the subscription applies, so
# the counters stay behind the numbers applied: a local insert is refused
# (55000), where 1.2 repeated a number.  With the three triggers enabled
# ALWAYS, the apply keeps each counter at the highest number applied, the
# initial copy included, and local producers continue after it; a number
# both sides hand out is stored twice, not looped on (1.2's apply worker
# failed with 40001 again and again).  post_restore() raises the counters of
# a table whose rows were applied before its triggers fired.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $schema = q{
	CREATE EXTENSION ordering;
	CREATE TABLE ev (id bigint PRIMARY KEY, account text NOT NULL, version bigint);
	SELECT ordering.attach('ev', 'account', 'version');
	CREATE TABLE ev_later (id bigint PRIMARY KEY, account text NOT NULL, version bigint);
	SELECT ordering.attach('ev_later', 'account', 'version');
};

my $pub = PostgreSQL::Test::Cluster->new('publisher');
$pub->init(allows_streaming => 'logical');
$pub->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$pub->start;
$pub->safe_psql('postgres', $schema);
$pub->safe_psql('postgres', q{
	INSERT INTO ev (id, account) VALUES (1, 'a'), (2, 'a'), (3, 'a'), (4, 'b'), (5, 'b');
	INSERT INTO ev_later (id, account) VALUES (1, 'a'), (2, 'a');
	CREATE PUBLICATION pub FOR TABLE ev, ev_later;
});

my $sub = PostgreSQL::Test::Cluster->new('subscriber');
$sub->init;
$sub->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$sub->start;
$sub->safe_psql('postgres', $schema);
# ev's triggers fire in the apply, before the initial copy; ev_later's are
# as attach() made them
$sub->safe_psql('postgres', q{
	ALTER TABLE ev ENABLE ALWAYS TRIGGER ordering_sequence;
	ALTER TABLE ev ENABLE ALWAYS TRIGGER ordering_sequence_stored;
	ALTER TABLE ev ENABLE ALWAYS TRIGGER ordering_sequence_guard;
});
my $connstr = $pub->connstr . ' dbname=postgres';
$sub->safe_psql('postgres',
	"CREATE SUBSCRIPTION sub CONNECTION '$connstr' PUBLICATION pub");
$sub->wait_for_subscription_sync($pub, 'sub');

my $last = q{SELECT ordering.last_sequence('public.ev', 'a') || ',' ||
                    ordering.last_sequence('public.ev', 'b')};
is($sub->safe_psql('postgres', $last), '3,2',
	'the initial copy raised the counters to the numbers copied');

$pub->safe_psql('postgres',
	"INSERT INTO ev (id, account) VALUES (6, 'a'), (7, 'a')");
$pub->wait_for_catchup('sub');
is($sub->safe_psql('postgres', $last), '5,2',
	'the apply keeps the counters at the highest number applied');
my $check_ev = q{SELECT string_agg(kind, ',' ORDER BY kind) FROM ordering.check()
                 WHERE detail NOT LIKE '%ev_later%'};
is($sub->safe_psql('postgres', $check_ev), '',
	'check() finds nothing wrong with the table on the subscriber');

# local producers continue after the numbers applied
is($sub->safe_psql('postgres',
		"INSERT INTO ev (id, account) VALUES (100, 'a'), (101, 'c') RETURNING version"),
	"6\n1", 'a local insert continues after the highest number applied');

# a number both sides hand out: stored twice, and the apply goes on
$pub->safe_psql('postgres', "INSERT INTO ev (id, account) VALUES (8, 'a')");
$pub->safe_psql('postgres', "INSERT INTO ev (id, account) VALUES (9, 'b')");
$pub->wait_for_catchup('sub');
is($sub->safe_psql('postgres', q{SELECT string_agg(version::text, ',' ORDER BY version, id)
                                 FROM ev WHERE account IN ('a', 'b') GROUP BY account
                                 ORDER BY account}),
	"1,2,3,4,5,6,6\n1,2,3", 'the apply went on after a number both sides handed out');
is($sub->safe_psql('postgres', $check_ev), 'seq_repeated_in_table',
	'and check() reports the number held twice');

# triggers as attach() made them: local inserts are refused
my ($ret, $out, $err) = $sub->psql('postgres',
	"INSERT INTO ev_later (id, account) VALUES (100, 'a')",
	extra_params => [ '-v', 'VERBOSITY=verbose' ]);
like($err, qr/55000/, 'a local insert into a table the apply writes unseen is refused');
like($err, qr/ENABLE ALWAYS TRIGGER/, 'and the hint says what to do');

# enabled ALWAYS afterwards, post_restore() raises the counters to the rows
# applied before; local producers then continue after them
$sub->safe_psql('postgres', q{
	BEGIN;
	ALTER TABLE ev_later ENABLE ALWAYS TRIGGER ordering_sequence;
	ALTER TABLE ev_later ENABLE ALWAYS TRIGGER ordering_sequence_stored;
	ALTER TABLE ev_later ENABLE ALWAYS TRIGGER ordering_sequence_guard;
	SELECT ordering.post_restore();
	COMMIT;
});
is($sub->safe_psql('postgres',
		"INSERT INTO ev_later (id, account) VALUES (100, 'a') RETURNING version"),
	'3', 'after post_restore(), a local insert continues after the rows applied');

done_testing();
