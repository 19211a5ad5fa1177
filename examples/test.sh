#!/usr/bin/env bash
#
# The examples suite of test/run.sh: each language's relay and step consumer
# (examples/python, go, node) against a throwaway server, with a producer and
# a consumer database per run, connected by examples/pipe.py, which
# reorders, duplicates and drops messages.  The consumer's sweeper asks for
# what was dropped, the relay republishes it, and at the end every
# resource's applied seqs must be 1..n, in order, exactly once, with the
# producer's payloads.  A control run applies the same kind of stream in
# arrival order without the extension and must fail that check.
#
# Each language also runs its consumer with --dead-letter and poison
# events: they must be dead-lettered, block only their own resources, and
# drain in order once retried with the handler fixed.
#
#   bash examples/test.sh [python] [go] [node]
#
# Standalone it builds the extension into a sandbox of its own (test/lib.sh);
# from test/run.sh it uses that run's sandbox.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

langs=${*:-python go node}
RESOURCES=40
ROUNDS=10
STEPS_PER_ROUND=5	# events per resource per producer transaction
TIMEOUT=120

ensure_packages $(pg_packages) make gcc libc6-dev \
	python3-psycopg golang-go golang-github-lib-pq-dev
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	ensure_packages nodejs npm
fi

own_sandbox=0
if [ -z "${SANDBOX:-}" ] || [ ! -d "$SANDBOX/inst" ]; then
	sandbox_create "$here"
	own_sandbox=1
	sandbox_build >/dev/null
fi
work=$SANDBOX/examples
mkdir -p "$work"
chown postgres: "$work" 2>/dev/null || true
server_started=0
pids=()
cleanup() {
	set +e
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	if [ "$server_started" = 1 ]; then
		as_postgres pg_ctl -D "$work/data" -m immediate -w stop >/dev/null
	fi
	if [ "$own_sandbox" = 1 ]; then
		sandbox_destroy
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

# ---------------------------------------------------------------------------
# The clients: Debian's python3 with python3-psycopg, Go in GOPATH mode
# against Debian's lib/pq (no module download), Node with pg from npm.
# ---------------------------------------------------------------------------
python=/usr/bin/python3
for lang in $langs; do
	case "$lang" in
		python) ;;
		go)
			for prog in relay consumer; do
				(cd "$here/examples/go/$prog" &&
					GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS= \
						GOCACHE="$work/gocache" go build -o "$work/bin/$prog" .)
			done
			;;
		node)
			mkdir -p "$work/node"
			cp "$here"/examples/node/{package.json,package-lock.json,.npmrc,relay.js,consumer.js} \
				"$work/node/"
			(cd "$work/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
			;;
		*) echo "examples/test.sh: unknown language: $lang" >&2; exit 2 ;;
	esac
done

# The command line of a language's relay or consumer.
client() {
	local lang=$1 prog=$2
	case "$lang" in
		python) echo "$python $here/examples/python/$prog.py" ;;
		go) echo "$work/bin/$prog" ;;
		node) echo "node $work/node/$prog.js" ;;
	esac
}

# ---------------------------------------------------------------------------
# The server: a producer and a consumer database per run, the consumer's
# sweeper with a 1 s deadline.
# ---------------------------------------------------------------------------
psql_db() {
	local db=$1
	shift
	as_postgres psql -X -q -At -v ON_ERROR_STOP=1 -h "$work" -U postgres -d "$db" "$@"
}
dsn() { echo "postgresql://postgres@/$1?host=$work"; }

