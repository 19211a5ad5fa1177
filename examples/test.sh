#!/usr/bin/env bash
#
# The examples suite of test/run.sh: the blocks of examples/README.md,
# README.md and docs/*.md run as printed, and each language's relay and step consumer
# (examples/python, go, node) checked end to end.
#
# 1. readme: README.md's sh and sql blocks, top to bottom, as the postgres
#    user against a throwaway server with the library preloaded (its sql
#    blocks in its database shop); a block whose fence says "norun" is
#    skipped, and says why ("```sh norun: why").  Also: README.md has at
#    most 400 lines, its first code block is the two commands, and the
#    relative links of README.md, docs/*.md, demo/README.md and
#    examples/README.md name files that exist.
#    docs: the same for every page of docs/, each on a server reset to two
#    databases with the extension, shop (where its sql blocks run) and
#    billing.  A block that does not run must say why in its fence.
# 2. python, go, node: for each language, on fresh databases, the blocks of
#    examples/README.md's "Running them" (the setup, then the language's
#    own: the last one, relay | pipe.py | consumer, runs until everything
#    is applied, then its relay is stopped), then "The outcome".  The
#    pipe reorders, duplicates and drops; the consumer's sweeper asks for
#    what was dropped, the relay republishes it; every resource's applied
#    seqs must be 1..n, in order, exactly once, with the producer's
#    payloads.
# 3. A control run applies the same kind of stream in arrival order without
#    the extension and must fail that check.
# 4. Each language's consumer with --dead-letter and poison events, while a
#    producer writes: they must be dead-lettered, block only their own
#    resources, and drain in order once retried with the operator's block
#    of examples/README.md.
#
# The blocks run as they would in one terminal: exported variables and the
# working directory carry over from one block to the next; PGHOST names the
# throwaway server's socket directory (the README's connection strings
# leave the host to it), HOME a directory of the sandbox.
#
#   bash examples/test.sh [readme] [docs] [python] [go] [node]
#
# Standalone it builds the extension into a sandbox of its own (test/lib.sh);
# from test/run.sh it uses that run's sandbox.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

steps=${*:-readme docs python go node}
langs=""
for step in $steps; do
	case "$step" in
		readme | docs) ;;
		python | go | node) langs="$langs $step" ;;
		*) echo "examples/test.sh: unknown step: $step" >&2; exit 2 ;;
	esac
done
RESOURCES=40
ROUNDS=10
STEPS_PER_ROUND=5	# events per resource per producer transaction
TIMEOUT=600	# a wait, not a budget: a loaded machine is slow, not wrong

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
src=$SANDBOX/src	# the copy the blocks run in (the postgres user owns it)
mkdir -p "$work/home"
chown -R postgres: "$work" 2>/dev/null || true
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

python=/usr/bin/python3

# ---------------------------------------------------------------------------
# The server: unix socket in $work, the library preloaded, nothing else set
# (examples/README.md's blocks set the sweeper up themselves).
# ---------------------------------------------------------------------------
psql_db() {
	local db=$1
	shift
	as_postgres psql -X -q -At -v ON_ERROR_STOP=1 -h "$work" -U postgres -d "$db" "$@"
}
dsn() { echo "postgresql://postgres@/$1?host=$work"; }

as_postgres initdb -D "$work/data" -A trust -U postgres >/dev/null
cat >>"$work/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$work'
shared_preload_libraries = 'ordering'
max_worker_processes = 24	# a sweeper per consumer database
fsync = off
synchronous_commit = off
EOF
as_postgres pg_ctl -D "$work/data" -l "$work/server.log" -w start >/dev/null
server_started=1

# ---------------------------------------------------------------------------
# Markdown code blocks, run as printed
# ---------------------------------------------------------------------------

