# pg_dump / restore of a database for the TAP tests (002_dump_restore,
# 021_consumer_dump).
package OrderingDump;

use strict;
use warnings;
use Test::More;

# Dump database $src of $node in $format ('custom' or 'plain') to $file,
# create database $db and restore the dump into it: pg_restore for the
# custom format, psql for the plain one, both stopping at the first error.
# Each of the two steps is one test.
sub dump_restore
{
	my ($node, $src, $db, $format, $file) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->command_ok(
		[ 'pg_dump', '-d', $node->connstr($src), "--format=$format", '-f', $file ],
		"pg_dump $format");
	if ($format eq 'custom')
	{
		$node->command_ok(
			[ 'pg_restore', '--exit-on-error', '-d', $node->connstr($db), $file ],
			'pg_restore custom');
	}
	else
	{
		$node->command_ok(
			[ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', $node->connstr($db), '-f', $file ],
			'psql restores the plain dump');
	}
	return;
}

1;
