#!/usr/bin/env bash
#
# Benchmarks the extension's hot paths against the hand-written SQL a user
# would otherwise write.  Sets up a throwaway server (synchronous_commit = off,
# so CPU cost is measured, not fsync), runs every variant of a workload
# interleaved over several rounds with pgbench, and prints the raw runs and a
# table of medians with ratios to the workload's baseline.
#
#   bash bench/run.sh [--rounds N] [--seconds S] [--only WORKLOAD]
#
# Timings on a shared 2-core machine are noisy: read ratios of medians from
# one run, never single absolute numbers.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

rounds=5
seconds=5
only=""
while [ $# -gt 0 ]; do
	case "$1" in
		--rounds) rounds=$2; shift 2 ;;
		--seconds) seconds=$2; shift 2 ;;
		--only) only=$2; shift 2 ;;
		-h|--help) sed -n '3,13p' "$0"; exit 0 ;;
		*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
	esac
done

# workload name | clients | pgbench -D settings | baseline variant | variants (script names in bench/sql)
workloads=(
	"single-10k|2|resources=10000|plain|plain ordering plpgsql"
	"hot-1|2|resources=1|plain|plain ordering plpgsql naive"
	"batch100-10k|1|resources=10000|plain_batch|plain_batch ordering_batch plpgsql_batch"
)

ensure_packages postgresql-15 postgresql-server-dev-15 make gcc libc6-dev
sandbox_create "$here"
trap 'as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1 || true; sandbox_destroy' EXIT
sandbox_build

data=$SANDBOX/data
sock=$SANDBOX
as_postgres initdb -D "$data" -A trust -U postgres >/dev/null
cat >>"$data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$sock'
shared_preload_libraries = 'ordering'
synchronous_commit = off
shared_buffers = 512MB
max_wal_size = 4GB
checkpoint_timeout = 30min
EOF
as_postgres pg_ctl -D "$data" -l "$SANDBOX/server.log" -w start >/dev/null

psql_bench() { as_postgres psql -X -q -h "$sock" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
psql_bench -f "$SANDBOX/src/bench/sql/setup_producer.sql" >/dev/null

raw=$SANDBOX/raw.txt
: >"$raw"
for round in $(seq 1 "$rounds"); do
	for w in "${workloads[@]}"; do
		IFS='|' read -r name clients defs baseline variants <<<"$w"
		[ -n "$only" ] && [ "$only" != "$name" ] && continue
		for v in $variants; do
			out=$(as_postgres pgbench -n -h "$sock" -U postgres -T "$seconds" \
				-c "$clients" -j "$clients" -D "$defs" \
				-f "$SANDBOX/src/bench/sql/$v.sql" postgres 2>&1)
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
			failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
			echo "$round $name $v ${tps:-0} ${failed:-0}" | tee -a "$raw"
		done
	done
done

echo
echo "medians over $rounds rounds of ${seconds}s (tps; batch rows/s = tps x 100):"
printf "%-14s %-15s %12s %8s %8s\n" workload variant median_tps ratio failed
for w in "${workloads[@]}"; do
	IFS='|' read -r name clients defs baseline variants <<<"$w"
	[ -n "$only" ] && [ "$only" != "$name" ] && continue
	base=$(awk -v n="$name" -v v="$baseline" '$2==n && $3==v {print $4}' "$raw" |
		sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}')
	for v in $variants; do
		awk -v n="$name" -v v="$v" '$2==n && $3==v {print $4, $5}' "$raw" | sort -g |
			awk -v n="$name" -v v="$v" -v b="$base" '
				{a[NR]=$1; f+=$2}
				END {m=(NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2);
				     printf "%-14s %-15s %12.0f %7.2fx %8d\n", n, v, m, (b>0?m/b:0), f}'
	done
done