# Split a markdown file ($1) into its fenced code blocks, in directory $2:
# NNN.LANG holds block NNN, and $2/index has one line per block: NNN, the
# language (the fence's first word), its flag (the second word: "norun" or
# nothing), the line where the block starts, the "## " and "### " headings
# it is under, and the reason a "norun" gives ("```sql norun: needs Citus").
# A fence indented into a list item counts too; its indentation is taken
# off the block's lines.
extract_blocks() {
	local md=$1 dir=$2
	rm -rf "$dir"
	mkdir -p "$dir"
	awk -v dir="$dir" '
		!fence && /^## / { h2 = substr($0, 4); h3 = ""; next }
		!fence && /^### / { h3 = substr($0, 5); next }
		!fence && /^ *```/ {
			fence = 1; n++
			indent = index($0, "```") - 1
			info = substr($0, indent + 4)
			split(info, w, " ")
			lang = w[1]; flag = w[2]; reason = ""
			sub(/:$/, "", flag)
			if (flag == "norun") {
				reason = info
				sub(/^[^ ]* +norun:? */, "", reason)
			}
			file = sprintf("%s/%03d.%s", dir, n, lang == "" ? "txt" : lang)
			printf "" >file
			start = NR + 1
			next
		}
		fence && /^ *```[ \t]*$/ {
			fence = 0; close(file)
			printf "%03d\t%s\t%s\t%d\t%s\t%s\t%s\n", n, lang, flag, start, h2, h3, reason >(dir "/index")
			next
		}
		fence { print (substr($0, 1, indent) ~ /^ *$/ ? substr($0, indent + 1) : $0) >file }
		END { if (fence) { print "unclosed code block at the end" >"/dev/stderr"; exit 1 } }
	' "$md"
	touch "$dir/index"
	chown -R postgres: "$dir" 2>/dev/null || true
}

# Run a command as the postgres user in the environment of a reader's
# terminal: a fresh login's PATH (the sandbox's PostgreSQL binaries
# first), HOME in the sandbox, PGHOST naming the server's socket directory.
as_reader() {
	local env=(env -i HOME="$work/home" USER=postgres LOGNAME=postgres LANG=C.UTF-8
		PATH="$SANDBOX_BIN:/usr/local/bin:/usr/bin:/bin" PGHOST="$work")
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "${env[@]}" "$@"
	else
		"${env[@]}" "$@"
	fi
}

# The script that runs one block ($2) in the terminal whose state (exported
# variables, working directory) is in file $1, and saves that state again.
# set -a exports what a block assigns, so that a later block sees it as the
# terminal would.
# shellcheck disable=SC2016
BLOCK_SH='set -a -e -o pipefail; . "$1"; . "$2"; { export -p; printf "cd %q\n" "$PWD"; } >"$1"'

# A new terminal (its state file $1) that starts in directory $2.
new_terminal() {
	printf 'cd %q\n' "$2" >"$1"
	chown postgres: "$1" 2>/dev/null || true
}

# Run block file $2 in terminal $1: sh in bash, sql in psql on database
# $3.  Its output goes to log $4.  On failure it says where the block is
# (markdown file $5, line $6) and what it printed.
run_block() {
	local term=$1 block=$2 db=$3 log=$4 md=$5 line=$6 rc=0
	case "$block" in
		*.sh) as_reader bash -c "$BLOCK_SH" _ "$term" "$block" >>"$log" 2>&1 || rc=$? ;;
		*.sql) as_reader psql -X -v ON_ERROR_STOP=1 -d "$db" -f "$block" >>"$log" 2>&1 || rc=$? ;;
	esac
	if [ "$rc" -ne 0 ]; then
		echo "  FAIL  $md, the block at line $line (exit status $rc):"
		sed 's/^/        | /' "$block"
		echo "        output:"
		tail -n 20 "$log" | sed 's/^/        > /'
		return 1
	fi
}

# A log file the postgres user may write.
new_log() {
	: >"$1"
	chown postgres: "$1" 2>/dev/null || true
}

# The blocks of index file $1 that run (sh and sql, not norun), as "NNN
# LANG LINE" lines; only those under heading "## $2" and "### $3" (""
# for none) when given.  Fails on a flag other than norun, and on a norun
# that does not say why.
runnable_blocks() {
	local index=$1 h2=${2-} h3=${3-}
	awk -F '\t' -v h2="$h2" -v h3="$h3" -v sel="$#" '
		($2 == "sh" || $2 == "sql") && $3 != "" && $3 != "norun" {
			print "line " $4 ": unknown flag \"" $3 "\" (only norun)" >"/dev/stderr"; bad = 1
		}
		($2 == "sh" || $2 == "sql") && $3 == "norun" && $7 == "" {
			print "line " $4 ": norun without a reason (\"norun: why not\")" >"/dev/stderr"; bad = 1
		}
		($2 == "sh" || $2 == "sql") && $3 == "" && (sel < 2 || ($5 == h2 && (sel < 3 || $6 == h3))) {
			print $1, $2, $4
		}
		END { exit bad }
	' "$index"
}

# Stop the relay of a pipeline started in the background as process $1
# (the process below it that runs relay.py, relay.js or the Go relay), by
# its id.
stop_relay() {
	local top=$1 pid
	pid=$(ps -e -o pid=,ppid=,args= | awk -v top="$top" '
		{ parent[$1] = $2; p = $1; $1 = ""; $2 = ""; args[p] = $0 }
		END {
			for (p in parent) {
				q = parent[p]
				while (q != "" && q != 0 && q != top) q = parent[q]
				if (q == top && args[p] ~ /(relay\.py|relay\.js|\/relay\/relay)( |$)/ &&
				    args[p] !~ /bash -c/)
					print p
			}
		}')
	if [ -z "$pid" ]; then
		echo "  (no relay found below process $top)"
		return 1
	fi
	# shellcheck disable=SC2086
	kill -TERM $pid
}

# ---------------------------------------------------------------------------
# 1. README.md
# ---------------------------------------------------------------------------
readme_checks() {
	local rc=0 lines first f link target
	lines=$(wc -l <"$src/README.md")
	if [ "$lines" -le 400 ]; then
		echo "  PASS  README.md has $lines lines (at most 400)"
	else
		echo "  FAIL  README.md has $lines lines, more than 400"
		rc=1
	fi
	first=$(awk '/^```/ { if (f) exit; f = 1; next } f && NF { print $1, $2 }' "$src/README.md" |
		tr '\n' ';')
	if [ "$first" = "bash demo/run.sh;bash test/run.sh;" ]; then
		echo "  PASS  README.md's first code block is the two commands"
	else
		echo "  FAIL  README.md's first code block is not bash demo/run.sh and bash test/run.sh: $first"
		rc=1
	fi
	# relative links, [text](path) or [text](path#anchor), outside code
	# blocks: the file must exist, and the anchor be a heading of it (as
	# GitHub names headings)
	if ! (cd "$src" && "$python" - README.md docs/*.md demo/README.md examples/README.md <<'LINKS'); then
import os, re, sys
def slugs(path):
    out, seen, fence = set(), {}, False
    for line in open(path, encoding="utf-8"):
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#+ (.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.add(slug if n == 0 else f"{slug}-{n}")
    return out
bad = 0
for md in sys.argv[1:]:
    text = re.sub(r"^```.*?^```", "", open(md, encoding="utf-8").read(), flags=re.M | re.S)
    for link in re.findall(r"\]\(([^) ]+)\)", text):
        if re.match(r"[a-z]+:", link):
            continue
        target, _, anchor = link.partition("#")
        path = os.path.normpath(os.path.join(os.path.dirname(md), target)) if target else md
        if not os.path.exists(path):
            print(f"  FAIL  {md}: the link {link} names no file"); bad = 1
        elif anchor and path.endswith(".md") and anchor not in slugs(path):
            print(f"  FAIL  {md}: the link {link} names no heading of {path}"); bad = 1
sys.exit(bad)
LINKS
		rc=1
	else
		echo "  PASS  the relative links of README.md, docs/, demo/ and examples/ name files and headings that exist"
	fi
	return "$rc"
}

run_readme() {
	local dir=$work/readme.blocks term=$work/readme.term log=$work/readme.log
	local rc=0 list n lang line ran=0 skipped
	echo "examples: readme (README.md's blocks, as printed)"
	readme_checks || rc=1
	extract_blocks "$src/README.md" "$dir"
	mkdir -p "$work/readme.cwd"
	chown postgres: "$work/readme.cwd" 2>/dev/null || true
	new_terminal "$term" "$work/readme.cwd"
	new_log "$log"
	list=$(runnable_blocks "$dir/index") || return 1
	while read -r n lang line; do
		[ -n "$n" ] || continue
		run_block "$term" "$dir/$n.$lang" shop "$log" README.md "$line" || { rc=1; break; }
		ran=$((ran + 1))
	done <<<"$list"
	skipped=$(awk -F '\t' '($2 == "sh" || $2 == "sql") && $3 == "norun"' "$dir/index" | wc -l)
	if [ "$rc" = 0 ]; then
		echo "  PASS  README.md: $ran sh and sql blocks ran as printed ($skipped marked norun)"
	fi
	return "$rc"
}

# ---------------------------------------------------------------------------
# 1b. docs/*.md
# ---------------------------------------------------------------------------

# Back to a server with no database and no role of the readers' own.
reset_server() {
	local db
	for db in $(psql_db postgres -c "SELECT datname FROM pg_database
	                                  WHERE datname NOT IN ('postgres', 'template0', 'template1')"); do
		as_reader dropdb --force "$db"
	done
	psql_db postgres -c "SELECT format('DROP OWNED BY %I; DROP ROLE %I;', rolname, rolname)
	                       FROM pg_roles WHERE rolname !~ '^pg_' AND rolname <> 'postgres'" |
		psql_db postgres >/dev/null
}

# Every page of docs/: its sh and sql blocks, top to bottom, as README.md's
# run, each page on a server reset to databases shop and billing that have
# the extension (sql blocks run in shop), in a terminal that starts in the
# source tree.  Every sh and sql block runs unless its fence says "norun:"
# and why.
run_docs() {
	local rc=0 md name dir term log list n lang line ran skipped failed size db
	echo "examples: docs (the sh and sql blocks of docs/*.md, as printed)"
	for md in "$src"/docs/*.md; do
		name=$(basename "$md" .md)
		dir=$work/docs.$name.blocks
		term=$work/docs.$name.term
		log=$work/docs.$name.log
		extract_blocks "$md" "$dir"
		if ! list=$(runnable_blocks "$dir/index" 2>"$dir/errors"); then
			sed "s|^|  FAIL  docs/$name.md: |" "$dir/errors"
			rc=1
			continue
		fi
		reset_server
		for db in shop billing; do
			as_reader createdb "$db"
			psql_db "$db" -c 'CREATE EXTENSION ordering'
		done
		new_terminal "$term" "$src"
		new_log "$log"
		ran=0 failed=0
		while read -r n lang line; do
			[ -n "$n" ] || continue
			size=$(stat -c %s "$log")
			if ! run_block "$term" "$dir/$n.$lang" shop "$log" "docs/$name.md" "$line"; then
				failed=1
				break
			fi
			# a psql of an sh block that reads a script goes on after an
			# error and exits 0: what the block printed says
			if tail -c +$((size + 1)) "$log" | grep -q 'ERROR:'; then
				echo "  FAIL  docs/$name.md, the block at line $line printed an error:"
				tail -c +$((size + 1)) "$log" | grep -A3 'ERROR:' | sed 's/^/        > /'
				failed=1
				break
			fi
			ran=$((ran + 1))
		done <<<"$list"
		skipped=$(awk -F '\t' '($2 == "sh" || $2 == "sql") && $3 == "norun"' "$dir/index" | wc -l)
		if [ "$failed" = 0 ]; then
			echo "  PASS  docs/$name.md: $ran sh and sql blocks ran as printed ($skipped marked norun)"
		else
			rc=1
		fi
	done
	# what the pages set for the whole server
	psql_db postgres -c 'ALTER SYSTEM RESET ordering.log_decisions' -c 'SELECT pg_reload_conf()' >/dev/null
	reset_server
	return "$rc"
}

# ---------------------------------------------------------------------------
# Runs of the clients, and their checks
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

# Copy the outbox of producer database $1 into consumer database $2 as the
# truth.
load_truth() {
	local pdb=$1 cdb=$2
	psql_db "$cdb" -c "CREATE TABLE IF NOT EXISTS example_truth (
	                       resource_id text, seq bigint, payload jsonb,
	                       PRIMARY KEY (resource_id, seq))"
	psql_db "$pdb" -c "COPY (SELECT resource_id, seq, payload FROM ordering.outbox) TO STDOUT" |
		psql_db "$cdb" -c "COPY example_truth FROM STDIN"
}

# Start relay | pipe.py | consumer; their stderr goes to $work/<run>.*.log.
start_pipeline() {
	local run=$1 relay=$2 consumer=$3
	rm -f "$work/$run.a" "$work/$run.b"
	mkfifo "$work/$run.a" "$work/$run.b"
	# shellcheck disable=SC2086
	$relay "$(dsn "p_$run")" "$(dsn "c_$run")" >"$work/$run.a" 2>"$work/$run.relay.log" &
	relay_pid=$!
	$python "$src/examples/pipe.py" --seed "${#run}" <"$work/$run.a" >"$work/$run.b" \
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

# Wait until a query on a database returns t; false after TIMEOUT, or
# once process $3 (if given) has ended.
wait_for() {
	local db=$1 sql=$2 pid=${3-} deadline=$((SECONDS + TIMEOUT))
	while [ "$SECONDS" -lt "$deadline" ]; do
		[ "$(psql_db "$db" -c "$sql")" = t ] && return 0
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
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

# Print the outcome of a check on consumer database $2; false if it failed.
check() {
	local run=$1 db=$2 what=$3 sql=$4 bad
	bad=$(psql_db "$db" -c "$sql")
	if [ "$bad" = 0 ]; then
		echo "  PASS  $run: $what"
	else
		echo "  FAIL  $run: $what ($bad offending rows)"
		return 1
	fi
}

# What the pipe did (its last line in log $2), and how many events the
# relay republished (its lines in log $3); fails if the pipe did not
# reorder, duplicate and drop, or nothing was republished.
transport_report() {
	local run=$1 pipelog=$2 relaylog=$3 line republished
	line=$(grep '^pipe: ' "$pipelog" | tail -n 1 || true)
	republished=$(grep -c "republished [1-9]" "$relaylog" || true)
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

# Wait until every event is applied in consumer database $1 and nothing
# waits (or the pipeline, process $2, has ended).
wait_drained() {
	wait_for "$1" "SELECT (SELECT count(*) FROM example_ledger) >=
	                     (SELECT count(*) FROM example_truth) AND $WAITING = 0" "${2-}" ||
		echo "  (the pipeline did not drain within $TIMEOUT s, or it ended)"
}

# Check the ledger of consumer database $2 against the truth.
check_ledger() {
	local run=$1 db=$2 rc=0
	check "$run" "$db" "every resource's applied seqs are 1..n, in order, once, with the producer's payloads" \
		"$(wrong)" || rc=1
	check "$run" "$db" "nothing parked, no gap requested, no dead letter" "SELECT $WAITING" || rc=1
	return "$rc"
}

# ---------------------------------------------------------------------------
# 2. examples/README.md, one language
# ---------------------------------------------------------------------------
heading_of() {
	case "$1" in
		python) echo Python ;;
		go) echo Go ;;
		node) echo Node ;;
	esac
}

run_language() {
	local lang=$1 dir=$work/examples.blocks term=$work/$1.term log=$work/$1.log
	local rc=0 heading list n kind line blocks=() last top status
	heading=$(heading_of "$lang")
	echo "examples: $lang (examples/README.md's blocks, as printed)"
	extract_blocks "$src/examples/README.md" "$dir"
	new_log "$log"
	as_reader env PGOPTIONS='-c client_min_messages=warning' \
		dropdb --if-exists --force shop
	as_reader env PGOPTIONS='-c client_min_messages=warning' \
		dropdb --if-exists --force billing
	new_terminal "$term" "$src"
	# the steps of "Running them"
	list=$(runnable_blocks "$dir/index" "Running them" "") || return 1
	if [ -z "$list" ]; then
		echo "  FAIL  examples/README.md: no block under \"Running them\""
		return 1
	fi
	while read -r n kind line; do
		run_block "$term" "$dir/$n.$kind" billing "$log" examples/README.md "$line" || return 1
	done <<<"$list"
	load_truth shop billing
	# the language's blocks: all but the last as they are, the last (the
	# pipeline) in the background until everything is applied
	list=$(runnable_blocks "$dir/index" "Running them" "$heading") || return 1
	while read -r n kind line; do
		[ -n "$n" ] && blocks+=("$n.$kind:$line")
	done <<<"$list"
	if [ ${#blocks[@]} -eq 0 ]; then
		echo "  FAIL  examples/README.md: no block under \"### $heading\""
		return 1
	fi
	last=${blocks[-1]}
	unset 'blocks[-1]'
	for b in "${blocks[@]}"; do
		run_block "$term" "$dir/${b%%:*}" billing "$log" examples/README.md "${b#*:}" || return 1
	done
	as_reader bash -c "$BLOCK_SH" _ "$term" "$dir/${last%%:*}" >"$work/$lang.pipeline.log" 2>&1 &
	top=$!
	pids+=("$top")
	wait_drained billing "$top"
	if kill -0 "$top" 2>/dev/null; then
		stop_relay "$top" || rc=1
	fi
	status=0
	wait "$top" || status=$?
	pids=()
	if [ "$status" -ne 0 ]; then
		echo "  FAIL  examples/README.md, the block at line ${last#*:} (exit status $status):"
		sed 's/^/        | /' "$dir/${last%%:*}"
		tail -n 20 "$work/$lang.pipeline.log" | sed 's/^/        > /'
		rc=1
	fi
	check_ledger "$lang" billing || rc=1
	transport_report "$lang" "$work/$lang.pipeline.log" "$work/$lang.pipeline.log" || rc=1
	# "The outcome"
	list=$(runnable_blocks "$dir/index" "Running them" "The outcome") || return 1
	while read -r n kind line; do
		[ -n "$n" ] || continue
		run_block "$term" "$dir/$n.$kind" billing "$log" examples/README.md "$line" || rc=1
	done <<<"$list"
	[ "$rc" = 0 ] && echo "  PASS  $lang: examples/README.md's blocks ran as printed"
	return "$rc"
}

# The command line of a language's relay or consumer, as its README run
# built it in the sandbox's copy.
client() {
	local lang=$1 prog=$2
	case "$lang" in
		python) echo "$python $src/examples/python/$prog.py" ;;
		go) echo "$src/examples/go/$prog/$prog" ;;
		node) echo "node $src/examples/node/$prog.js" ;;
	esac
}

# ---------------------------------------------------------------------------
# 3. and 4.: databases of their own, swept every second
# ---------------------------------------------------------------------------
setup_runs() {
	local run sweep=""
	for run in "$@"; do
		psql_db postgres -c "CREATE DATABASE p_$run" -c "CREATE DATABASE c_$run"
		psql_db "p_$run" -c "CREATE EXTENSION ordering"
		psql_db "c_$run" -c "CREATE EXTENSION ordering" -f "$src/examples/consumer.sql"
		sweep="$sweep${sweep:+, }c_$run"
	done
	psql_db postgres -c "ALTER SYSTEM SET ordering.sweep_databases = '$sweep'" \
		-c "ALTER SYSTEM SET ordering.sweep_interval = '1s'" \
		-c "ALTER SYSTEM SET ordering.gap_deadline = '1s'" \
		-c "SELECT pg_reload_conf()" >/dev/null
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
	load_truth p_control c_control
	start_pipeline control "$(client python relay)" "$python $work/naive.py $(dsn c_control)"
	# nothing is asked for again: wait until all is sent and the pipe is idle
	wait_for p_control "SELECT NOT EXISTS (SELECT FROM ordering.outbox WHERE published_at IS NULL)" || true
	sleep 1
	stop_pipeline control || return 1
	if check control c_control "applied in arrival order" "$(wrong)" >/dev/null; then
		echo "  FAIL  control: the check passed without the extension"
		return 1
	fi
	echo "  PASS  control: the check fails without the extension ($(psql_db c_control -c "$(wrong)") rows wrong)"
}

# One language with poison events through the dead-letter variant: the
# poisoned resources stop at their poison event, the others complete; the
# operator's block of examples/README.md fixes the handler and retries;
# then everything completes.
run_dead_letter() {
	local lang=$1 run=${1}_dl rc=0 poisoned dir=$work/examples.blocks list n kind line
	echo "examples: $lang --dead-letter"
	produce "p_$run" true &
	local producer_pid=$!
	pids+=("$producer_pid")
	start_pipeline "$run" "$(client "$lang" relay)" \
		"$(client "$lang" consumer) $(dsn "c_$run") --dead-letter"
	wait "$producer_pid" || { echo "  FAIL  $run: the producer failed"; rc=1; }
	load_truth "p_$run" "c_$run"
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
	check "$run" "c_$run" "the other resources' seqs are 1..n, in order, once" "$(wrong "$poisoned")" || rc=1
	check "$run" "c_$run" "each poisoned resource is dead-lettered at its poison event, with the error" "
		SELECT count(*) FROM (SELECT resource_id, min(seq) AS seq FROM example_truth
		                       WHERE payload ? 'poison' GROUP BY 1) p
		  FULL JOIN ordering.dead_letters d ON d.resource_id = p.resource_id
		       AND d.seq = p.seq AND d.consumer = 'ledger' AND d.sqlstate = '22000'
		 WHERE p.seq IS NULL OR d.seq IS NULL" || rc=1
	# the operator: examples/README.md's block (look, fix the handler, retry)
	list=$(runnable_blocks "$dir/index" "Poison events: \`--dead-letter\`" "") || return 1
	if [ -z "$list" ]; then
		echo "  FAIL  examples/README.md: no operator's block under \"Poison events\""
		rc=1
	fi
	new_terminal "$work/$run.term" "$src"
	new_log "$work/$run.operator.log"
	while read -r n kind line; do
		[ -n "$n" ] || continue
		run_block "$work/$run.term" "$dir/$n.$kind" "c_$run" "$work/$run.operator.log" \
			examples/README.md "$line" || rc=1
	done <<<"$list"
	wait_drained "c_$run"
	stop_pipeline "$run" || rc=1
	check_ledger "$run" "c_$run" || rc=1
	return "$rc"
}

rc=0
case " $steps " in
	*" readme "*)
		run_readme || rc=1
		# what the README made is not the examples' business
		reset_server
		;;
esac
case " $steps " in
	*" docs "*) run_docs || rc=1 ;;
esac
for lang in $langs; do
	run_language "$lang" || rc=1
done
if [ -n "$langs" ]; then
	runs=control
	for lang in $langs; do runs="$runs ${lang}_dl"; done
	# shellcheck disable=SC2086
	setup_runs $runs
	run_control || rc=1
	for lang in $langs; do
		run_dead_letter "$lang" || rc=1
	done
fi
if [ "$rc" -ne 0 ]; then
	echo "examples suite FAILED; server log:" >&2
	tail -n 30 "$work/server.log" >&2
fi
exit "$rc"
