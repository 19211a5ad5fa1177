# A Citus cluster for the TAP tests: a coordinator and N workers, each a
# PostgreSQL::Test::Cluster with shared_preload_libraries = 'citus,ordering',
# added to one another, with the extensions created.
#
# Citus is not in Debian's archive, so CI cannot install it: a test that
# uses this module calls OrderingCitus::skip_unless_citus() first, which
# skips the whole test, with the reason printed, when the server's
# pkglibdir has no citus.so.
#
#   use OrderingCitus;
#   OrderingCitus::skip_unless_citus();
#   my $cluster = OrderingCitus->new('name', workers => 2);
#   my $coord = $cluster->coordinator;      # PostgreSQL::Test::Cluster
#   my @workers = $cluster->workers;
#   my $third = $cluster->add_worker;       # a new node, added (no shards)
#   $cluster->node_id($third);              # its nodeid in pg_dist_node
#   $cluster->each_node(sub { my ($node) = @_; ... });
#   $cluster->clean_orphans;                # before a shard move
#
# and, exported on request, statements on a node (database "postgres"):
#
#   use OrderingCitus qw(sql fails sql_as fails_as);
#   sql($node, $query);                     # safe_psql: dies on an error
#   fails($node, $query, $sqlstate, qr/why/, $name);    # three checks
#   sql_as($node, $role, $query);           # the same, as another role
#   fails_as($node, $role, $query, $sqlstate, qr/why/, $name);
#   sequencing_triggers($table, $stream, $counters);   # SQL, see below
#
# OrderingCitus->new('name', install_path => DIR) runs the nodes on the
# PostgreSQL installed in DIR (PostgreSQL::Test::Cluster's install_path)
# instead of the one in PATH.
#
# The nodes listen on Unix sockets in one directory (PostgreSQL::Test::Cluster's
# default), which Citus takes as the host name of each node.  wal_level is
# logical and output_plugin_libraries names citus, so that every shard
# transfer mode works, non-blocking splits included (PostgreSQL 15.19 and
# later load only the output plugins listed there).  Every node is in
# database "postgres".
package OrderingCitus;

use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use Exporter 'import';
our @EXPORT_OK = qw(sql fails sql_as fails_as sequencing_triggers);

# A statement on a node (in database $db, by default postgres), as the
# test's own user; dies if it fails.
sub sql
{
	my ($node, $query, $db) = @_;
	return $node->safe_psql($db // 'postgres', $query);
}

# The same, as $user.
sub sql_as
{
	my ($node, $user, $query) = @_;
	return $node->safe_psql('postgres', $query, extra_params => [ '-U', $user ]);
}

# A statement that must fail on a node: checks that it fails, with
# $sqlstate, and with an error that matches $pattern (if given); returns
# its stderr.
sub fails
{
	my ($node, $query, $sqlstate, $pattern, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	return fails_as($node, undef, $query, $sqlstate, $pattern, $name);
}

# The same, as $user (undef: the test's own user).
sub fails_as
{
	my ($node, $user, $query, $sqlstate, $pattern, $name) = @_;
	# the checks belong to the test that called: its line in a failure,
	# its $TODO
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my ($ret, $out, $err) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n$query", on_error_stop => 1,
		extra_params => defined $user ? [ '-U', $user ] : []);
	isnt($ret, 0, "$name: fails");
	like($err, qr/ERROR:\s+$sqlstate/, "$name: SQLSTATE $sqlstate");
	like($err, $pattern, "$name: says why") if $pattern;
	return $err;
}

# The three triggers attach() makes on a distributed table of a stream (the
# stream's counter table as the sequencing trigger's fourth argument), as
# SQL: made by hand on a table attach() did not attach.
sub sequencing_triggers
{
	my ($table, $stream, $counters) = @_;
	return qq{
	CREATE TRIGGER ordering_sequence BEFORE INSERT ON $table FOR EACH ROW
	  EXECUTE FUNCTION ordering.sequence_trigger('resource_id', 'seq', '$stream', '$counters');
	CREATE TRIGGER ordering_sequence_stored AFTER INSERT ON $table FOR EACH ROW
	  WHEN (ordering_internal.sequence_stored()) EXECUTE FUNCTION ordering_internal.sequence_stored_trigger();
	CREATE TRIGGER ordering_sequence_guard BEFORE UPDATE OR DELETE ON $table FOR EACH ROW
	  EXECUTE FUNCTION ordering_internal.sequence_guard('resource_id', 'seq', '$stream');};
}

# The server's pkglibdir, as the binaries the tests run report it.
sub pkglibdir
{
	my $dir = `pg_config --pkglibdir`;
	chomp $dir if defined $dir;
	return $dir;
}

# Skip the whole test unless Citus is installed where the server loads
# libraries from; says why.
sub skip_unless_citus
{
	my $dir = pkglibdir();
	if (!defined $dir || $dir eq '')
	{
		plan skip_all => 'Citus tests skipped: pg_config --pkglibdir gave nothing';
	}
	elsif (!-e "$dir/citus.so")
	{
		plan skip_all => "Citus tests skipped: no citus.so in the server's pkglibdir $dir";
	}
	return;
}

# The version of Citus installed, from its control file, for the log.
sub citus_version
{
	my ($self) = @_;
	return $self->{coordinator}->safe_psql('postgres',
		'SELECT extversion FROM pg_extension WHERE extname = $$citus$$');
}

# A new node with Citus and ordering preloaded, started.
sub _new_node
{
	my ($self, $name) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name,
		$self->{install_path} ? (install_path => $self->{install_path}) : ());
	my $host = $node->host;
	$node->init(allows_streaming => 'logical');
	$node->append_conf('postgresql.conf', join("\n",
		"shared_preload_libraries = 'citus,ordering'",
		# Citus connects to every node once per shard group a statement
		# touches: PostgreSQL::Test::Cluster's 10 connections are too few
		"max_connections = 150",
		"max_prepared_transactions = 100",
		"max_worker_processes = 24",
		"max_replication_slots = 20",
		"max_wal_senders = 20",
		"output_plugin_libraries = 'pgoutput, test_decoding, citus'",
		# the nodes talk over Unix sockets, which have no SSL; a node
		# reaches itself by its socket directory, not localhost
		"citus.node_conninfo = 'sslmode=disable'",
		"citus.local_hostname = '$host'",
		# shards left behind by moves and splits go soon
		"citus.defer_shard_delete_interval = 1000",
		"ordering.sweep_interval = '1s'",
		@{ $self->{extra_conf} }) . "\n");
	$node->start;
	$node->safe_psql('postgres', 'CREATE EXTENSION citus');
	return $node;
}

