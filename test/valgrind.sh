#!/usr/bin/env bash
#
# Runs the pg_regress and isolation suites with every server process under
# valgrind memcheck, and the extension built with assertions enabled
# (USE_ASSERT_CHECKING), and fails on any error whose stack passes through
# the extension's code (a frame in one of src/*.c) or a failed assertion.
#
#   bash test/valgrind.sh [regress] [isolation]
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
sandbox_build
# This suite runs the extension built with assertions enabled, so the
# invariants the code states as Assert()s are checked on every test too.
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" clean
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
	ORDERING_CFLAGS=-DUSE_ASSERT_CHECKING ORDERING_WERROR="${ORDERING_WERROR:-}"
as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
	DESTDIR="$SANDBOX/inst" install

# Put valgrind between the server's callers (initdb, pg_ctl, pg_regress) and
# the server.  Bootstrap, single-user and version checks run natively: they
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
exec valgrind --quiet --error-limit=no --num-callers=30 \\
	--suppressions="$SANDBOX/src/test/valgrind.supp" \\
	--log-file="$logs/%p.log" "\$(dirname "\$0")/postgres.real" "\$@"
EOF
chmod 755 "$SANDBOX_BIN/postgres"
chown -R postgres: "$SANDBOX"

# The suites side by side: each is one server process at a time under
# valgrind, which runs a process on one core; they share no server nor
# output directory (tmp_check_regress and results, tmp_check_isolation and
# output_iso).
status=0
declare -A pid_of=()
for suite in $suites; do
	case "$suite" in
		regress) var=REGRESS ;;
		isolation) var=ISOLATION ;;
		*) echo "valgrind: unknown suite $suite" >&2; exit 2 ;;
	esac
	list=$(test_list "$suite" "$SANDBOX/src")
	[ -n "$list" ] || continue
	sandbox_make "installcheck-$suite" "$var=$list" >"$SANDBOX/$suite.out" 2>&1 &
	pid_of[$suite]=$!
done
for suite in $suites; do
	[ -n "${pid_of[$suite]:-}" ] || continue
	wait "${pid_of[$suite]}" || status=1
	echo "=== valgrind: $suite"
	cat "$SANDBOX/$suite.out"
done
[ "$status" -eq 0 ] || sandbox_show_diffs

# frames of our code look like "by 0x...: keyed_fetch (keyed.c:123)"
our_frames="\(($(cd "$here/src" && ls *.c | sed 's/\./\\./' | paste -sd '|')):[0-9]+\)"
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
echo "valgrind: $total reports in all, $ours process logs with frames in src/*.c"
if [ "$ours" -ne 0 ] || [ "$status" -ne 0 ]; then
	trap - EXIT
	echo "sandbox kept in $SANDBOX" >&2
	exit 1
fi
