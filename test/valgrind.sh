#!/usr/bin/env bash
#
# Runs the pg_regress and isolation suites with every server process under
# valgrind memcheck, and the extension built with assertions enabled
# (USE_ASSERT_CHECKING), and fails on any error whose stack passes through
# the extension's code (a frame in one of the C files of src/) or a failed
# assertion.
#
#   bash test/valgrind.sh [regress] [isolation]
#
# Each suite's tests are dealt in turn to ORDERING_VALGRIND_STREAMS streams
# (default 2; every test still runs, once, in the Makefile's order within
# its stream), and the streams of both suites run side by side, each on a
# server of its own: valgrind runs a process on one core, and a suite run
# as one stream is one server busy with one test at a time, the longest
# chain of the whole test command.
#
# Debian's server binary has no symbols and is not built with USE_VALGRIND,
# so errors inside the server itself cannot be told apart or suppressed by
# name; they are reported for information only (test/valgrind.supp silences
# the WAL padding writes, which otherwise show up under our frames too).  Allocations made with
# palloc are not tracked chunk by chunk either: what this catches in our code
# is use of uninitialised values, reads and writes outside malloc'd blocks,
# and bad system call arguments.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

suites=${*:-regress isolation}

ensure_packages $(pg_packages) make gcc libc6-dev valgrind
sandbox_create "$here"
trap sandbox_destroy EXIT
# This suite runs the extension built with assertions enabled, so the
# invariants the code states as Assert()s are checked on every test too.  A
# sandbox cloned from test/run.sh's holds objects built without them.  No
# LLVM bitcode (half the build): nothing is JIT-compiled under valgrind
# (sql/metrics.sql checks that the scrape's queries are not), and without
# the other build's bitcode in place JIT could not inline stale code.
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" clean
rm -rf "$SANDBOX/inst$(pg_dir --pkglibdir)/bitcode/ordering" \
	"$SANDBOX/inst$(pg_dir --pkglibdir)/bitcode/ordering.index.bc"
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" with_llvm=no \
	ORDERING_CFLAGS=-DUSE_ASSERT_CHECKING ORDERING_WERROR="${ORDERING_WERROR:-}"
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" with_llvm=no \
	DESTDIR="$SANDBOX/inst" install

# Put valgrind between the server's callers (initdb, pg_ctl, pg_regress) and
# the server.  No leak check: palloc'd memory is not tracked, and the scan
# at each process's exit reads all of shared memory.  Bootstrap, single-user and version checks run natively: they
# never load the extension and would only make initdb slow.
logs=$SANDBOX/valgrind
mkdir -p "$logs"
mv "$SANDBOX_BIN/postgres" "$SANDBOX_BIN/postgres.real"
cat >"$SANDBOX_BIN/postgres" <<EOF
#!/bin/sh
case "\$1" in
	--boot|--single|-V|--version|-C|--describe-config)
		exec "\$(dirname "\$0")/postgres.real" "\$@" ;;
esac
exec valgrind --quiet --error-limit=no --num-callers=30 --leak-check=no \\
	--suppressions="$SANDBOX/src/test/valgrind.supp" \\
	--log-file="$logs/%p.log" "\$(dirname "\$0")/postgres.real" "\$@"
EOF
chmod 755 "$SANDBOX_BIN/postgres"
chown -R postgres: "$SANDBOX"

# The streams side by side: each is one server, under valgrind, running
# its share of a suite's tests in the Makefile's order, with a temporary
# instance and an output directory of its own (the Makefile's options, then
# those two, which pg_regress takes from the last time they are given).
streams=${ORDERING_VALGRIND_STREAMS:-2}
make_var() {
	# shellcheck disable=SC2016 # make expands it
	make -s --no-print-directory -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		--eval='print-var: ; @echo $('"$1"')' print-var
}
status=0
declare -A pid_of=()
names=()
for suite in $suites; do
	case "$suite" in
		regress) var=REGRESS ;;
		isolation) var=ISOLATION ;;
		*) echo "valgrind: unknown suite $suite" >&2; exit 2 ;;
	esac
	opts=$(make_var "${var}_OPTS")
	list=$(test_list "$suite" "$SANDBOX/src")
	declare -a share=()
	i=0
	for t in $list; do
		share[i % streams]="${share[i % streams]:-} $t"
		i=$((i + 1))
	done
	for ((n = 0; n < streams; n++)); do
		[ -n "${share[n]:-}" ] || continue
		name=$suite-$n
		out=vg_$suite$n
		mkdir -p "$SANDBOX/src/$out"
		# pg_isolation_regress reads the specs from the output directory
		[ "$suite" = isolation ] && ln -sfn ../test/specs "$SANDBOX/src/$out/specs"
		chown -R postgres: "$SANDBOX/src/$out"
		echo "valgrind: stream $name:${share[n]}"
		# shellcheck disable=SC2086 # the test names and options are words
		sandbox_make "installcheck-$suite" "$var=${share[n]# }" \
			"${var}_OPTS=$opts --outputdir=$out --temp-instance=./tmp_check_$out" \
			>"$SANDBOX/$name.out" 2>&1 &
		pid_of[$name]=$!
		names+=("$name")
	done
	unset share
done
for name in "${names[@]}"; do
	if ! wait "${pid_of[$name]}"; then
		status=1
	fi
	echo "=== valgrind: $name"
	cat "$SANDBOX/$name.out"
done
if [ "$status" -ne 0 ]; then
	for f in "$SANDBOX"/src/vg_*/regression.diffs; do
		[ -s "$f" ] && { echo "=== $f"; cat "$f"; }
	done
fi

# frames of our code look like "by 0x...: keyed_fetch (keyed.c:123)"
our_frames="\(($(cd "$here/src" && find . -name '*.c' -printf '%f\n' | sed 's/\./\\./' | paste -sd '|')):[0-9]+\)"
ours=0
total=0
for log in "$logs"/*.log; do
	[ -s "$log" ] || continue
	errors=$(grep -c "^==[0-9]*== [A-Z][a-z]" "$log" || true)
	total=$((total + errors))
	if grep -Eq "$our_frames" "$log"; then
		ours=$((ours + 1))
		echo "=== $log"
		cat "$log"
	fi
done
echo "valgrind: $total reports in all, $ours process logs with frames in the C files of src/"
if [ "$ours" -ne 0 ] || [ "$status" -ne 0 ]; then
	trap - EXIT
	echo "sandbox kept in $SANDBOX" >&2
	exit 1
fi
