# Sourced by the bench scripts after test/lib.sh: the private server of a
# bench run, in the sandbox of sandbox_create.

# Create and start the server in $SANDBOX/data: reachable only on a Unix
# socket in $SANDBOX, the library preloaded, synchronous_commit off (so CPU
# is measured, not fsync) and autovacuum off (see bench/RESULTS.md).  Each
# argument is one more postgresql.conf line.
bench_server_start() {
	as_postgres initdb -D "$SANDBOX/data" -A trust -U postgres >/dev/null
	{
		printf '%s\n' "listen_addresses = ''" \
			"unix_socket_directories = '$SANDBOX'" \
			"shared_preload_libraries = 'ordering'" \
			"synchronous_commit = off" \
			"autovacuum = off"
		[ $# -eq 0 ] || printf '%s\n' "$@"
	} >>"$SANDBOX/data/postgresql.conf"
	as_postgres pg_ctl -D "$SANDBOX/data" -l "$SANDBOX/server.log" -w start >/dev/null
}
