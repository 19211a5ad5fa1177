#!/usr/bin/env bash
#
# Instructions per sequenced insert, counted by callgrind: deterministic, so
# it can choose between implementations while the machine is busy (pgbench
# ratios on a shared machine are not).  Runs a single-user backend
# (postgres --single, no WAL writer, no contention) on a fresh cluster for
# each variant: WARM single-row INSERTs into 10,000 resources, then N more;
# the difference of two runs' totals / N is the cost of one INSERT statement
# (one transaction each), the warm-up excluded.
#
#   bash bench/callgrind.sh [--warm W] [--inserts N] [--batch] [variant ...]
#
# variants: plain ordering plpgsql (default all).  --batch makes each
# statement a 100-row multi-resource INSERT (cost then per row).
# Consumer variants, the same way with deliveries of the in-order stream
# of 10,000 resources (event i is seq i / 10000 + 1 of resource i % 10000),
# through the handler of bench/sql/setup_consumer.sql: deliver_handler
# (the five-argument form), deliver_raise (the same, written with
# on_error => 'raise'), deliver_dead_letter (on_error => 'dead_letter') and
# deliver_positional (the same, 'dead_letter' as a sixth positional
# argument); N is then the number of deliveries.  deliver_dead_letter minus
# deliver_raise is the cost of the subtransaction alone: the statements
# differ only in the word, while the named argument costs parse analysis.
# CG_KEEP=PREFIX keeps the callgrind files as PREFIX.variant (with the N
# measured statements) and PREFIX.variant.0 (without).
# PG_CONFIG=/path/to/pg_config counts on another PostgreSQL (test/lib.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

warm=20000
n=5000
batch=0
variants=()
while [ $# -gt 0 ]; do
	case "$1" in
		--warm) warm=$2; shift 2 ;;
		--inserts) n=$2; shift 2 ;;
		--batch) batch=1; shift ;;
		-h|--help) sed -n '3,17p' "$0"; exit 0 ;;
		*) variants+=("$1"); shift ;;
	esac
done
[ ${#variants[@]} -eq 0 ] && variants=(plain ordering plpgsql)

ensure_packages $(pg_packages) make gcc libc6-dev valgrind
sandbox_create "$here"
trap 'sandbox_destroy' EXIT
sandbox_build

# statements: $1 table, $2 count, $3 first resource offset
statements() {
	local table=$1 count=$2 i seqcol="" seqval=""
	# plain: the client supplies a unique seq (see bench/sql/plain.sql)
	[ "$table" = plain_outbox ] && seqcol=", seq"
	if [ "$batch" -eq 1 ]; then
		for i in $(seq 1 "$count"); do
			[ -n "$seqcol" ] && seqval=", $(($3 + i)) * 1000 + g"
			printf "%s\n\n" "INSERT INTO $table (resource_id$seqcol, event_type, payload) SELECT 'r' || ((g * 7919 + $i * 101) % 10000)$seqval, 'e', '{\"k\": 1}' FROM generate_series(1, 100) g;"
		done
	else
		awk -v t="$table" -v n="$count" -v o="$3" -v sc="$seqcol" 'BEGIN {
			for (i = 1; i <= n; i++)
				printf "INSERT INTO %s (resource_id%s, event_type, payload) VALUES (%s%s, %s, %s);\n\n",
					t, sc, "'"'"'r" ((i + o) * 7919 % 10000) "'"'"'",
					(sc == "" ? "" : ", " (i + o)), "'"'"'e'"'"'", "'"'"'{\"k\": 1}'"'"'"
		}'
	fi
}

# deliveries: $1 on_error (empty: none; positional: 'dead_letter' as the
# sixth argument), $2 count, $3 first event of the stream
deliveries() {
	awk -v e="$1" -v n="$2" -v o="$3" 'BEGIN {
		q = sprintf("%c", 39)
		x = (e == "" ? "" : ", on_error => " q e q)
		if (e == "positional")
			x = ", " q "dead_letter" q
		for (i = o; i < o + n; i++)
			printf "SELECT ordering.deliver(%sbench%s, %sr%d%s, %d, %s{\"k\": 1}%s, %sbench_apply(text, bigint, jsonb)%s%s);\n\n",
				q, q, q, i % 10000, q, int(i / 10000) + 1, q, q, q, q, x
	}'
}

# total instructions of one single-user session: $1 variant, $2 measured count
run_one() {
	local v=$1 count=$2 table= onerr= data=$SANDBOX/data_$1_$2
	case "$v" in
		plain) table=plain_outbox ;;
		ordering) table=ext_outbox ;;
		plpgsql) table=plpgsql_outbox ;;
		deliver_handler) ;;
		deliver_raise) onerr=raise ;;
		deliver_dead_letter) onerr=dead_letter ;;
		deliver_positional) onerr=positional ;;
		*) echo "unknown variant $v" >&2; exit 2 ;;
	esac
	as_postgres initdb -D "$data" -A trust -U postgres >/dev/null
	echo "shared_preload_libraries = 'ordering'" >>"$data/postgresql.conf"
	# -j: a command ends at a semicolon followed by an empty line
	{
		if [ -z "$table" ]; then
			echo "CREATE EXTENSION ordering;"
			echo
			cat "$SANDBOX/src/bench/sql/setup_consumer.sql"
			echo
			deliveries "$onerr" "$warm" 0
			deliveries "$onerr" "$count" "$warm"
		else
			cat "$SANDBOX/src/bench/sql/setup_producer.sql"
			echo
			if [ "$batch" -eq 1 ]; then
				statements "$table" $((warm / 100)) 0
			else
				statements "$table" "$warm" 0
			fi
			statements "$table" "$count" "$warm"
		fi
	} >"$SANDBOX/in_${v}_${count}.sql"
	chown postgres: "$SANDBOX/in_${v}_${count}.sql" 2>/dev/null || true
	as_postgres valgrind --tool=callgrind --callgrind-out-file="$SANDBOX/cg.$v.$count" \
		"$SANDBOX_BIN/postgres" --single -D "$data" -j postgres \
		<"$SANDBOX/in_${v}_${count}.sql" >"$SANDBOX/out.$v.$count" 2>"$SANDBOX/err.$v.$count"
	grep -q ERROR "$SANDBOX/out.$v.$count" && { grep ERROR "$SANDBOX/out.$v.$count" | head >&2; exit 1; }
	sed -n 's/^summary: \([0-9]*\).*/\1/p' "$SANDBOX/cg.$v.$count"
}

for v in "${variants[@]}"; do
	unit="INSERT"
	[ "$batch" -eq 1 ] && unit="row (100-row INSERTs)"
	[[ "$v" == deliver_* ]] && unit="delivery (in order)"
	t0=$(run_one "$v" 0)
	t1=$(run_one "$v" "$n")
	rows=$n
	[ "$batch" -eq 1 ] && [[ "$v" != deliver_* ]] && rows=$((n * 100))
	awk -v v="$v" -v a="$t0" -v b="$t1" -v n="$rows" -v u="$unit" \
		'BEGIN {printf "%-10s %8.0f instructions per %s\n", v, (b - a) / n, u}'
	if [ -n "${CG_KEEP:-}" ]; then
		cp "$SANDBOX/cg.$v.$n" "$CG_KEEP.$v"
		cp "$SANDBOX/cg.$v.0" "$CG_KEEP.$v.0"
	fi
done
