#!/usr/bin/env bash
#
# Producer cost on a Citus cluster: single-row INSERTs through the
# coordinator into three tables distributed the same way (by resource_id,
# co-located), on one cluster, side by side:
#
#   plain      no trigger: the client supplies seq (the cost without
#              numbering)
#   ordering   attached with ordering.attach(): the C trigger counts in the
#              co-located counter shard next to the row's shard
#   plpgsql    the SQL-only prototype: a PL/pgSQL BEFORE INSERT
#              trigger upserting a counter table co-located with the table
#              (INSERT ... ON CONFLICT DO UPDATE ... RETURNING)
#
#   bash bench/citus.sh [--seconds S] [--rounds N] [--clients C] [--resources R] [--out DIR]
#
# A coordinator and two workers in the sandbox (Unix sockets only, ports
# 5570-5572 name the sockets), citus.shard_count = 8, synchronous_commit
# off.  Each round runs every variant for S seconds (default 10) with C
# pgbench clients (default 4) over R resources (default 1000); the variants
# take turns, N rounds (default 3), so a busy machine slows them alike.
# Prints the median transactions per second of each variant and its cost
# per row relative to plain (plain's tps / the variant's tps); writes the
# table to DIR (default bench/out-citus).  Skipped, with the reason
# printed, where the server's pkglibdir has no citus.so; a Citus installed
# with "make install DESTDIR=DIR" is used with ORDERING_CITUS_DIR=DIR
# (test/lib.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

seconds=10
rounds=3
clients=4
resources=1000
out=$here/bench/out-citus
while [ $# -gt 0 ]; do
	case "$1" in
		--seconds) seconds=$2; shift 2 ;;
		--rounds) rounds=$2; shift 2 ;;
		--clients) clients=$2; shift 2 ;;
		--resources) resources=$2; shift 2 ;;
		--out) out=$2; shift 2 ;;
		-h|--help) sed -n '3,25p' "$0"; exit 0 ;;
		*) echo "unknown option: $1 (try --help)" >&2; exit 2 ;;
	esac
done

ensure_packages $(pg_packages) make gcc libc6-dev
sandbox_create "$here"
if [ ! -e "$SANDBOX/inst$(pg_dir --pkglibdir)/citus.so" ]; then
	echo "bench/citus.sh skipped: no citus.so in $(pg_dir --pkglibdir) (nor in ORDERING_CITUS_DIR)"
	sandbox_destroy
	exit 0
fi
ports=(5570 5571 5572)
stop_all() {
	local p
	for p in "${ports[@]}"; do
		as_postgres pg_ctl -D "$SANDBOX/node$p" -m immediate stop >/dev/null 2>&1 || true
	done
}
trap 'stop_all; sandbox_destroy' EXIT
sandbox_build

for p in "${ports[@]}"; do
	as_postgres initdb -D "$SANDBOX/node$p" -A trust -U postgres >/dev/null
	printf '%s\n' "port = $p" "listen_addresses = ''" \
		"unix_socket_directories = '$SANDBOX'" \
		"shared_preload_libraries = 'citus,ordering'" \
		"max_prepared_transactions = 100" "max_connections = 200" \
		"synchronous_commit = off" "autovacuum = off" \
		"citus.node_conninfo = 'sslmode=disable'" \
		"citus.local_hostname = '$SANDBOX'" \
		>>"$SANDBOX/node$p/postgresql.conf"
	as_postgres pg_ctl -D "$SANDBOX/node$p" -l "$SANDBOX/node$p.log" -w start >/dev/null
	as_postgres psql -X -q -h "$SANDBOX" -p "$p" -U postgres -c 'CREATE EXTENSION citus'
done
coord() {
	as_postgres psql -X -q -v ON_ERROR_STOP=1 -h "$SANDBOX" -p "${ports[0]}" -U postgres "$@"
}
coord -c "SELECT citus_set_coordinator_host('$SANDBOX', ${ports[0]})" \
	-c "SELECT citus_add_node('$SANDBOX', ${ports[1]})" \
	-c "SELECT citus_add_node('$SANDBOX', ${ports[2]})" \
	-c "CREATE EXTENSION ordering" >/dev/null
