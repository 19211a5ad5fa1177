# The shared memory the library reserves at the default settings stays
# within 1 MiB: the allocations of a server with the library preloaded,
# less those of the same server without it (pg_shmem_allocations counts
# named and anonymous allocations, byte for byte).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('shmem');
$node->init;
my $used = q{SELECT sum(allocated_size) FROM pg_shmem_allocations WHERE name IS NOT NULL};

$node->start;
my $without = $node->safe_psql('postgres', $used);
$node->stop;

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
my $with = $node->safe_psql('postgres', $used);
my $pool = $node->safe_psql('postgres',
	q{SELECT allocated_size FROM pg_shmem_allocations WHERE name = 'ordering hot resources'});
my $settings = $node->safe_psql('postgres',
	q{SELECT current_setting('ordering.max_consumers') || ' ' || current_setting('ordering.max_streams')
	  || ' ' || current_setting('ordering.hot_resources_sketches') || ' ' || current_setting('ordering.hot_resources_size')});
$node->stop;

my $ours = $with - $without;
diag sprintf('ordering reserves %d bytes (%.3f MiB), of which %d for the hot-resources sketches, at %s',
	$ours, $ours / 1048576, $pool, $settings);
is($settings, '1000 1000 128 32', 'default settings');
ok($pool > 0, 'the hot-resources pool is reserved');
ok($ours > $pool, 'and more than the pool: the statistics tables');
cmp_ok($ours, '<=', 1048576, 'all of it within 1 MiB');

done_testing();
