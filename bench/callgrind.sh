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
#   bash bench/callgrind.sh [--warm W] [--inserts N] [--batch] [--consumer] [variant ...]
#
# variants: plain ordering plpgsql (default all), ordering_wakeup (the
# attached table with the relay wake-up on).  --batch makes each
# statement a 100-row multi-resource INSERT (cost then per row).
# --consumer measures consumers instead (default all of): deliver,
# deliver_batch, deliver_plpgsql, apply, apply_batch, apply_guarded, and
# the floors floor, floor_batch and apply_guarded_batch (and, not in the
# default list, apply_newer_only_batch: the guarded upsert's statement
# without its WHERE, into a projection guarded by the ordering.newer_only
# trigger instead; and apply_once_batch: apply_batch's statement naming
# its arrays once, through a one-row subquery, as docs/batch.md shows):
# the statements of
# bench/sql/deliver_ext.sql, deliver_plpgsql.sql, apply_ext.sql,
# apply_guarded.sql, floor.sql and bench/batch.sh's deliver_batch,
# apply_batch, floor_batch and apply_guarded_batch, over the stream of
# bench/sql/setup_consumer.sql (5,000 resources shuffled within blocks of 4 events each, 5% duplicates; a
# seeded shuffle instead of pgbench's permute; CG_RESOURCES=R for another
# number of resources); WARM and N count events,
# the batch variants take them 100 per statement (one transaction each),
# and the cost is per event.  The dead-letter variants (not in the default
# list) deliver the in-order stream of 10,000 resources (event i is seq
# i / 10000 + 1 of resource i % 10000) through the handler of
# bench/sql/setup_consumer.sql: deliver_handler (the five-argument form),
# deliver_raise (the same, written with on_error => 'raise'),
# deliver_dead_letter (on_error => 'dead_letter') and deliver_positional
# (the same, 'dead_letter' as a sixth positional argument).
# deliver_dead_letter minus deliver_raise is the cost of the subtransaction
# alone: the statements differ only in the word, while the named argument
# costs parse analysis.
# CG_PREPARED=1 prepares the one-event consumer statements once per session
# and EXECUTEs them (as pgbench --protocol prepared does, plus the parsing of
# a short EXECUTE); the batch statements stay as they are.
# CG_PREPARED_BATCH=1 prepares the batch statements too, with the arrays
# as parameters ($1, $2 where a statement uses them twice), as
# docs/batch.md writes them: EXECUTE then parses each array once.
# CG_BATCH_ARRAYS is how the batch statements write their arrays (for
# EXECUTE too): "elements" (the default) ARRAY['r17', ...] and
# ARRAY[3, ...]::bigint[]; "literal" one array literal each,
# '{r17,...}'::text[] and '{3,...}'::bigint[] (a parameter's text form, as
# bench/batch.sh writes them); "expr" as bench/batch.sh did before
# 2026-12-02, each id an expression the planner folds ('c' || 0 || '-' ||
# 17 for 'c0-17').
# CG_KEEP=PREFIX keeps the callgrind files as PREFIX.variant (with the N
# measured statements) and PREFIX.variant.0 (without).
# PG_CONFIG=/path/to/pg_config counts on another PostgreSQL (test/lib.sh).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

warm=20000
n=5000
batch=0
consumer=0
variants=()
while [ $# -gt 0 ]; do
	case "$1" in
		--warm) warm=$2; shift 2 ;;
		--inserts) n=$2; shift 2 ;;
		--batch) batch=1; shift ;;
		--consumer) consumer=1; shift ;;
		-h|--help) sed -n '3,56p' "$0"; exit 0 ;;
		*) variants+=("$1"); shift ;;
	esac
done
case "${CG_BATCH_ARRAYS:-elements}" in
	elements|literal|expr) ;;
	*) echo "CG_BATCH_ARRAYS: elements, literal or expr" >&2; exit 2 ;;