coord >/dev/null <<'SQL'
SET citus.shard_count = 8;
CREATE TABLE plain_events (id bigserial, resource_id text NOT NULL, seq bigint NOT NULL,
                           payload jsonb NOT NULL, PRIMARY KEY (resource_id, id));
SELECT create_distributed_table('plain_events', 'resource_id');
CREATE TABLE ordering_events (LIKE plain_events INCLUDING ALL);
SELECT create_distributed_table('ordering_events', 'resource_id', colocate_with => 'plain_events');
SELECT ordering.attach('ordering_events');
CREATE TABLE plpgsql_events (LIKE plain_events INCLUDING ALL);
SELECT create_distributed_table('plpgsql_events', 'resource_id', colocate_with => 'plain_events');
CREATE TABLE plpgsql_counters (resource_id text PRIMARY KEY, last_seq bigint NOT NULL);
SELECT create_distributed_table('plpgsql_counters', 'resource_id', colocate_with => 'plain_events');
CREATE FUNCTION plpgsql_sequence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO plpgsql_counters AS c VALUES (NEW.resource_id, 1)
    ON CONFLICT (resource_id) DO UPDATE SET last_seq = c.last_seq + 1
    RETURNING c.last_seq INTO NEW.seq;
    RETURN NEW;
END $$;
SET citus.enable_unsafe_triggers = on;
CREATE TRIGGER plpgsql_sequence BEFORE INSERT ON plpgsql_events
    FOR EACH ROW EXECUTE FUNCTION plpgsql_sequence();
SQL

mkdir -p "$SANDBOX/scripts"
for v in plain ordering plpgsql; do
	seqcol="" seqval=""
	[ "$v" = plain ] && seqcol=", seq" && seqval=", :seq"
	cat >"$SANDBOX/scripts/$v.sql" <<EOF
\\set r random(1, $resources)
\\set seq random(1, 1000000000)
INSERT INTO ${v}_events (resource_id$seqcol, payload) VALUES ('r' || :r$seqval, '{"k": 1}');
EOF
done
chown -R postgres: "$SANDBOX/scripts"

# warm the connections and caches of every variant
for v in plain ordering plpgsql; do
	as_postgres pgbench -n -h "$SANDBOX" -p "${ports[0]}" -U postgres -c "$clients" \
		-T 2 -f "$SANDBOX/scripts/$v.sql" postgres >/dev/null
done

declare -A tps
for round in $(seq 1 "$rounds"); do
	for v in plain ordering plpgsql; do
		t=$(as_postgres pgbench -n -h "$SANDBOX" -p "${ports[0]}" -U postgres \
			-c "$clients" -T "$seconds" -f "$SANDBOX/scripts/$v.sql" postgres |
			sed -n 's/^tps = \([0-9.]*\).*/\1/p')
		tps[$v]="${tps[$v]:-} $t"
		echo "round $round: $v $t tps"
	done
done

# the numbers are right: every resource 1..n in the numbered variants
for v in ordering plpgsql; do
	bad=$(coord -At -c "WITH e AS MATERIALIZED (SELECT resource_id, seq FROM ${v}_events)
		SELECT count(*) FROM (SELECT resource_id FROM e GROUP BY 1
		                       HAVING count(DISTINCT seq) <> count(*) OR max(seq) <> count(*)) x")
	[ "$bad" = 0 ] || { echo "$v: $bad resources numbered wrongly" >&2; exit 1; }
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mkdir -p "$out"
plain=$(echo "${tps[plain]}" | median)
{
	echo "# Citus $(coord -At -c "SELECT extversion FROM pg_extension WHERE extname = 'citus'"), $("$PG_CONFIG_SYSTEM" --version), coordinator + 2 workers on one machine"
	echo "# single-row INSERTs through the coordinator, $clients clients, $resources resources, $rounds rounds x ${seconds}s, median"
	printf '%-10s %10s %14s\n' variant tps cost_vs_plain
	for v in plain ordering plpgsql; do
		m=$(echo "${tps[$v]}" | median)
		printf '%-10s %10.1f %14.2f\n' "$v" "$m" "$(awk -v a="$plain" -v b="$m" 'BEGIN {print a / b}')"
	done
} | tee "$out/table.txt"