runs=""
for lang in $langs; do runs="$runs $lang ${lang}_dl"; done
runs="$runs control"
as_postgres initdb -D "$work/data" -A trust -U postgres >/dev/null
cat >>"$work/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'ordering'
max_worker_processes = 24	# a sweeper per consumer database
fsync = off
synchronous_commit = off
ordering.sweep_interval = 1s
ordering.gap_deadline = 1s
EOF
as_postgres pg_ctl -D "$work/data" -l "$work/server.log" -w start >/dev/null
server_started=1
sweep=""
for run in $runs; do
	psql_db postgres -c "CREATE DATABASE p_$run" -c "CREATE DATABASE c_$run"
	psql_db "p_$run" -c "CREATE EXTENSION ordering"
	psql_db "c_$run" -c "CREATE EXTENSION ordering" -f "$SANDBOX/src/examples/consumer.sql" \
		-c "CREATE TABLE example_truth (resource_id text, seq bigint, payload jsonb,
		                                PRIMARY KEY (resource_id, seq))"
	sweep="$sweep${sweep:+, }c_$run"
done
# the sweepers start with the server: name the databases, restart
echo "ordering.sweep_databases = '$sweep'" >>"$work/data/postgresql.conf"
as_postgres pg_ctl -D "$work/data" -l "$work/server.log" -m fast -w restart >/dev/null

# ---------------------------------------------------------------------------
# A run's pieces
# ---------------------------------------------------------------------------

# Produce ROUNDS transactions of STEPS_PER_ROUND events for each of
# RESOURCES resources, in a random order; with poison, three resources get
# one event the handler rejects.
produce() {
	local db=$1 poison=$2
	for round in $(seq 0 $((ROUNDS - 1))); do
		psql_db "$db" -c "
			SELECT count(ordering.emit('acct-' || r, 'StepAdded',
			         jsonb_build_object('step', s) ||
			         CASE WHEN $poison AND (r, s) IN ((7, 26), (23, 34), (31, 18))
			              THEN '{\"poison\": true}'::jsonb ELSE '{}' END))
			  FROM (SELECT r, s FROM generate_series(1, $RESOURCES) r,
			               generate_series($((round * STEPS_PER_ROUND + 1)),
			                               $(((round + 1) * STEPS_PER_ROUND))) s
			         ORDER BY random()) x" >/dev/null
		sleep 0.2
	done
}

# Copy the producer's outbox into the consumer database as the truth.
load_truth() {
	local run=$1
	psql_db "p_$run" -c "COPY (SELECT resource_id, seq, payload FROM ordering.outbox) TO STDOUT" |
		psql_db "c_$run" -c "COPY example_truth FROM STDIN"
}

# Start relay | pipe.py | consumer; their stderr goes to $work/<run>.*.log.
start_pipeline() {
	local run=$1 relay=$2 consumer=$3
	rm -f "$work/$run.a" "$work/$run.b"
	mkfifo "$work/$run.a" "$work/$run.b"
	# shellcheck disable=SC2086
	$relay "$(dsn "p_$run")" "$(dsn "c_$run")" >"$work/$run.a" 2>"$work/$run.relay.log" &
	relay_pid=$!
	$python "$here/examples/pipe.py" --seed "${#run}" <"$work/$run.a" >"$work/$run.b" \
		2>"$work/$run.pipe.log" &
	pipe_pid=$!
	# shellcheck disable=SC2086
	$consumer <"$work/$run.b" 2>"$work/$run.consumer.log" &
	consumer_pid=$!
	pids+=("$relay_pid" "$pipe_pid" "$consumer_pid")
}

# Stop the relay; the pipe and the consumer finish what they hold and exit.
# Fails if one of them failed.
stop_pipeline() {
	local run=$1 rc=0
	kill -TERM "$relay_pid" 2>/dev/null || true
	wait "$relay_pid" || { echo "$run: the relay failed:"; cat "$work/$run.relay.log"; rc=1; }
	wait "$pipe_pid" || { echo "$run: the pipe failed:"; cat "$work/$run.pipe.log"; rc=1; }
	wait "$consumer_pid" || { echo "$run: the consumer failed:"; cat "$work/$run.consumer.log"; rc=1; }
	pids=()
	return "$rc"
}

