# A Citus cluster updated from 1.2 (docs/citus.md, "Updating a cluster
# from 1.2"): a coordinator and two workers running release 1.2, two
# distributed streams attached there by two roles given their sets with the
# grant functions, rows numbered; then the current build installed, the
# nodes restarted and ALTER EXTENSION ordering UPDATE on the coordinator.
# Citus runs the update on the workers too; numbering goes on without a
# gap; and the update made the registry of distributed streams at its
# commit (sql/definitions/citus/citus_registry_at_commit.sql), holding both
# streams, so that a sequencing trigger made by hand on a table of one role
# co-located with the other's stream is refused (0A000) as on a cluster
# made at 1.3, with no step after the update.
#
# The nodes run a private copy of the PostgreSQL installation, since the
# test swaps the extension's files in it.  Release 1.2's files come from
# test/run.sh (ORDERING_RELEASE_12: test/lib.sh, release_files, built from
# the git history or taken from the upgrade suite's cache).
use strict;
use warnings;
use File::Basename qw(dirname basename);
use File::Copy qw(copy);
use File::Find;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use OrderingCitus qw(sql fails fails_as sql_as sequencing_triggers);

OrderingCitus::skip_unless_citus();
my $release = $ENV{ORDERING_RELEASE_12};
if (!$release || !-d $release)
{
	plan skip_all => 'no files of release 1.2: '
	  . ($ENV{ORDERING_RELEASE_12_MISSING} // 'run it through test/run.sh tap, which provides them');
}

# The private copy of the installation: bindir's parent and sharedir, in
# the same places relative to each other (the server finds its share
# directory relative to its binaries).
sub pg_config
{
	my ($what) = @_;
	my $dir = `pg_config --$what`;
	chomp $dir;
	return $dir;
}
my ($bindir, $sharedir, $libdir) = map { pg_config($_) } qw(bindir sharedir pkglibdir);
my $prefix = dirname($bindir);
$prefix = dirname($prefix) while index("$sharedir/", "$prefix/") != 0;
my $copy = PostgreSQL::Test::Utils::tempdir() . '/inst';
system('cp', '-a', $prefix, $copy) == 0 or die "cannot copy $prefix to $copy";
my $relative = sub { my ($dir) = @_; return $copy . substr($dir, length($prefix)); };
my ($copy_lib, $copy_ext) = ($relative->($libdir), $relative->($sharedir) . '/extension');

# Install the extension's library and files from $from (a release's
# "make install DESTDIR" tree, or the current installation): ordering.so,
# ordering.control and its scripts.
sub install_ordering
{
	my ($from) = @_;
	my @files;
	find(sub { push @files, $File::Find::name if /^ordering(\.so|\.control|--.*\.sql)$/ }, $from);
	for my $f (@files)
	{
		my $to = basename($f) eq 'ordering.so' ? $copy_lib : $copy_ext;
		copy($f, "$to/" . basename($f)) or die "cannot copy $f to $to: $!";
	}
	return;
}
install_ordering($release);

my $cluster = OrderingCitus->new('citus_update', workers => 2, ordering => 0,
	install_path => dirname($relative->($bindir)));
my $coord = $cluster->coordinator;
my ($w1, $w2) = $cluster->workers;
sql($coord, 'CREATE EXTENSION ordering');
is(sql($w1, q{SELECT extversion FROM pg_extension WHERE extname = 'ordering'}), '1.2',
	'the cluster runs release 1.2');

# Two streams of two roles, given their sets as 1.2 said: on every node,
# with Citus's propagation off, which gives it on that node only.  owner_x
# owns stream X (x_events), owner_y stream Y (y_events), co-located.
sql($coord, q{
	CREATE ROLE owner_x LOGIN;
	CREATE ROLE owner_y LOGIN;
	GRANT CREATE ON SCHEMA public TO owner_x, owner_y;
});
$cluster->each_node(sub {
	my ($node) = @_;
	sql($node, q{
		SET citus.enable_ddl_propagation = off;
		SELECT ordering.grant_producer('owner_x'), ordering.grant_producer('owner_y');
	});
});
# each stream attached by the extension's owner (the first attach() of a
# co-location group makes its counter table), then given to its role
for my $r ('x', 'y')
{
	sql($coord, qq{
		SET citus.shard_count = 4;
		CREATE TABLE ${r}_events (id bigserial, resource_id text NOT NULL, seq bigint,
		                          PRIMARY KEY (resource_id, id));
		SELECT create_distributed_table('${r}_events', 'resource_id'
		         @{[ $r eq 'y' ? ", colocate_with => 'x_events'" : '' ]});
		SELECT ordering.attach('${r}_events');
		ALTER TABLE ${r}_events OWNER TO owner_$r;
	});
	sql_as($coord, "owner_$r", qq{INSERT INTO ${r}_events (resource_id) VALUES ('a'), ('b'), ('a')});
	sql_as($w1, "owner_$r", qq{INSERT INTO ${r}_events (resource_id) VALUES ('a')});
}
my $numbers = sub {
	my ($table) = @_;
	return sql($coord, qq{SELECT string_agg(resource_id || seq, ',' ORDER BY resource_id, seq) FROM $table});
};
is($numbers->('y_events'), 'a1,a2,a3,b1', 'stream Y numbered at 1.2');

# The current build, the nodes restarted, the update on the coordinator
install_ordering($libdir);
install_ordering($sharedir . '/extension');
$cluster->each_node(sub { $_[0]->restart });
sql($coord, 'ALTER EXTENSION ordering UPDATE');
my $current = sql($coord, q{SELECT default_version FROM pg_available_extensions WHERE name = 'ordering'});
for my $node ($cluster->nodes)
{
	is(sql($node, q{SELECT extversion FROM pg_extension WHERE extname = 'ordering'}), $current,
		$node->name . ' is at ' . $current . ' after the update on the coordinator alone');
}

# Numbering goes on without a gap, through the coordinator and on a worker
for my $r ('x', 'y')
{
	sql_as($coord, "owner_$r", qq{INSERT INTO ${r}_events (resource_id) VALUES ('a'), ('b')});
	sql_as($w2, "owner_$r", qq{INSERT INTO ${r}_events (resource_id) VALUES ('b')});
	is($numbers->("${r}_events"), 'a1,a2,a3,a4,b1,b2,b3', "stream " . uc($r) . " continues without a gap");
}

# The registry of distributed streams lists both streams' tables on every node
for my $node ($cluster->nodes)
{
	is( sql($node, q{SELECT string_agg(tbl::text || '=' || stream, ',' ORDER BY stream)
	                   FROM ordering_internal.distributed_attachments}),
		'public.x_events=public.x_events,public.y_events=public.y_events',
		'the update made the registry of distributed streams, on ' . $node->name);
}

# as attach() makes it on a cluster made at 1.3: a reference table that
# is no member of the extension (so a dump of the coordinator carries it),
# and nothing of the update left behind
is( sql($coord, q{
		SELECT p.partmethod::text || ',' || (SELECT count(*) FROM pg_depend d
		                                WHERE d.classid = 'pg_class'::regclass
		                                  AND d.objid = p.logicalrelid AND d.deptype = 'e')
		  FROM pg_dist_partition p
		 WHERE p.logicalrelid = 'ordering_internal.distributed_attachments'::regclass}),
	'n,0', 'the registry is a reference table, not a member of the extension');
is(sql($coord, q{SELECT count(*) FROM pg_class WHERE relname = 'ordering_registry_at_commit'}), '0',
	'the update left no table of its own');

# owner_x's own table co-located with stream Y, with stream Y's sequencing
# trigger made by hand: refused, through the coordinator and on a worker
my $ycounters = sql($coord, q{SELECT ordering_internal.distributed_counters('public.y_events')});
sql_as($coord, 'owner_x', q{
	CREATE TABLE intruder_events (id bigserial, resource_id text NOT NULL, seq bigint,
	                              PRIMARY KEY (resource_id, id));
	SELECT create_distributed_table('intruder_events', 'resource_id', colocate_with => 'y_events');
	SET citus.enable_unsafe_triggers = on;} . sequencing_triggers('intruder_events', 'public.y_events', $ycounters));
fails_as($coord, 'owner_x', q{INSERT INTO intruder_events (resource_id) VALUES ('a')},
	'0A000', qr/relation "intruder_events" is not attached to stream "public.y_events"/,
	'a hand-made trigger of another role\'s stream, through the coordinator');
fails_as($w1, 'owner_x', q{INSERT INTO intruder_events (resource_id) VALUES ('b')},
	'0A000', qr/relation "intruder_events" is not attached to stream "public.y_events"/,
	'... and on a worker');
is($numbers->('y_events'), 'a1,a2,a3,a4,b1,b2,b3', "stream Y lost no number to it");
is(sql($coord, q{SELECT count(*) FROM intruder_events}), '0', 'nothing was stored');

$cluster->stop;
done_testing();
