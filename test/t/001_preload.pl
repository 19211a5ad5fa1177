# The library works without preloading, and loads cleanly when preloaded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('plain');
$node->init;
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');
is($node->safe_psql('postgres',
		"SELECT ordering.emit('r', 'e', '{}'), ordering.emit('r', 'e', '{}')"),
	'1|2', 'producer API works without shared_preload_libraries');
$node->stop;

$node->append_conf('postgresql.conf', "shared_preload_libraries = 'ordering'");
$node->start;
is($node->safe_psql('postgres', "SELECT ordering.emit('r', 'e', '{}')"),
	'3', 'counters continue after a restart with the library preloaded');
$node->stop;

done_testing();
