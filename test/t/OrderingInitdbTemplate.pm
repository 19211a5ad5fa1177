# initdb once per TAP run: PostgreSQL::Test::Cluster's init() runs
# "initdb -D DIR -A trust -N" for every node of every test (about 1.5 s of
# CPU each, 25 nodes in a run); where ORDERING_INITDB_TEMPLATE names a
# directory, the first such call of the run makes it with that very command
# (under a lock, so that the tests prove runs side by side wait for it) and
# every call copies it instead, as PostgreSQL 16's Cluster.pm does with
# INITDB_TEMPLATE.  A call with other arguments (init(extra => [...])) still
# runs initdb.  The copies share the template's system identifier, as
# PostgreSQL 16's do.
#
# test/run.sh loads it into each test with PERL5OPT=-MOrderingInitdbTemplate
# (and PERL5LIB naming test/t); without ORDERING_INITDB_TEMPLATE, or in a
# perl that has no PostgreSQL::Test::Utils (prove itself), it does nothing.
package OrderingInitdbTemplate;

use strict;
use warnings;
use Fcntl qw(:flock);

my $template = $ENV{ORDERING_INITDB_TEMPLATE};
if (defined $template && $template ne ''
	&& eval { require PostgreSQL::Test::Utils; 1 })
{
	my $system_or_bail = \&PostgreSQL::Test::Utils::system_or_bail;
	no warnings 'redefine';
	*PostgreSQL::Test::Utils::system_or_bail = sub {
		my @cmd = @_;
		return $system_or_bail->(@cmd)
		  unless @cmd == 6
		  && $cmd[0] eq 'initdb'
		  && $cmd[1] eq '-D'
		  && $cmd[3] eq '-A'
		  && $cmd[4] eq 'trust'
		  && $cmd[5] eq '-N';
		my $pgdata = $cmd[2];
		open my $lock, '>', "$template.lock"
		  or die "could not open $template.lock: $!";
		flock($lock, LOCK_EX) or die "could not lock $template.lock: $!";
		if (!-f "$template/global/pg_control")
		{
			system("rm -rf '$template.tmp'");
			$system_or_bail->('initdb', '-D', "$template.tmp", '-A', 'trust', '-N');
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
