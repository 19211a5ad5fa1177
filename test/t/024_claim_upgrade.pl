# Upgrading 1.0 to 1.1 replaces claim_unpublished(integer) with
# claim_unpublished(integer, boolean, interval).  Whoever could execute the
# old function can execute the new one, with the same grant option, and
# pg_dump still dumps those grants, so a restored database keeps them too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('upgrade');
$node->init;
$node->start;
my $new = 'ordering.claim_unpublished(integer, boolean, interval)';

$node->safe_psql('postgres', q{
	CREATE EXTENSION ordering VERSION '1.0';
	CREATE ROLE relay;
	CREATE ROLE "Relay Two";
	CREATE ROLE nobody;
	SELECT ordering.grant_producer('relay');
	GRANT USAGE ON SCHEMA ordering TO "Relay Two";
	GRANT EXECUTE ON FUNCTION ordering.claim_unpublished(integer) TO "Relay Two" WITH GRANT OPTION;
});

# Between installing the 1.1 library and ALTER EXTENSION UPDATE, the
# producer refuses with the hint that ends the wait.
my ($ret, $out, $err) = $node->psql('postgres', q{SELECT ordering.emit('a', 'e', '{}')});
isnt($ret, 0, 'a 1.0 database refuses to produce with the current library');
like($err, qr/at version 1\.0 in this database, but its library is version \d+\.\d+.*\n.*HINT:  Run ALTER EXTENSION ordering UPDATE/s,
	'and says to update the extension');

$node->safe_psql('postgres', 'ALTER EXTENSION ordering UPDATE');
$node->safe_psql('postgres', q{SELECT ordering.emit('a', 'e', '{}')});
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'ordering'}),
	$node->safe_psql('postgres', q{SELECT default_version FROM pg_available_extensions WHERE name = 'ordering'}),
	'updated to the current version');

sub privileges
{
	my ($db) = @_;
	return $node->safe_psql($db, qq{
		SELECT has_function_privilege('relay', '$new', 'EXECUTE'),
		       has_function_privilege('relay', '$new', 'EXECUTE WITH GRANT OPTION'),
		       has_function_privilege('Relay Two', '$new', 'EXECUTE WITH GRANT OPTION'),
		       has_function_privilege('nobody', '$new', 'EXECUTE'),
		       has_function_privilege('relay', 'ordering.wait_for_standbys(interval)', 'EXECUTE')});
}

# relay: granted by grant_producer (1.0), not with grant option;
# "Relay Two": by hand, with grant option; nobody: nothing.  The 1.0
# grant_producer did not know wait_for_standbys: the update gives the
# producer set of this version, wait_for_standbys included.
is(privileges('postgres'), 't|f|t|f|t', 'the upgrade kept who may claim, and how');
is( $node->safe_psql('postgres', q{
		SET ROLE relay;
		SELECT count(*) FROM ordering.claim_unpublished(10)}),
	'1', 'the relay claims as before');
$node->safe_psql('postgres', q{SELECT ordering.grant_producer('relay')});
is( $node->safe_psql('postgres', q{
		SELECT has_function_privilege('relay', 'ordering.wait_for_standbys(interval)', 'EXECUTE')}),
	't', 'grant_producer grants wait_for_standbys');

# A dump carries the grants: restored into a new database, they are there.
my $dump = PostgreSQL::Test::Utils::tempdir . '/dump.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('postgres'), '-f', $dump ], 'pg_dump');
my $text = slurp_file($dump);
like($text, qr/GRANT ALL ON FUNCTION ordering\.claim_unpublished\(batch_size integer, replicated boolean, timeout interval\) TO relay;/,
	'the dump grants the new function to the relay');
$node->safe_psql('postgres', 'CREATE DATABASE restored');
$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('restored'), '-f', $dump ],
	'restore');
is(privileges('restored'), 't|f|t|f|t', 'the restored database has the same grants');

# The initial privileges (what pg_dump leaves out) name only the owner, in a
# new installation and in the upgraded one.
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION ordering');
foreach my $db ('fresh', 'postgres')
{
	is( $node->safe_psql($db, qq{
			SELECT count(DISTINCT i.objoid),
			       count(*) FILTER (WHERE e.grantee <> p.proowner)
			  FROM pg_init_privs i CROSS JOIN aclexplode(i.initprivs) e
			  JOIN pg_proc p ON p.oid = i.objoid
			 WHERE i.objoid = '$new'::regprocedure}),
		'1|0', "$db: the extension's initial privileges of the new function name only its owner");
}

$node->stop;
done_testing();