esac
if [ ${#variants[@]} -eq 0 ]; then
	variants=(plain ordering plpgsql)
	[ "$consumer" -eq 1 ] &&
		variants=(deliver deliver_batch deliver_plpgsql apply apply_batch apply_guarded floor floor_batch apply_guarded_batch)
fi

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

# consumer statements: $1 variant, $2 events, $3 events of the stream before
# them.  Event j of the stream is (resource j % R, seq j / R + 1), R =
# CG_RESOURCES (default 5000), shuffled within blocks of 4R events (4 per
# resource) by a seeded shuffle, and 5% of the deliveries repeat the
# previous one; so the events of run "warm + N" begin with those of run
# "warm".
consumer_statements() {
	local prepared=0 prepared_batch=0
	[ -n "${CG_PREPARED:-}" ] && [[ "$1" != *_batch ]] && prepared=1
	[ -n "${CG_PREPARED_BATCH:-}" ] && [[ "$1" == *_batch ]] && prepared_batch=1
	awk -v v="$1" -v count="$2" -v skip="$3" -v R="${CG_RESOURCES:-5000}" -v P="$prepared" -v PB="$prepared_batch" -v AF="${CG_BATCH_ARRAYS:-elements}" '
	# the arrays of the batch of events b to b + 99: ids and seqs (written
	# as CG_BATCH_ARRAYS says) and the elements of the payloads, the
	# literals inside ARRAY[...]
	function batch_lists(b,    i, sep) {
		ids = ""; seqs = ""; ps = ""
		for (i = b; i < b + 100 && i < m; i++) {
			sep = (i == b ? "" : (AF == "literal" ? "," : ", "))
			if (AF == "expr")
				ids = ids sep q "c" q " || 0 || " q "-" q " || " substr(r[i], 2)
			else if (AF == "literal")
				ids = ids sep r[i]
			else
				ids = ids sep q r[i] q
			seqs = seqs sep s[i]
			ps = ps (i == b ? "" : ", ") q "{\"k\": 1}" q
		}
		if (AF == "literal") {
			ids = q "{" ids "}" q "::text[]"; seqs = q "{" seqs "}" q "::bigint[]"
		} else {
			ids = "ARRAY[" ids "]"; seqs = "ARRAY[" seqs "]::bigint[]"
		}
	}
	BEGIN {
		bs = R * 4; srand(42); k = 0; prev = -1; n = 0; m = 0; emitted = 0
		while (emitted < skip + count) {
			if (n == 0 || k >= (blk + 1) * bs) {
				blk = int(k / bs)
				for (i = 0; i < bs; i++) perm[i] = i
				for (i = bs - 1; i > 0; i--) { j = int(rand() * (i + 1)); t = perm[i]; perm[i] = perm[j]; perm[j] = t }
				n = 1
			}
			if (prev >= 0 && rand() < 0.05)
				e = prev
			else {
				e = blk * bs + perm[k - blk * bs]; k++
			}
			prev = e
			if (emitted++ >= skip) {
				r[m] = "r" (e % R); s[m] = int(e / R) + 1; m++
			}
		}
		q = "\047"
		if (PB == 1) {
			if (skip == 0) {
				if (v == "deliver_batch")
					print "PREPARE q(text[], bigint[], jsonb[]) AS SELECT * FROM ordering.deliver_batch(" q "bench" q ", $1, $2, $3);\n"
				else if (v == "floor_batch")
					print "PREPARE q(text[], bigint[]) AS INSERT INTO floor_positions (resource_id, position) SELECT DISTINCT ON (e.r) e.r, e.s FROM unnest($1, $2) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET position = EXCLUDED.position;\n"
				else if (v == "apply_newer_only_batch")
					print "PREPARE q(text[], bigint[]) AS INSERT INTO proj_newer AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, " q "p" q " || e.s, e.s FROM unnest($1, $2) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n"
				else if (v == "apply_guarded_batch")
					print "PREPARE q(text[], bigint[]) AS INSERT INTO proj_guarded AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, " q "p" q " || e.s, e.s FROM unnest($1, $2) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version WHERE v.version < EXCLUDED.version;\n"
				else
					print "PREPARE q(text[], bigint[]) AS INSERT INTO proj_ext AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, " q "p" q " || e.s, e.s FROM unnest($1, $2) WITH ORDINALITY AS e(r, s, ord) JOIN ordering.apply_batch(" q "bench" q ", $1, $2) a ON a.ord = e.ord WHERE a.applied ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n"
			}
			for (b = 0; b < m; b += 100) {
				batch_lists(b)
				if (v == "deliver_batch")
					printf "EXECUTE q(%s, %s, ARRAY[%s]::jsonb[]);\n\n", ids, seqs, ps
				else
					printf "EXECUTE q(%s, %s);\n\n", ids, seqs
			}
		} else if (v ~ /_batch$/) {
			for (b = 0; b < m; b += 100) {
				batch_lists(b)
				if (v == "deliver_batch")
					printf "SELECT * FROM ordering.deliver_batch(%sbench%s, %s, %s, ARRAY[%s]::jsonb[]);\n\n", q, q, ids, seqs, ps
				else if (v == "floor_batch")
					printf "INSERT INTO floor_positions (resource_id, position) SELECT DISTINCT ON (e.r) e.r, e.s FROM unnest(%s, %s) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET position = EXCLUDED.position;\n\n", ids, seqs
				else if (v == "apply_newer_only_batch")
					printf "INSERT INTO proj_newer AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, %sp%s || e.s, e.s FROM unnest(%s, %s) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n\n", q, q, ids, seqs
				else if (v == "apply_guarded_batch")
					printf "INSERT INTO proj_guarded AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, %sp%s || e.s, e.s FROM unnest(%s, %s) AS e(r, s) ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version WHERE v.version < EXCLUDED.version;\n\n", q, q, ids, seqs
				else if (v == "apply_once_batch")
					printf "INSERT INTO proj_ext AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, %sp%s || e.s, e.s FROM (SELECT %s AS ids, %s AS seqs) b, unnest(b.ids, b.seqs) WITH ORDINALITY AS e(r, s, ord) JOIN ordering.apply_batch(%sbench%s, b.ids, b.seqs) a ON a.ord = e.ord WHERE a.applied ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n\n", q, q, ids, seqs, q, q
				else
					printf "INSERT INTO proj_ext AS v (resource_id, plan, version) SELECT DISTINCT ON (e.r) e.r, %sp%s || e.s, e.s FROM unnest(%s, %s) WITH ORDINALITY AS e(r, s, ord) JOIN ordering.apply_batch(%sbench%s, %s, %s) a ON a.ord = e.ord WHERE a.applied ORDER BY e.r, e.s DESC ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n\n", q, q, ids, seqs, q, q, ids, seqs
			}
		} else if (P == 1) {
			# prepared once per session, as a driver does; EXECUTE is
			# parsed at every call, which the variants pay alike
			if (skip == 0) {
				if (v == "deliver")
					print "PREPARE p(text, bigint, jsonb) AS SELECT * FROM ordering.deliver(" q "bench" q ", $1, $2, $3);\n"
				else if (v == "deliver_plpgsql")
					print "PREPARE p(text, bigint, jsonb) AS SELECT * FROM plpgsql_deliver($1, $2, $3);\n"
				else if (v == "floor")
					print "PREPARE p(text, bigint, jsonb) AS INSERT INTO floor_positions (resource_id, position) VALUES ($1, $2) ON CONFLICT (resource_id) DO UPDATE SET position = EXCLUDED.position;\n"
				else if (v == "apply")
					print "PREPARE p(text, bigint, jsonb) AS INSERT INTO proj_ext AS v (resource_id, plan, version) SELECT $1, " q "p" q " || $2, $2 WHERE ordering.apply_if_newer(" q "bench" q ", $1, $2) ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n"
				else
					print "PREPARE p(text, bigint, jsonb) AS INSERT INTO proj_guarded AS v (resource_id, plan, version) VALUES ($1, " q "p" q " || $2, $2) ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version WHERE v.version < EXCLUDED.version;\n"
			}
			for (i = 0; i < m; i++)
				printf "EXECUTE p(%s%s%s, %d, %s{\"k\": 1}%s);\n\n", q, r[i], q, s[i], q, q
		} else
			for (i = 0; i < m; i++) {
				rr = q r[i] q
				if (v == "deliver")
					printf "SELECT * FROM ordering.deliver(%sbench%s, %s, %d, %s{\"k\": 1}%s);\n\n", q, q, rr, s[i], q, q
				else if (v == "deliver_plpgsql")
					printf "SELECT * FROM plpgsql_deliver(%s, %d, %s{\"k\": 1}%s);\n\n", rr, s[i], q, q
				else if (v == "floor")
					printf "INSERT INTO floor_positions (resource_id, position) VALUES (%s, %d) ON CONFLICT (resource_id) DO UPDATE SET position = EXCLUDED.position;\n\n", rr, s[i]
				else if (v == "apply")
					printf "INSERT INTO proj_ext AS v (resource_id, plan, version) SELECT %s, %sp%d%s, %d WHERE ordering.apply_if_newer(%sbench%s, %s, %d) ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version;\n\n", rr, q, s[i], q, s[i], q, q, rr, s[i]
				else
					printf "INSERT INTO proj_guarded AS v (resource_id, plan, version) VALUES (%s, %sp%d%s, %d) ON CONFLICT (resource_id) DO UPDATE SET plan = EXCLUDED.plan, version = EXCLUDED.version WHERE v.version < EXCLUDED.version;\n\n", rr, q, s[i], q, s[i]
			}
	}'
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

# the events of variant $1: $2 count, $3 events before them
consumer_events() {
	case "$1" in
		deliver_handler) deliveries "" "$2" "$3" ;;
		deliver_raise) deliveries raise "$2" "$3" ;;
		deliver_dead_letter) deliveries dead_letter "$2" "$3" ;;
		deliver_positional) deliveries positional "$2" "$3" ;;
		*) consumer_statements "$1" "$2" "$3" ;;
	esac
}

