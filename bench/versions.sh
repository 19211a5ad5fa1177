#!/usr/bin/env bash
#
# Compares the producer of several versions of the extension in one run:
# one server per git revision, all up at once and idle but for the one
# measured, every variant of every version run in turn in each round, so
# that the machine's drift lands on all of them alike.  For a question
# bench/run.sh cannot answer inside one server: is this version slower than
# that one?
#
#   bash bench/versions.sh [--rounds N] [--seconds S] [--resources R]
#                          [--variants "plain ordering ..."] [--batch]
#                          [--baseline VARIANT] [--clients C] REV [REV ...]
#
# REV is any git revision of this repository (a release tag, a commit,
# HEAD); each is built from `git archive`, with its own bench/sql scripts.
# The workload is that of bench/run.sh's single-10k (--resources 10000,
# the default) or hot-1 (--resources 1): 2 clients, prepared statements;
# --batch is batch100-10k's instead (100-row INSERTs over random
# resources: the variants plain_batch and ordering_batch, unless
# --variants names others), with 1 client as bench/run.sh runs it: two
# such transactions share a resource about once per pair, and the
# second then waits for the first's commit (--clients 2 measures that).
# Prints each run (round, revision, variant, tps, server CPU per
# transaction), then per revision and variant the medians, and the median
# of the per-round ratios to that revision's baseline (plain, or
# plain_batch with --batch; --baseline names another).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

rounds=6
seconds=5
resources=10000
variants="plain ordering lock_only"
variants_given=0
baseline=""
batch=0
clients=
while [ $# -gt 0 ]; do
	case "$1" in
		--rounds) rounds=$2; shift 2 ;;
		--seconds) seconds=$2; shift 2 ;;
		--resources) resources=$2; shift 2 ;;
		--variants) variants=$2; variants_given=1; shift 2 ;;
		--batch) batch=1; shift ;;
		--baseline) baseline=$2; shift 2 ;;
		--clients) clients=$2; shift 2 ;;
		-h|--help) sed -n '3,28p' "$0"; exit 0 ;;
		--*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
		*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "name at least one git revision (try --help)" >&2; exit 2; }
if [ "$batch" -eq 1 ]; then
	[ "$variants_given" -eq 1 ] || variants="plain_batch ordering_batch"
	[ -n "$baseline" ] || baseline=plain_batch
	[ -n "$clients" ] || clients=1
fi
[ -n "$clients" ] || clients=2
[ -n "$baseline" ] || baseline=plain
revs=("$@")

ensure_packages $(pg_packages) make gcc libc6-dev
sandboxes=()
cgroups=()
cleanup() {
	local s c
	for s in "${sandboxes[@]}"; do
		SANDBOX_BIN=$s/inst$(pg_dir --bindir) as_postgres pg_ctl -D "$s/data" \
			-m immediate stop >/dev/null 2>&1 || true
		rm -rf "$s"
	done
	for c in "${cgroups[@]}"; do rmdir "$c" 2>/dev/null || true; done
	rm -rf "${tree:-}"
}
trap cleanup EXIT

# server CPU of a revision's server: its own cgroup (cgroup v1 cpuacct)
cg_root=/sys/fs/cgroup/cpuacct
[ -w "$cg_root" ] || { echo "needs a writable $cg_root (run as root)" >&2; exit 1; }
cpu_us() { echo $(($(cat "$1/cpuacct.usage") / 1000)); }

for rev in "${revs[@]}"; do
	tree=$(mktemp -d)
	git -C "$here" archive "$rev" | tar -x -C "$tree"
	sandbox_create "$tree"
	rm -rf "$tree"
	sandbox_build
	as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM"
	as_postgres make -s -C "$SANDBOX/src/bench/probe" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		DESTDIR="$SANDBOX/inst" install
	as_postgres initdb -D "$SANDBOX/data" -A trust -U postgres >/dev/null
	printf '%s\n' "listen_addresses = ''" "unix_socket_directories = '$SANDBOX'" \
		"shared_preload_libraries = 'ordering'" "synchronous_commit = off" \
		"autovacuum = off" "shared_buffers = 512MB" "max_wal_size = 4GB" \
		"checkpoint_timeout = 30min" >>"$SANDBOX/data/postgresql.conf"
	as_postgres pg_ctl -D "$SANDBOX/data" -l "$SANDBOX/server.log" -w start >/dev/null
	as_postgres psql -X -q -h "$SANDBOX" -U postgres -d postgres \
		-f "$SANDBOX/src/bench/sql/setup_producer.sql" >/dev/null
	cg=$cg_root/ordering-versions-$$-${#sandboxes[@]}
	mkdir "$cg"
	pm=$(head -n1 "$SANDBOX/data/postmaster.pid")
	for p in "$pm" $(pgrep -P "$pm"); do echo "$p" >"$cg/cgroup.procs"; done
	sandboxes+=("$SANDBOX")
	cgroups+=("$cg")
done

raw=$(mktemp)
echo "# round revision variant tps server_cpu_us_per_transaction"
for round in $(seq 1 "$rounds"); do
	for k in "${!revs[@]}"; do
		SANDBOX=${sandboxes[$k]}
		SANDBOX_BIN=$SANDBOX/inst$(pg_dir --bindir)
		for v in $variants; do
			as_postgres psql -X -q -h "$SANDBOX" -U postgres -d postgres \
				-c VACUUM -c CHECKPOINT >/dev/null
			c0=$(cpu_us "${cgroups[$k]}")
			out=$(as_postgres pgbench -n -h "$SANDBOX" -U postgres -T "$seconds" \
				-M prepared -c "$clients" -j "$clients" -D resources="$resources" \
				-f "$SANDBOX/src/bench/sql/$v.sql" postgres 2>&1) || { echo "$out" >&2; exit 1; }
			c1=$(cpu_us "${cgroups[$k]}")
			tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out")
			ntx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
			echo "$round ${revs[$k]} $v $tps $(awk -v a="$c0" -v b="$c1" -v n="$ntx" 'BEGIN {printf "%.2f", (b - a) / n}')" |
				tee -a "$raw"
		done
	done
done

echo
echo "medians over $rounds rounds of ${seconds}s, prepared, $clients clients, $resources resources:"
printf "%-12s %-14s %10s %8s %12s %12s\n" revision variant tps cpu_us "tps/$baseline" "cpu/$baseline"
awk -v base="$baseline" '
function median(list,    n, a, i, j, t) {
	n = split(list, a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ key = $2 " " $3; tps[key] = tps[key] " " $4; cpu[key] = cpu[key] " " $5; run[$1 " " key] = $4 " " $5; order[key] = NR; keys[key] = 1; rev[key] = $2; var[key] = $3; rounds[$1] = 1 }
END {
	for (key in keys) {
		tr = ""; cr = ""
		for (r in rounds) {
			if (!((r " " key) in run) || !((r " " rev[key] " " base) in run)) continue
			split(run[r " " key], x, " "); split(run[r " " rev[key] " " base], p, " ")
			tr = tr " " x[1] / p[1]; cr = cr " " x[2] / p[2]
		}
		printf "%-12s %-14s %10.0f %8.2f %11.3fx %11.3fx\n", rev[key], var[key], median(tps[key]), median(cpu[key]), median(tr), median(cr)
	}
}' "$raw" | sort -k1,1 -k2,2
rm -f "$raw"
