# Growth checks for bench/run.sh --growth (sourced; uses psql_bench, $sock,
# $SANDBOX, $rounds, $seconds of run.sh with the benchmark server running).
#
#  1. per-event cost of a sequenced insert with 1,000,000 resources vs
#     10,000 (each stream's counters created beforehand, so every insert
#     advances an existing counter), interleaved, medians;
#  2. ordering.sweep_gaps() over 100,000 parked events in 10,000 resources,
#     all past the gap deadline;
#  3. backend memory during one 1,000,000-row INSERT ... SELECT into an
#     attached outbox (sampled with pg_log_backend_memory_contexts), with the
#     same insert into the plain table as reference;
#  4. shared memory the library allocates at default settings.

growth_pgbench() {
	# $1 script, $2 resources; prints tps
	as_postgres pgbench -n -h "$sock" -U postgres -T "$seconds" -c 2 -j 2 \
		-D "resources=$2" -f "$SANDBOX/src/bench/sql/$1" postgres 2>&1 |
		sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}

growth_median() {
	sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'
}

growth_memory() {
	# $1 table, $2 "seq" to give the seq (plain table) or "" (attached);
	# prints the Grand total of the inserting backend, sampled
	local table=$1 cols=resource_id vals="'m' || (i % 10000)" before
	[ -n "$2" ] && { cols="$cols, seq"; vals="$vals, i"; }
	before=$(wc -l <"$SANDBOX/server.log")
	psql_bench -c "SET application_name = 'growth_mem'" -c "
		INSERT INTO $table ($cols, event_type, payload)
		SELECT $vals, 'e', '{\"k\": 1}'
		  FROM generate_series(1, 1000000) i" >/dev/null &
	local ins=$!
	sleep 0.5
	while kill -0 "$ins" 2>/dev/null; do
		psql_bench -Atc "SELECT pg_log_backend_memory_contexts(pid)
			FROM pg_stat_activity WHERE application_name = 'growth_mem'
			  AND state = 'active'" >/dev/null || true
		sleep 2
	done
	wait "$ins"
	tail -n +"$((before + 1))" "$SANDBOX/server.log" |
		sed -n 's/.*Grand total: \([0-9]*\) bytes.*/\1/p' |
		awk '{printf "%.1f MiB ", $1 / 1048576} END {print "(" NR " samples)"}'
}

growth_run() {
	local r t10 t1m i
	echo "== growth: per-event cost, 10,000 vs 1,000,000 resources (2 clients, ${seconds}s runs)"
	psql_bench >/dev/null <<-'SQL'
		CREATE TABLE g10k_outbox (LIKE plain_outbox INCLUDING ALL);
		SELECT ordering.attach('g10k_outbox', stream => 'g10k');
		CREATE TABLE g1m_outbox (LIKE plain_outbox INCLUDING ALL);
		SELECT ordering.attach('g1m_outbox', stream => 'g1m');
		SET session_replication_role = replica;	-- counters loaded as they are
		INSERT INTO ordering.sequences SELECT 'g10k', 'r' || i, 0 FROM generate_series(1, 10000) i;
		INSERT INTO ordering.sequences SELECT 'g1m', 'r' || i, 0 FROM generate_series(1, 1000000) i;
		RESET session_replication_role;
		VACUUM ANALYZE ordering.sequences;
	SQL
	sed 's/ext_outbox/g10k_outbox/' "$SANDBOX/src/bench/sql/ordering.sql" >"$SANDBOX/src/bench/sql/g10k.sql"
	sed 's/ext_outbox/g1m_outbox/' "$SANDBOX/src/bench/sql/ordering.sql" >"$SANDBOX/src/bench/sql/g1m.sql"
	: >"$SANDBOX/growth_raw.txt"
	for r in $(seq 1 "$rounds"); do
		t10=$(growth_pgbench g10k.sql 10000)
		t1m=$(growth_pgbench g1m.sql 1000000)
		echo "$r 10k $t10 1m $t1m" | tee -a "$SANDBOX/growth_raw.txt"
	done
	t10=$(awk '{print $3}' "$SANDBOX/growth_raw.txt" | growth_median)
	t1m=$(awk '{print $5}' "$SANDBOX/growth_raw.txt" | growth_median)
	awk -v a="$t10" -v b="$t1m" 'BEGIN {printf "median tps 10k %.0f, 1m %.0f: per-event cost at 1m = %.2fx of 10k (target <= 1.3x)\n", a, b, a / b}'

	echo "== growth: sweep_gaps over 100,000 parked events in 10,000 resources"
	psql_bench >/dev/null <<-'SQL'
		INSERT INTO ordering.positions SELECT 'sweep', 'r' || i, 0 FROM generate_series(1, 10000) i;
		INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
		SELECT 'sweep', 'r' || i, s, '{"k": 1}', now() - interval '1 hour'
		  FROM generate_series(1, 10000) i, generate_series(2, 11) s;
		VACUUM ANALYZE ordering.positions, ordering.parked;
	SQL
	for i in 1 2 3; do
		psql_bench -c "TRUNCATE ordering.gap_requests" >/dev/null
		psql_bench -c '\timing on' -c "SELECT count(*) AS requests FROM ordering.sweep_gaps()" |
			tr '\n' ' ' | sed 's/  */ /g'
		echo
	done

	echo "== growth: backend memory (Grand total of all contexts) during one 1,000,000-row INSERT"
	echo "plain_outbox:    $(growth_memory plain_outbox seq)"
	psql_bench -c "TRUNCATE ext_outbox" >/dev/null
	echo "ext_outbox:      $(growth_memory ext_outbox "")"

	echo "== growth: shared memory allocated by the library at default settings"
	# Named allocations, then the whole segment with and without the library
	# (hash entries are allocated anonymously, so the difference is the truth).
	psql_bench -c "SELECT name, size, allocated_size FROM pg_shmem_allocations
		WHERE name LIKE 'ordering%' ORDER BY name"
	local with without
	with=$(psql_bench -Atc "SELECT sum(allocated_size) FROM pg_shmem_allocations")
	as_postgres pg_ctl -D "$data" -w -m fast -o "-c shared_preload_libraries=''" \
		restart >/dev/null
	without=$(psql_bench -Atc "SELECT sum(allocated_size) FROM pg_shmem_allocations")
	as_postgres pg_ctl -D "$data" -w -m fast restart >/dev/null
	awk -v a="$with" -v b="$without" 'BEGIN {printf "shared memory with the library %d bytes, without %d: the library takes %d bytes = %.3f MiB (target <= 1 MiB)\n", a, b, a - b, (a - b) / 1048576}'
}
