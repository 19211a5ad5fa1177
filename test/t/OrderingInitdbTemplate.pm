# initdb once per TAP run: PostgreSQL::Test::Cluster's init() runs
# "initdb -D DIR -A trust -N" for every node of every test (18 spells it
# "initdb --no-sync --pgdata DIR --auth trust"; about 1.5 s of CPU each, 25
# nodes in a run); where ORDERING_INITDB_TEMPLATE names a directory, the
# first such call of the run makes it with that very command (under a
# lock, so that the tests prove runs side by side wait for it) and every
# call copies it instead, as PostgreSQL 17's Cluster.pm does with
# INITDB_TEMPLATE.  A call with other arguments (init(extra => [...])) still
# runs initdb.  The copies share the template's system identifier, as
# PostgreSQL 17's do.
#
# test/run.sh loads it into each test with PERL5OPT=-MOrderingInitdbTemplate
# (and PERL5LIB naming test/t); without ORDERING_INITDB_TEMPLATE, or in a
# perl that has no PostgreSQL::Test::Utils (prove itself), it does nothing.
package OrderingInitdbTemplate;

use strict;
use warnings;
use Fcntl qw(:flock);

my $template = $ENV{ORDERING_INITDB_TEMPLATE};
my $pgdata_arg;

# The data directory of Cluster.pm's plain initdb call, or undef for any
# other command: "initdb -D DIR -A trust -N" up to 17, "initdb --no-sync
# --pgdata DIR --auth trust" from 18 on.  Sets $pgdata_arg to its index.
sub plain_initdb
{
	my @cmd = @_;
	return undef unless @cmd == 6 && $cmd[0] eq 'initdb';
	if ($cmd[1] eq '-D' && $cmd[3] eq '-A' && $cmd[4] eq 'trust' && $cmd[5] eq '-N')
	{
		$pgdata_arg = 2;
	}
	elsif ($cmd[1] eq '--no-sync' && $cmd[2] eq '--pgdata'
		&& $cmd[4] eq '--auth' && $cmd[5] eq 'trust')
	{
		$pgdata_arg = 3;
	}
	else
	{
		return undef;
	}
	return $cmd[$pgdata_arg];
}
if (defined $template && $template ne ''
	&& eval { require PostgreSQL::Test::Utils; 1 })
{
	my $system_or_bail = \&PostgreSQL::Test::Utils::system_or_bail;
	no warnings 'redefine';
	*PostgreSQL::Test::Utils::system_or_bail = sub {
		my @cmd = @_;
		my $pgdata = plain_initdb(@cmd);
		return $system_or_bail->(@cmd) unless defined $pgdata;
		open my $lock, '>', "$template.lock"
		  or die "could not open $template.lock: $!";
		flock($lock, LOCK_EX) or die "could not lock $template.lock: $!";
		if (!-f "$template/global/pg_control")
		{
			system("rm -rf '$template.tmp'");
			my @initdb = @cmd;
			$initdb[ $pgdata_arg ] = "$template.tmp";
			$system_or_bail->(@initdb);
			rename("$template.tmp", $template)
			  or die "could not rename $template.tmp: $!";
		}
		close $lock;
		# logged as "Running: cp -a ..." where initdb's command would be
		$system_or_bail->('cp', '-a', "$template/.", $pgdata);
		return;
	};
}

1;
