# pg_dump and restore of databases that use the extension, for the TAP tests
# (002_dump_restore, 021_consumer_dump).  Every restore follows the steps the
# documentation gives (docs/restore.md):
#
#   createdb; ALTER DATABASE ... SET ordering.restoring = on;
#   pg_restore (or psql for a plain dump);
#   SELECT ordering.post_restore();
#
# and for a data-only dump, into a database that has the schema (and so the
# extension): SELECT ordering.pre_restore(); pg_restore --data-only;
# SELECT ordering.post_restore().
package OrderingDump;

use strict;
use warnings;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);

# pg_dump database $src of $node to $file with the given options (at least
# a --format); one test.
sub dump_ok
{
	my ($node, $src, $file, @opts) = @_;
	$node->command_ok([ 'pg_dump', '-d', $node->connstr($src), @opts, '-f', $file ],
		"pg_dump @opts");
	return;
}

# The first steps of a restore: create database $db and set it to restore
# mode.  With $schema_only_dump, the schema is restored first and restore
# mode set by ordering.pre_restore() (the steps of a data-only restore).
sub prepare
{
	my ($node, $db, $schema_only_dump) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	if (defined $schema_only_dump)
	{
		restore_ok($node, $db, $schema_only_dump, 'archive');
		is($node->safe_psql($db, 'SELECT ordering.pre_restore()'), 't',
			"$db: ordering.pre_restore()");
	}
	else
	{
		$node->safe_psql($db, "ALTER DATABASE $db SET ordering.restoring = on");
	}
	return;
}

# Load $file into $db: pg_restore with @opts for an archive (custom or
# directory format), psql in one transaction stopping at the first error
# for a plain dump ($how 'plain').  One test; returns the seconds it took.
sub restore_ok
{
	my ($node, $db, $file, $how, @opts) = @_;
	my $start = time;
	if ($how eq 'plain')
	{
		$node->command_ok(
			[ 'psql', '-X', '-q', '--single-transaction', '-v', 'ON_ERROR_STOP=1',
			  '-d', $node->connstr($db), '-f', $file ],
			"psql restores $file into $db");
	}
	else
	{
		$node->command_ok(
			[ 'pg_restore', '--exit-on-error', @opts, '-d', $node->connstr($db), $file ],
			"pg_restore @opts $file into $db");
	}
	return time - $start;
}

# The last step: ordering.post_restore().  One test.
sub finish
{
	my ($node, $db) = @_;
	is($node->safe_psql($db, 'SELECT ordering.post_restore()'), 't',
		"$db: ordering.post_restore()");
	return;
}

# Dump database $src in $format ('custom' or 'plain') to $file and restore
# it into a new database $db with the documented steps.
sub dump_restore
{
	my ($node, $src, $db, $format, $file) = @_;
	dump_ok($node, $src, $file, "--format=$format");
	prepare($node, $db);
	restore_ok($node, $db, $file, $format eq 'plain' ? 'plain' : 'archive');
	finish($node, $db);
	return;
}

1;