# total instructions of one single-user session: $1 variant, $2 measured count
run_one() {
	local v=$1 count=$2 table="" data=$SANDBOX/data_$1_$2
	case "$v" in
		plain) table=plain_outbox ;;
		ordering) table=ext_outbox ;;
		plpgsql) table=plpgsql_outbox ;;
		ordering_wakeup) table=wake_outbox ;;
		deliver|deliver_batch|deliver_plpgsql|apply|apply_batch|apply_guarded) ;;
		floor|floor_batch|apply_guarded_batch|apply_newer_only_batch|apply_once_batch) ;;
		deliver_handler|deliver_raise|deliver_dead_letter|deliver_positional) ;;
		*) echo "unknown variant $v" >&2; exit 2 ;;
	esac
	as_postgres initdb -D "$data" -A trust -U postgres >/dev/null
	echo "shared_preload_libraries = 'ordering'" >>"$data/postgresql.conf"
	# The schema is set up in a session of its own, as an application's
	# sessions find it: a session that ran CREATE EXTENSION keeps the lock
	# table it grew, and every commit of that session scans all of it.
	# -j: a command ends at a semicolon followed by an empty line
	{
		# the probes of setup_producer.sql are not built here
		echo "SET check_function_bodies = off;"
		echo
		if [ -z "$table" ]; then
			echo "CREATE EXTENSION ordering;"
			echo
			cat "$SANDBOX/src/bench/sql/setup_consumer.sql"
		else
			cat "$SANDBOX/src/bench/sql/setup_producer.sql"
		fi
		echo
	} >"$SANDBOX/setup_${v}_${count}.sql"
	chown postgres: "$SANDBOX/setup_${v}_${count}.sql" 2>/dev/null || true
	as_postgres "$SANDBOX_BIN/postgres" --single -D "$data" -j postgres \
		<"$SANDBOX/setup_${v}_${count}.sql" >"$SANDBOX/setup.$v.$count" 2>/dev/null
	grep -q ERROR "$SANDBOX/setup.$v.$count" && { grep ERROR "$SANDBOX/setup.$v.$count" | head >&2; exit 1; }
	{
		if [ -z "$table" ]; then
			consumer_events "$v" "$warm" 0
			consumer_events "$v" "$count" "$warm"
		else
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
	[ "$consumer" -eq 1 ] && unit="event"
	[[ "$v" == deliver_* ]] && [ "$v" != deliver_batch ] && [ "$v" != deliver_plpgsql ] &&
		unit="delivery (in order)"
	t0=$(run_one "$v" 0)
	t1=$(run_one "$v" "$n")
	rows=$n
	[ "$batch" -eq 1 ] && [ "$consumer" -eq 0 ] && [[ "$v" != deliver_* ]] && rows=$((n * 100))
	awk -v v="$v" -v a="$t0" -v b="$t1" -v n="$rows" -v u="$unit" \
		'BEGIN {printf "%-10s %8.0f instructions per %s\n", v, (b - a) / n, u}'
	if [ -n "${CG_KEEP:-}" ]; then
		cp "$SANDBOX/cg.$v.$n" "$CG_KEEP.$v"
		cp "$SANDBOX/cg.$v.0" "$CG_KEEP.$v.0"
	fi
done