# A coordinator and $opt{workers} workers (default 2), added to one another.
# $opt{extra_conf}: more postgresql.conf lines for every node.
# $opt{install_path}: the PostgreSQL installation the nodes run (default:
# the one in PATH).
# $opt{ordering} (default 1): CREATE EXTENSION ordering on the coordinator,
# which Citus creates on the workers too.
sub new
{
	my ($class, $name, %opt) = @_;
	my $self = bless {
		name => $name,
		extra_conf => $opt{extra_conf} // [],
		install_path => $opt{install_path},
		workers => [],
		count => 0,
	}, $class;
	my $workers = $opt{workers} // 2;

	$self->{coordinator} = $self->_new_node("${name}_coordinator");
	$self->{coordinator}->safe_psql('postgres', sprintf(
		q{SELECT citus_set_coordinator_host('%s', %d)},
		$self->{coordinator}->host, $self->{coordinator}->port));
	$self->add_worker for 1 .. $workers;
	if ($opt{ordering} // 1)
	{
		$self->{coordinator}->safe_psql('postgres', 'CREATE EXTENSION ordering');
	}
	return $self;
}

# Start one more worker and add it to the cluster; returns its node.  It
# holds no shards until a rebalance or a move gives it some.
sub add_worker
{
	my ($self) = @_;
	$self->{count}++;
	my $node = $self->_new_node("$self->{name}_worker$self->{count}");
	$self->{coordinator}->safe_psql('postgres', sprintf(
		q{SELECT citus_add_node('%s', %d)}, $node->host, $node->port));
	push @{ $self->{workers} }, $node;
	return $node;
}

sub coordinator { return $_[0]->{coordinator}; }

sub workers { return @{ $_[0]->{workers} }; }

# The coordinator, then every worker.
sub nodes
{
	my ($self) = @_;
	return ($self->{coordinator}, @{ $self->{workers} });
}

# Call $code->($node) on every node.
sub each_node
{
	my ($self, $code) = @_;
	$code->($_) for $self->nodes;
	return;
}

# A node's nodeid in pg_dist_node.
sub node_id
{
	my ($self, $node) = @_;
	return $self->{coordinator}->safe_psql('postgres', sprintf(
		q{SELECT nodeid FROM pg_dist_node WHERE nodename = '%s' AND nodeport = %d},
		$node->host, $node->port));
}

# Drop what earlier shard moves and splits left for deferred cleanup, and
# wait until nothing is left.  A move refuses to start while a placement of
# its shards awaits cleanup, and Citus drops one only if it gets the lock
# within a second (autovacuum on the old shard is enough to miss that on a
# loaded machine): call this before each move, as the Citus documentation
# advises with citus_cleanup_orphaned_resources().
sub clean_orphans
{
	my ($self) = @_;
	my $coord = $self->{coordinator};
	for (my $tries = 0;; $tries++)
	{
		$coord->psql('postgres', 'CALL citus_cleanup_orphaned_resources()');
		my $left = $coord->safe_psql('postgres', q{
			SELECT string_agg(object_name, ', ') FROM pg_dist_cleanup});
		return if $left eq '';
		die "left for cleanup after $tries s: $left" if $tries >= 120;
		sleep 1;
	}
}

# The node a connection string names, by host and port (for pgbench and
# psql run outside PostgreSQL::Test::Cluster).
sub connstr
{
	my ($self, $node) = @_;
	return $node->connstr('postgres');
}

# Stop every node.
sub stop
{
	my ($self, $mode) = @_;
	$_->stop($mode // 'fast') for reverse $self->nodes;
	return;
}

1;
