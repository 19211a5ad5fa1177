#!/usr/bin/env bash
#
# Bulk loads into an outbox: COPY and INSERT ... SELECT of many rows into a
# table without a trigger, with ordering's trigger (numbers assigned, and
# numbers supplied by COPY: the restore path, taken as history), with the
# PL/pgSQL counter trigger, with the bench probe that only fills in the
# column (what losing COPY's batched inserts costs by itself), and with
# ordering's trigger disabled (ALTER TABLE ... DISABLE TRIGGER, as
# pg_restore --disable-triggers does); see bench/RESULTS.md, "Bulk loads".
#
#   bash bench/copy.sh [--callgrind] [--rows N] [--resources K] [--rounds R]
#                      [--out DIR] [variant ...]
#
# Default: timings.  A private server (bench/server.sh), ROWS rows (default
# 1,000,000) over K resources (default 10,000) per load, every variant once per round in
# rotating order, each from an empty table and no counters, after a VACUUM
# and a CHECKPOINT; prints the median rows/s, its ratio to the variant's
# baseline (copy_plain, insert_plain), the server CPU and the WAL per row,
# and writes raw.txt and table.txt to DIR (default bench/out-copy).  Timings
# mean something only on a quiet machine.
# --callgrind: instructions and WAL bytes per row instead, counted by
# callgrind in a single-user backend (deterministic, fine on a busy
# machine): for each variant a fresh cluster loads ROWS rows (default
# 100,000) and, in another run, 0 rows; the difference over ROWS is the cost
# of a row.  The ratio is the baseline's instructions over the variant's.
#
# variants: copy_plain copy_no_counter copy_ordering copy_restore copy_plpgsql
#           copy_disabled
#           insert_plain insert_no_counter insert_ordering insert_plpgsql
#           (default: all)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
. "$here/bench/cgroup.sh"
. "$here/bench/server.sh"

callgrind=0
rows=""
rounds=5
out=$here/bench/out-copy
resources=10000
variants=()
while [ $# -gt 0 ]; do
	case "$1" in
		--callgrind) callgrind=1; shift ;;
		--rows) rows=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--resources) resources=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
		-*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
		*) variants+=("$1"); shift ;;
	esac
done
all=(copy_plain copy_no_counter copy_ordering copy_restore copy_plpgsql copy_disabled
	insert_plain insert_no_counter insert_ordering insert_plpgsql)
[ ${#variants[@]} -eq 0 ] && variants=("${all[@]}")
for v in "${variants[@]}"; do
	[[ " ${all[*]} " == *" $v "* ]] || { echo "unknown variant $v" >&2; exit 2; }
done
if [ -z "$rows" ]; then
	rows=1000000
	[ "$callgrind" -eq 1 ] && rows=100000
fi

# The table a variant loads into.
table_of() {
	case "${1#*_}" in
		plain) echo plain_outbox ;;
		no_counter) echo no_counter_outbox ;;
		ordering|restore) echo ext_outbox ;;
		plpgsql) echo plpgsql_outbox ;;
		disabled) echo disabled_outbox ;;
	esac
}

# The tables of bench/sql/setup_producer.sql, and one attached table whose
# trigger is disabled.
setup_sql() {
	cat "$SANDBOX/src/bench/sql/setup_producer.sql"
	echo
	echo "CREATE TABLE disabled_outbox (LIKE plain_outbox INCLUDING ALL);"
	echo
	echo "SELECT ordering.attach('disabled_outbox');"
	echo
	echo "ALTER TABLE disabled_outbox DISABLE TRIGGER ordering_sequence;"
	echo
}

# The data files: row i (1..n) is event i / resources + 1 of resource
# 'r' || i % resources, so every resource gets 1, 2, 3, ... in file order.
# $1 n, $2 with the seq column (1) or without (0).
write_data() {
	awk -v n="$1" -v k="$resources" -v withseq="$2" 'BEGIN {
		for (i = 0; i < n; i++)
			if (withseq)
				printf "r%d\t%d\te\t{\"k\": 1}\n", i % k, int(i / k) + 1
			else
				printf "r%d\te\t{\"k\": 1}\n", i % k
	}'
}

# The load statement of a variant: $1 variant, $2 rows, $3 directory of the
# data files (seq.N and noseq.N).
load_sql() {
	local v=$1 n=$2 dir=$3 t
	t=$(table_of "$v")
	case "$v" in
		copy_plain|copy_restore|copy_disabled)
			echo "COPY $t (resource_id, seq, event_type, payload) FROM '$dir/seq.$n';" ;;
		copy_*)
			echo "COPY $t (resource_id, event_type, payload) FROM '$dir/noseq.$n';" ;;
		insert_plain)
			echo "INSERT INTO $t (resource_id, seq, event_type, payload)" \
				"SELECT 'r' || (i % $resources), i / $resources + 1, 'e', '{\"k\": 1}'" \
				"FROM generate_series(0, $n - 1) i;" ;;
		insert_*)
			echo "INSERT INTO $t (resource_id, event_type, payload)" \
				"SELECT 'r' || (i % $resources), 'e', '{\"k\": 1}'" \
				"FROM generate_series(0, $n - 1) i;" ;;
	esac
}

ensure_packages $(pg_packages) make gcc libc6-dev valgrind
sandbox_create "$here"
trap 'as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1 || true; cpu_cgroup_remove; sandbox_destroy' EXIT
sandbox_build
as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM"
as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM" \
	DESTDIR="$SANDBOX/inst" install

datadir=$SANDBOX/copydata
mkdir -p "$datadir"
for n in 0 "$rows"; do
	write_data "$n" 1 >"$datadir/seq.$n"
	write_data "$n" 0 >"$datadir/noseq.$n"
