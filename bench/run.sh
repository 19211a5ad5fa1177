#!/usr/bin/env bash
#
# Benchmarks the extension's hot paths against the hand-written SQL a user
# would otherwise write.  Sets up a throwaway server (synchronous_commit = off,
# so CPU cost is measured, not fsync), runs every variant of a workload
# interleaved over several rounds with pgbench, and prints the raw runs and a
# table of medians with ratios to the workload's baseline.
#
#   bash bench/run.sh [--rounds N] [--seconds S] [--only WORKLOAD] [--growth]
#                     [--protocol simple|prepared] [--out DIR]
#
# --protocol is pgbench's query mode (default simple: every statement is
# parsed and planned, as psql and many ORMs do; prepared: parsed and planned
# once per connection, as drivers that prepare do).  Parsing and planning
# cost about the same for every variant and dilute the differences between
# them: prepared shows the hot paths more nakedly.
# --only takes a workload name or a comma-separated list of them.
# --growth also runs bench/growth.sh (1,000,000 resources, sweep over 100,000
# parked events, backend memory over a 1,000,000-row insert, shared memory).
# The batch consumer workloads (deliver-batch, apply-batch) take their
# scripts from bench/batch.sh and always run with the simple protocol (so
# one --protocol prepared run measures the single calls prepared and the
# batches as pgbench can run them); a variant whose script says "-- events
# per transaction: N" is reported in events/s and server CPU per event, and
# one that says "-- requires: FUNCTION" is skipped while FUNCTION does not
# exist.
# The raw runs, the table and a chart (ratios.png) are written to DIR
# (default bench/out).  Timings on a shared 2-core machine are noisy: read
# ratios of medians from one run, never single absolute numbers.
# PG_CONFIG=/path/to/pg_config runs it on another PostgreSQL (see
# test/lib.sh); without PgQ there, the pgq variants are left out.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
. "$here/bench/cgroup.sh"
. "$here/bench/server.sh"
. "$here/bench/batch.sh"

args="$*"
rounds=5
seconds=5
only=""
growth=0
protocol=simple
out=$here/bench/out
while [ $# -gt 0 ]; do
	case "$1" in
		--rounds) rounds=$2; shift 2 ;;
		--seconds) seconds=$2; shift 2 ;;
		--only) only=$2; shift 2 ;;
		--growth) growth=1; shift ;;
		--protocol)
			case "$2" in simple|extended|prepared) protocol=$2 ;;
				*) echo "--protocol: simple, extended or prepared" >&2; exit 2 ;;
			esac
			shift 2 ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '3,31p' "$0"; exit 0 ;;
		*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
	esac
done

# workload name | clients | pgbench -D settings | baseline variant | variants
# (script names in bench/sql) | script run before every run (or empty)
# The consumer workloads give each of the 2 clients 5,000 resources of its
# own (10,000 in all); d is the shuffle depth (see bench/sql/setup_consumer.sql).
workloads=(
	"single-10k|2|resources=10000|plain|plain ordering plpgsql pgq no_counter lock_only ordering_wakeup|"
	"hot-1|2|resources=1|plain|plain ordering plpgsql naive pgq no_counter lock_only ordering_wakeup|"
	"batch100-10k|1|resources=10000|plain_batch|plain_batch ordering_batch plpgsql_batch pgq_batch ordering_batch_wakeup|"
	"apply-shuffled|2|resources=5000 d=4 k=0|apply_guarded|apply_guarded apply_guarded_select apply_ext apply_ext_function apply_newer_only floor|reset_consumer"
	"deliver-shuffled|2|resources=5000 d=4 k=0|deliver_plpgsql|deliver_plpgsql deliver_ext floor|reset_consumer"
	"deliver-inorder|2|resources=5000 d=1 k=0|deliver_plpgsql|deliver_plpgsql deliver_ext floor|reset_consumer"
	"deliver-batch|2|resources=5000 d=4 k=0|deliver_plpgsql|deliver_plpgsql deliver_ext deliver_ext_tx deliver_batch floor floor_batch|reset_consumer"
	"apply-batch|2|resources=5000 d=4 k=0|apply_guarded|apply_guarded apply_ext apply_ext_tx apply_guarded_batch apply_batch floor floor_batch|reset_consumer"
	"deliver-handler-inorder|2|resources=5000 d=1 k=0|deliver_handler|deliver_handler deliver_raise deliver_dead_letter deliver_positional|reset_consumer"
	"deliver-handler-shuffled|2|resources=5000 d=4 k=0|deliver_handler|deliver_handler deliver_raise deliver_dead_letter deliver_positional|reset_consumer"
)

# PgQ must be installed before sandbox_create copies the PostgreSQL tree.
# A PostgreSQL of PG_CONFIG without PgQ runs every workload without the pgq
# variants.
ensure_packages $(pg_packages pgq3) make gcc libc6-dev gnuplot-nox
have_pgq=1
if [ ! -f "$(pg_dir --sharedir)/extension/pgq.control" ]; then
	have_pgq=0
	echo "PgQ is not installed in $(pg_dir --sharedir): the pgq variants are left out"
fi
mkdir -p "$out"
sandbox_create "$here"
trap 'as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1 || true; cpu_cgroup_remove; sandbox_destroy' EXIT
sandbox_build
batch_scripts "$SANDBOX/src/bench/sql"
# the producer bounds (bench/probe): built into the sandbox only
as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM"
as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM" \
	DESTDIR="$SANDBOX/inst" install

