#!/usr/bin/env bash
#
# Relay latency: the time from a producer's commit to the claim that hands
# its event to a relay, for a relay that polls and for one woken by a
# NOTIFY, and (--standby) for a woken relay that claims with
# replicated => true against an asynchronous streaming standby (what
# waiting for the standby adds, docs/failover.md).
#
#   bash bench/wakeup.sh [--seconds S] [--rate R] [--poll MS] [--standby] [--out DIR]
#
# A private server (bench/server.sh, with track_commit_timestamp = on: the
# latency is measured on the server's clock, from the commit timestamp of
# the event's transaction to the end of the claim); one pgbench producer
# emitting R events a second (default 200) into ordering.outbox for S
# seconds (default 20) per mode; one relay (bench/wakeup_relay.py) claiming
# up to 100 rows at a time:
#
#   poll                 claims every MS milliseconds (default 100)
#   notify               ordering.wake_relays('ordering.outbox') is on:
#                        every producer transaction sends one NOTIFY
#                        ordering_outbox at commit; the relay LISTENs,
#                        claims when woken, and every second as a fallback
#   notify_replicated    (--standby) notify, claiming with replicated => true
#
# Prints, per mode, the events claimed and the latency's median, 90th and
# 99th percentile and maximum in milliseconds; writes them to DIR (default
# bench/out-wakeup).  Timings mean something only on a quiet machine.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"
. "$here/bench/server.sh"

seconds=20
rate=200
poll=100
standby=0
out=$here/bench/out-wakeup
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) seconds=$2; shift 2 ;;
		--rate) rate=$2; shift 2 ;;
		--poll) poll=$2; shift 2 ;;
		--standby) standby=1; shift ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '3,26p' "$0"; exit 0 ;;
		*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
	esac
done

ensure_packages $(pg_packages) make gcc libc6-dev \
	python3 python3-psycopg2
sandbox_create "$here"
stop_all() {
	as_postgres pg_ctl -D "$SANDBOX/standby" -m immediate stop >/dev/null 2>&1 || true
	as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1 || true
}
trap 'stop_all; sandbox_destroy' EXIT
sandbox_build

sock=$SANDBOX
bench_server_start "track_commit_timestamp = on" "synchronous_commit = on"
psql_bench() { as_postgres psql -X -q -h "$sock" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
psql_bench -c "CREATE EXTENSION ordering"

modes=(poll notify)
if [ "$standby" -eq 1 ]; then
	# an asynchronous standby on a socket of its own
	mkdir -p "$SANDBOX/standby_sock"
	chown postgres: "$SANDBOX/standby_sock" 2>/dev/null || true
	as_postgres pg_basebackup -h "$sock" -U postgres -D "$SANDBOX/standby" -R -X stream
	echo "unix_socket_directories = '$SANDBOX/standby_sock'" >>"$SANDBOX/standby/postgresql.conf"
	as_postgres pg_ctl -D "$SANDBOX/standby" -l "$SANDBOX/standby.log" -w start >/dev/null
	modes+=(notify_replicated)
fi

printf '%s\n' '\set r random(1, 10000)' \
	"SELECT ordering.emit('r' || :r, 'e', '{\"k\": 1}');" >"$SANDBOX/produce.sql"

mkdir -p "$out"
{
	echo "machine: $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n1), $(uname -sr)"
	echo "command: bench/wakeup.sh --seconds $seconds --rate $rate --poll $poll$([ "$standby" -eq 1 ] && echo ' --standby')"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	printf '%-20s %8s %9s %9s %9s %9s\n' mode events p50_ms p90_ms p99_ms max_ms
} | tee "$out/table.txt"
for m in "${modes[@]}"; do
	psql_bench -c "DELETE FROM ordering.outbox" -c "CHECKPOINT" >/dev/null
	case "$m" in
		poll) relay_mode=poll; relay_poll=$poll; replicated=false; wake=false ;;
		notify) relay_mode=notify; relay_poll=1000; replicated=false; wake=true ;;
		notify_replicated) relay_mode=notify; relay_poll=1000; replicated=true; wake=true ;;
	esac
	psql_bench -c "SELECT ordering.wake_relays('ordering.outbox', $wake)" >/dev/null
	as_postgres python3 "$SANDBOX/src/bench/wakeup_relay.py" "host=$sock user=postgres dbname=postgres" \
		"$relay_mode" "$((seconds + 1))" "$relay_poll" "$replicated" >"$out/latencies_$m.txt" &
	relay=$!
	as_postgres pgbench -n -h "$sock" -U postgres -T "$seconds" -R "$rate" -c 1 \
		-f "$SANDBOX/produce.sql" postgres >/dev/null 2>&1
	wait "$relay"
	sort -g "$out/latencies_$m.txt" | awk -v m="$m" '
		{a[NR] = $1}
		function q(p,   i) {i = int(p * NR + 0.999999); if (i < 1) i = 1; return a[i]}
		END {printf "%-20s %8d %9.2f %9.2f %9.2f %9.2f\n", m, NR, q(0.5), q(0.9), q(0.99), a[NR]}' |
		tee -a "$out/table.txt"
done
echo "wrote $out/table.txt and the latencies of each mode"