done
chown -R postgres: "$datadir" 2>/dev/null || true

if [ "$callgrind" -eq 1 ]; then
	# one single-user backend run loading $2 rows; sets cg_total (instructions)
	# and cg_wal (WAL bytes of the load statement)
	run_one() {
		local v=$1 n=$2 data=$SANDBOX/data_$1_$2 in=$SANDBOX/in_$1_$2.sql
		as_postgres initdb -D "$data" -A trust -U postgres >/dev/null
		echo "shared_preload_libraries = 'ordering'" >>"$data/postgresql.conf"
		# -j: a command ends at a semicolon followed by an empty line
		{
			setup_sql
			echo "CREATE TABLE wal_mark AS SELECT pg_current_wal_insert_lsn() AS lsn;"
			echo
			load_sql "$v" "$n" "$datadir"
			echo
			echo "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), lsn) AS wal_bytes FROM wal_mark;"
			echo
		} >"$in"
		chown postgres: "$in" 2>/dev/null || true
		as_postgres valgrind --tool=callgrind --callgrind-out-file="$SANDBOX/cg.$v.$n" \
			"$SANDBOX_BIN/postgres" --single -D "$data" -j postgres \
			<"$in" >"$SANDBOX/out.$v.$n" 2>"$SANDBOX/err.$v.$n"
		grep -q ERROR "$SANDBOX/out.$v.$n" && { grep ERROR "$SANDBOX/out.$v.$n" | head >&2; exit 1; }
		cg_total=$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$SANDBOX/cg.$v.$n")
		cg_wal=$(sed -n 's/.*wal_bytes = "\([0-9]*\)".*/\1/p' "$SANDBOX/out.$v.$n")
	}
	echo "per row, $rows rows over $resources resources (callgrind, single-user backend):"
	printf "%-18s %14s %11s %12s\n" variant instructions ratio wal_bytes
	declare -A per_row
	for v in "${variants[@]}"; do
		run_one "$v" 0
		t0=$cg_total w0=$cg_wal
		run_one "$v" "$rows"
		per_row[$v]=$(awk -v a="$t0" -v b="$cg_total" -v n="$rows" 'BEGIN {printf "%.0f", (b - a) / n}')
		wal=$(awk -v a="$w0" -v b="$cg_wal" -v n="$rows" 'BEGIN {printf "%.1f", (b - a) / n}')
		base=${v%%_*}_plain
		ratio=-
		[ -n "${per_row[$base]:-}" ] &&
			ratio=$(awk -v b="${per_row[$base]}" -v x="${per_row[$v]}" 'BEGIN {printf "%.2fx", b / x}')
		printf "%-18s %14s %11s %12s\n" "$v" "${per_row[$v]}" "$ratio" "$wal"
	done
	exit 0
fi

data=$SANDBOX/data
sock=$SANDBOX
bench_server_start "shared_buffers = 512MB" "max_wal_size = 8GB" \
	"checkpoint_timeout = 30min"
cpu_cgroup_attach "$(head -n1 "$data/postmaster.pid")"
psql_bench() { as_postgres psql -X -q -h "$sock" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
setup_sql | psql_bench >/dev/null

mkdir -p "$out"
{
	echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)," \
		"$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
	echo "server: $(psql_bench -Atc 'SELECT version()')"
	echo "command: bench/copy.sh --rows $rows --resources $resources --rounds $rounds ${variants[*]}"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

raw=$out/raw.txt
{
	# the 7th column, 1, is bench/table.sh's events per transaction
	echo "# round workload variant rows_per_s failed server_cpu_us_per_row 1 wal_bytes_per_row"
	echo "# baseline copy copy_plain"
	echo "# baseline insert insert_plain"
} >"$raw"
n=${#variants[@]}
for round in $(seq 1 "$rounds"); do
	for i in $(seq 0 $((n - 1))); do
		v=${variants[$(((i + round) % n))]}
		t=$(table_of "$v")
		# every load starts from an empty table and no counters, as a restore does
		psql_bench -c "TRUNCATE $t" \
			-c "DELETE FROM ordering.sequences WHERE stream = 'public.$t'" \
			-c "TRUNCATE plpgsql_counters" -c "VACUUM" -c "CHECKPOINT" >/dev/null
		lsn0=$(psql_bench -Atc "SELECT pg_current_wal_insert_lsn()")
		cpu0=$(cpu_cgroup_usage_us)
		t0=$(date +%s%N)
		psql_bench -c "$(load_sql "$v" "$rows" "$datadir")" >/dev/null
		t1=$(date +%s%N)
		cpu1=$(cpu_cgroup_usage_us)
		wal=$(psql_bench -Atc "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '$lsn0') / $rows")
		cpu=-
		[ -n "$cpu0" ] && cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$rows" 'BEGIN {printf "%.3f", (b - a) / n}')
		rps=$(awk -v a="$t0" -v b="$t1" -v n="$rows" 'BEGIN {printf "%.0f", n / ((b - a) / 1e9)}')
		printf "%s %s %s %s 0 %s 1 %.1f\n" "$round" "${v%%_*}" "$v" "$rps" "$cpu" "$wal" | tee -a "$raw"
	done
done

{
	echo "medians over $rounds rounds of one $rows-row load over $resources resources each (median_tps = rows/s; cpu_us = server CPU per row):"
	bash "$here/bench/table.sh" "$raw"
	echo
	echo "WAL bytes per row (median):"
	for v in "${variants[@]}"; do
		printf "%-18s %8s\n" "$v" "$(awk -v v="$v" '!/^#/ && $3 == v {print $8}' "$raw" |
			sort -g | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')"
	done
} >"$out/table.txt"
echo
cat "$out/table.txt"
echo "wrote $raw, $out/table.txt"