data=$SANDBOX/data
sock=$SANDBOX
bench_server_start "shared_buffers = 512MB" "max_wal_size = 4GB" \
	"checkpoint_timeout = 30min"
cpu_cgroup_attach "$(head -n1 "$data/postmaster.pid")"

psql_bench() { as_postgres psql -X -q -h "$sock" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

# Every run starts from the same state of the machinery: the garbage of the
# previous runs vacuumed away and a fresh checkpoint, both before the clock
# starts.  Autovacuum is off (see RESULTS.md): its CPU would land on
# whichever variant happened to run, not on the one that made the garbage.
# The consumer tables are emptied after the VACUUM, by TRUNCATE, which
# leaves them without statistics (as new tables): a VACUUM of the empty
# tables would record them as empty and steer the PL/pgSQL consumer's
# cached plans to sequential scans of tables that then grow.
settle() {
	psql_bench -c "VACUUM" -c "CHECKPOINT" >/dev/null
	[ -z "$1" ] || psql_bench -f "$SANDBOX/src/bench/sql/$1.sql" >/dev/null
}
psql_bench -f "$SANDBOX/src/bench/sql/setup_producer.sql" >/dev/null
[ "$have_pgq" = 0 ] ||
	psql_bench -c "CREATE EXTENSION pgq" -c "SELECT pgq.create_queue('bench')" >/dev/null
psql_bench -f "$SANDBOX/src/bench/sql/setup_consumer.sql" >/dev/null
{
	echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1)," \
		"$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
	echo "server: $(psql_bench -Atc 'SELECT version()')"
	echo "command: bench/run.sh $args"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

# Whether the function a variant's script requires (if any) exists.
declare -A skipped
runnable() {
	local script=$SANDBOX/src/bench/sql/$1.sql fn
	fn=$(sed -n 's/^-- requires: //p' "$script")
	[ -z "$fn" ] && return 0
	[ "$(psql_bench -Atc "SELECT count(*) > 0 FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname || '.' || p.proname = '$fn'")" = t ] && return 0
	[ -n "${skipped[$1]:-}" ] || echo "skipping $1: $fn does not exist" >&2
	skipped[$1]=1
	return 1
}

raw=$out/raw.txt
{
	echo "# round workload variant tps failed server_cpu_us_per_transaction events_per_transaction"
	for w in "${workloads[@]}"; do
		IFS='|' read -r name clients defs baseline variants reset <<<"$w"
		echo "# baseline $name $baseline"
	done
} >"$raw"
for round in $(seq 1 "$rounds"); do
	for w in "${workloads[@]}"; do
		IFS='|' read -r name clients defs baseline variants reset <<<"$w"
		[ -n "$only" ] && [[ ",$only," != *",$name,"* ]] && continue
		# a batch statement has 200-300 variables, beyond pgbench's 255
		# parameters of a prepared statement: the batch workloads always
		# run with the simple protocol
		wprotocol=$protocol
		if [[ "$name" == *-batch ]] && [ "$protocol" != simple ]; then
			[ "$round" = 1 ] && echo "$name runs with the simple protocol: its statements take more parameters than pgbench prepares" >&2
			wprotocol=simple
		fi
		dopts=()
		for d in $defs; do dopts+=(-D "$d"); done
		# rotate the order by round: no variant always runs first (right
		# after another workload's autovacuum, say) or last
		[ "$have_pgq" = 1 ] || variants=$(tr ' ' '\n' <<<"$variants" | grep -v '^pgq' | paste -sd ' ')
		read -r -a vs <<<"$variants"
		n=${#vs[@]}
		for i in $(seq 0 $((n - 1))); do
			v=${vs[$(((i + round) % n))]}
			runnable "$v" || continue
			ept=$(sed -n 's/^-- events per transaction: \([0-9]*\)$/\1/p' "$SANDBOX/src/bench/sql/$v.sql")
			settle "$reset"
			cpu0=$(cpu_cgroup_usage_us)
			res=$(as_postgres pgbench -n -h "$sock" -U postgres -T "$seconds" -M "$wprotocol" \
				-c "$clients" -j "$clients" "${dopts[@]}" \
				-f "$SANDBOX/src/bench/sql/$v.sql" postgres 2>&1) || { echo "$res" >&2; exit 1; }
			cpu1=$(cpu_cgroup_usage_us)
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$res")
			failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$res")
			ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$res")
			cpu=-
			[ -n "$cpu0" ] && [ "${ntx:-0}" -gt 0 ] &&
				cpu=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$ntx" 'BEGIN {printf "%.2f", (b - a) / n}')
			echo "$round $name $v ${tps:-0} ${failed:-0} $cpu ${ept:-1}" | tee -a "$raw"
		done
	done
done

table=$out/table.txt
{
	echo "medians over $rounds rounds of ${seconds}s, $protocol protocol$([ "$protocol" = simple ] || echo " (batch workloads: simple)") (tps; batch rows/s = tps x 100; cpu_us = server CPU per transaction; batch consumers: events/s and CPU per event):"
	bash "$here/bench/table.sh" "$raw"
} >"$table"
echo
cat "$table"

bash "$here/bench/chart.sh" "$table" "$out/ratios.png"
echo "wrote $raw, $table, $out/ratios.png"

if [ "$growth" -eq 1 ]; then
	. "$here/bench/growth.sh"
	growth_run | tee "$out/growth.txt"
fi