# Wait until a query on a database returns t; false after TIMEOUT.
wait_for() {
	local db=$1 sql=$2 deadline=$((SECONDS + TIMEOUT))
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(psql_db "$db" -c "$sql")" = t ] && return 0
		sleep 0.5
	done
	return 1
}

# A query counting the applied events that differ from the truth: for each
# resource, the n-th row applied must be the producer's seq n with its
# payload, and nothing more (so every seq 1..n is applied, in order, exactly
# once).  The resources named in $1 (quoted, comma-separated) are left out.
wrong() {
	echo "
	WITH applied AS (
		SELECT resource_id, seq, payload,
		       row_number() OVER (PARTITION BY resource_id ORDER BY applied_order) AS n
		  FROM example_ledger)
	SELECT count(*) FROM example_truth t
	  FULL JOIN applied a ON a.resource_id = t.resource_id AND a.n = t.seq
	 WHERE (a.seq IS DISTINCT FROM t.seq OR a.payload IS DISTINCT FROM t.payload)
	   AND coalesce(t.resource_id, a.resource_id) <> ALL (ARRAY[${1:-}]::text[])"
}

# Print a check's outcome; false if it failed.
check() {
	local run=$1 what=$2 sql=$3 bad
	bad=$(psql_db "c_$run" -c "$sql")
	if [ "$bad" = 0 ]; then
		echo "  PASS  $run: $what"
	else
		echo "  FAIL  $run: $what ($bad offending rows)"
		return 1
	fi
}

# What the pipe did, and how many events the relay republished; fails if
# the pipe did not reorder, duplicate and drop, or nothing was republished.
transport_report() {
	local run=$1 line republished
	line=$(tail -n 1 "$work/$run.pipe.log")
	republished=$(grep -c "republished [1-9]" "$work/$run.relay.log" || true)
	echo "        $line; $republished gap(s) answered by republish"
	for what in dropped duplicated reordered; do
		if ! grep -Eq "[1-9][0-9]* $what" <<<"$line"; then
			echo "  FAIL  $run: the pipe $what nothing: the test proves nothing"
			return 1
		fi
	done
	[ "$republished" -gt 0 ] || { echo "  FAIL  $run: no gap was republished"; return 1; }
}

# Events still waiting: parked, gap requests, dead letters.
WAITING="(SELECT count(*) FROM ordering.parked) + (SELECT count(*) FROM ordering.gap_requests)
	+ (SELECT count(*) FROM ordering.dead_letters)"

# Wait until every event is applied and nothing waits, stop the pipeline,
# and check the consumer's ledger against the truth.
finish_run() {
	local run=$1 rc=0
	wait_for "c_$run" "SELECT (SELECT count(*) FROM example_ledger) >=
	                         (SELECT count(*) FROM example_truth) AND $WAITING = 0" ||
		echo "  (the pipeline did not drain within $TIMEOUT s)"
	stop_pipeline "$run" || rc=1
	check "$run" "every resource's applied seqs are 1..n, in order, once, with the producer's payloads" \
		"$(wrong)" || rc=1
	check "$run" "nothing parked, no gap requested, no dead letter" "SELECT $WAITING" || rc=1
	return "$rc"
}

# One language: relay | pipe | consumer while the producer writes; waits
# until every event is applied and nothing waits, then checks.
run_language() {
	local lang=$1 rc=0
	echo "examples: $lang"
	produce "p_$lang" false &
	local producer_pid=$!
	pids+=("$producer_pid")
	start_pipeline "$lang" "$(client "$lang" relay)" "$(client "$lang" consumer) $(dsn "c_$lang")"
	wait "$producer_pid" || { echo "  FAIL  $lang: the producer failed"; rc=1; }
	load_truth "$lang"
	finish_run "$lang" || rc=1
	transport_report "$lang" || rc=1
	return "$rc"
}

