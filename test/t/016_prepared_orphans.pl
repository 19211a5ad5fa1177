# The statistics of a transaction prepared for two-phase commit wait for its
# COMMIT PREPARED in a file of pg_stat/.  A file whose transaction ended
# without taking it back (here: put back by hand after COMMIT PREPARED, as a
# crash between the commit and the removal would leave it), and a temporary
# file of a PREPARE that stopped half-way, are removed by the gap sweeper of
# the file's database, at the second sweep that finds them orphaned; the
# file of a transaction still prepared is kept, and its COMMIT PREPARED
# counts it.  No timing is asserted: every wait polls for an outcome.
use strict;
use warnings;
use File::Copy;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('orphans');
$node->init;
$node->append_conf('postgresql.conf', q{
shared_preload_libraries = 'ordering'
max_prepared_transactions = 5
ordering.sweep_databases = 'postgres'
ordering.sweep_interval = '1h'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION ordering');

my $dir = $node->data_dir . '/pg_stat';
sub files
{
	opendir(my $dh, $dir) or die "opendir $dir: $!";
	my @f = sort grep { /^ordering_prepared_/ } readdir($dh);
	closedir($dh);
	return @f;
}
# (each of its own resource: a prepared transaction keeps its counter row
# locked)
sub prepare
{
	my ($gid) = @_;
	$node->safe_psql('postgres', qq{
		BEGIN;
		SELECT ordering.emit('$gid', 'r', '{}');
		PREPARE TRANSACTION '$gid'});
}
sub assigned
{
	return $node->safe_psql('postgres', q{
		SELECT coalesce(sum(sequences_assigned), 0) FROM ordering.stream_stats
		 WHERE stream = 'ordering.outbox'});
}

prepare('kept');
my @kept = files();
is(scalar @kept, 1, 'a prepared transaction that counted has a file');

prepare('ended');
my ($ended) = grep { $_ ne $kept[0] } files();
ok(defined $ended, 'the second prepared transaction has a file of its own');
copy("$dir/$ended", "$dir/$ended.saved") or die "copy: $!";
$node->safe_psql('postgres', q{COMMIT PREPARED 'ended'});
ok(!-e "$dir/$ended", 'COMMIT PREPARED takes its file back');
is(assigned(), '1', 'and counts its transaction');
# as a crash between the end of the transaction and the removal leaves it
move("$dir/$ended.saved", "$dir/$ended") or die "move: $!";
open(my $tmp, '>', "$dir/ordering_prepared_0123456789abcdef.tmp") or die $!;
print $tmp 'half';
close($tmp);

# Sweep every second from now on.
$node->append_conf('postgresql.conf', "ordering.sweep_interval = '1s'");
$node->reload;
my $log = $node->wait_for_log(
	qr/removed file "pg_stat\/\Q$ended\E": the ordering statistics of a transaction no longer prepared/);
ok(1, 'the sweeper removes a file whose transaction is no longer prepared');
ok( $node->poll_query_until('postgres', q{
	SELECT count(*) = 1 FROM pg_ls_dir('pg_stat') f WHERE f LIKE 'ordering_prepared_%'}),
	'and the temporary file of a PREPARE that stopped half-way');
is_deeply([ files() ], \@kept, 'the file of the transaction still prepared is kept');

$node->safe_psql('postgres', q{COMMIT PREPARED 'kept'});
is(assigned(), '2', 'its COMMIT PREPARED counts it after the sweeps');
is(scalar(files()), 0, 'nothing is left');

$node->stop;
done_testing();