# The control: the same kind of stream, applied in arrival order by a
# consumer without the extension; the check must fail.
run_control() {
	echo "examples: control (applied in arrival order, without the extension)"
	cat >"$work/naive.py" <<'NAIVE'
import json, sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    for line in sys.stdin:
        m = json.loads(line)
        conn.execute("INSERT INTO example_ledger (resource_id, seq, payload) VALUES (%s, %s, %s)",
                     (m["resource_id"], m["seq"], json.dumps(m["payload"])))
NAIVE
	produce p_control false
	load_truth control
	start_pipeline control "$(client python relay)" "$python $work/naive.py $(dsn c_control)"
	# nothing is asked for again: wait until all is sent and the pipe is idle
	wait_for p_control "SELECT NOT EXISTS (SELECT FROM ordering.outbox WHERE published_at IS NULL)" || true
	sleep 1
	stop_pipeline control || return 1
	if check control "applied in arrival order" "$(wrong)" >/dev/null; then
		echo "  FAIL  control: the check passed without the extension"
		return 1
	fi
	echo "  PASS  control: the check fails without the extension ($(psql_db c_control -c "$(wrong)") rows wrong)"
}

# One language with poison events through the dead-letter variant: the
# poisoned resources stop at their poison event, the others complete; the
# operator fixes the handler and retries; then everything completes.
run_dead_letter() {
	local lang=$1 run=${1}_dl rc=0 poisoned
	echo "examples: $lang --dead-letter"
	produce "p_$run" true &
	local producer_pid=$!
	pids+=("$producer_pid")
	start_pipeline "$run" "$(client "$lang" relay)" \
		"$(client "$lang" consumer) $(dsn "c_$run") --dead-letter"
	wait "$producer_pid" || { echo "  FAIL  $run: the producer failed"; rc=1; }
	load_truth "$run"
	poisoned=$(psql_db "c_$run" -c "SELECT string_agg(DISTINCT quote_literal(resource_id), ',')
	                                  FROM example_truth WHERE payload ? 'poison'")
	# blocked: each poisoned resource stops just before its first poison event
	wait_for "c_$run" "SELECT NOT EXISTS (
		SELECT FROM (SELECT resource_id, count(*) AS n FROM example_truth GROUP BY 1) t
		  LEFT JOIN (SELECT resource_id, min(seq) AS b FROM example_truth
		              WHERE payload ? 'poison' GROUP BY 1) p USING (resource_id)
		 WHERE (SELECT count(*) FROM example_ledger l WHERE l.resource_id = t.resource_id)
		       <> coalesce(p.b - 1, t.n))" ||
		echo "  (the pipeline did not reach the blocked state within $TIMEOUT s)"
	check "$run" "the other resources' seqs are 1..n, in order, once" "$(wrong "$poisoned")" || rc=1
	check "$run" "each poisoned resource is dead-lettered at its poison event, with the error" "
		SELECT count(*) FROM (SELECT resource_id, min(seq) AS seq FROM example_truth
		                       WHERE payload ? 'poison' GROUP BY 1) p
		  FULL JOIN ordering.dead_letters d ON d.resource_id = p.resource_id
		       AND d.seq = p.seq AND d.consumer = 'ledger' AND d.sqlstate = '22000'
		 WHERE p.seq IS NULL OR d.seq IS NULL" || rc=1
	# the operator: see the dead letters, fix the handler, retry
	psql_db "c_$run" -c "SET example.accept_poison = on" -c "
		SELECT ordering.retry_dead_letter(consumer, resource_id,
		                                  'example_apply_step(text,bigint,jsonb)')
		  FROM ordering.dead_letters" >/dev/null
	finish_run "$run" || rc=1
	return "$rc"
}

rc=0
for lang in $langs; do
	run_language "$lang" || rc=1
done
run_control || rc=1
for lang in $langs; do
	run_dead_letter "$lang" || rc=1
done
if [ "$rc" -ne 0 ]; then
	echo "examples suite FAILED; server log:" >&2
	tail -n 30 "$work/server.log" >&2
fi
exit "$rc"
