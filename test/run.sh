#!/usr/bin/env bash
#
# Runs every test of the extension: pg_regress, isolation specs and TAP.
#
#   bash test/run.sh            every suite on Debian's PostgreSQL 15 (the
#                               suites named "default"); the end says whether
#                               the matrix could have run, and why not
#   bash test/run.sh default matrix
#                               those and the matrix (test/matrix.sh: other
#                               PostgreSQL majors and Citus, built from
#                               ../shared/toolchains into a cache): .ci/run
#   bash test/run.sh regress    only pg_regress (also: isolation, tap, lint, demo,
#                               valgrind: regress + isolation under memcheck,
#                               monitoring: rules and dashboard against Prometheus,
#                               examples: the client examples in examples/,
#                               upgrade: 1.0, 1.1 and 1.2 filled, then updated
#                               (test/upgrade.sh),
#                               package: the Debian package built, checked with
#                               lintian, unpacked into a sandbox and tested
#                               (test/package.sh),
#                               model: the model-based random tester for
#                               3 minutes with a new seed (test/model/run.sh))
#   PG_CONFIG=/path/to/pg_config bash test/run.sh
#                               the same against another PostgreSQL (15 or
#                               later, built with --enable-tap-tests for tap);
#                               by default Debian's 15, installed if missing
#   ORDERING_CITUS_DIR=DIR bash test/run.sh tap
#                               with a Citus installed by hand into DIR
#                               ("make install DESTDIR=DIR") added to the
#                               sandbox's copy of PostgreSQL: TAP 040 and 041
#                               run (CI has no Citus: they skip, saying why)
#   ORDERING_HIDE_CITUS=1 bash test/run.sh
#                               with Citus left out of the sandbox's copy of
#                               PostgreSQL where the system's has it
#
# Works from any folder on a fresh Debian 12 machine as root: installs what is
# missing, copies the source tree and a private copy of the PostgreSQL
# installation into a temporary directory owned by the postgres user, builds
# the extension once and installs it into that copy (never into the
# system's), and gives each suite a copy of that sandbox of its own, where
# it runs its own throwaway servers with the library preloaded.  lint,
# package and valgrind (which builds with assertions) need nothing of that
# build and start before it.  The suites share no server, so they run side
# by side, all at once (ORDERING_TEST_JOBS at a time, longest first, if
# set): most of the longest ones' time is spent waiting (for a worker, a
# broker, a pipeline, a standby), and the suites that only compute run at
# nice 10, filling the cores meanwhile.  The valgrind suite runs in four
# streams, each on a server of its own (test/valgrind.sh).  Each suite
# writes to a log of its own, and the end prints each suite's wall and CPU
# time (and the build's, and the total from the start), and, for a suite
# that failed, its log (with regression.diffs and the failing TAP logs),
# and keeps its sandbox.  Several runs may go on side by side.  Exits
# non-zero on any failure.  It names the PostgreSQL it tests before it
# starts, and the contrib modules the tests need (a test whose module is
# missing is skipped, saying why; ORDERING_MISSING_CONTRIB=fail stops
# instead).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

# Longest first, so that the short ones fill the gaps at the end.  The
# matrix (test/matrix.sh: other PostgreSQL majors and Citus, built from
# source) runs only when named: .ci/run names it after the others.
default_suites="valgrind tap package upgrade examples demo model monitoring regress isolation lint"
all_suites="matrix $default_suites"
# "default" names the suites of the command without arguments
requested=${*:-default}
requested=${requested//default/$default_suites}
suites=
for suite in $all_suites; do
	for r in $requested; do
		[ "$r" = "$suite" ] && { suites="$suites $suite"; break; }
	done
done
for r in $requested; do
	case " $all_suites " in
		*" $r "*) ;;
		*) echo "unknown suite: $r (suites: $all_suites)" >&2; exit 2 ;;
	esac
done
# All at once by default: most of the time of the longest suites is spent
# waiting (for a worker, a broker, a pipeline, a standby), and the suites
# that only compute run at nice 10 (below), filling the cores meanwhile.
# shellcheck disable=SC2086 # suite names are words
jobs=${ORDERING_TEST_JOBS:-$(set -- $suites; echo $#)}

# Everything the suites install, installed once up front: the suites run
# side by side and would otherwise wait for each other's apt-get.
packages=$(pg_packages)" make gcc libc6-dev"
for suite in $suites; do
	case "$suite" in
		lint) packages="$packages cppcheck clang-tidy pg-bsd-indent" ;;
		tap) packages="$packages libipc-run-perl" ;;
		valgrind) packages="$packages valgrind" ;;
		demo) packages="$packages libpq-dev librabbitmq-dev gnuplot-nox" ;;
		monitoring) packages="$packages prometheus prometheus-postgres-exporter gnuplot-nox jq yq curl" ;;
		examples)
			packages="$packages python3-psycopg golang-go golang-github-lib-pq-dev"
			if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
				packages="$packages nodejs npm"
			fi
			;;
		upgrade) packages="$packages git" ;;
		matrix)
			# the toolchains' build dependencies too: one apt-get
			# update and install, not one more per toolchain
			packages="$packages zstd"
			toolchains_find "$here"
			if [ -n "$TOOLCHAINS" ]; then
				packages="$packages $(toolchain_packages postgresql) $(toolchain_packages citus)"
			fi
			;;
		model) packages="$packages python3-hypothesis python3-psycopg" ;;
		package) packages="$packages build-essential debhelper postgresql-server-dev-all lintian" ;;
	esac
done
# shellcheck disable=SC2086 # package names are words
ensure_packages $packages
echo "PostgreSQL: $("$PG_CONFIG_SYSTEM" --version) ($PG_CONFIG_SYSTEM)"
# shellcheck disable=SC2086
contrib_report "$here" $suites

# CI builds turn every warning into an error (the Makefile alone does not).
export ORDERING_WERROR=${ORDERING_WERROR--Werror}

logs=$(mktemp -d /tmp/ordering-logs.XXXXXX)
chmod 755 "$logs"
# The CPU time of each suite (test/lib.sh, cg_init): a suite's processes,
# and the servers they start, stay in a group of its own.
cg_init "ordering-run.${logs##*.}"

base=
cleanup() {
	[ -n "$base" ] && [ -d "$base" ] && rm -rf "$base"
	cg_cleanup
	return 0
}
trap cleanup EXIT

# One of regress, isolation, tap in a sandbox of its own; on failure the
# diffs and failing TAP logs, and the sandbox is kept.
pgxs_suite() {
	local suite=$1 list var
	sandbox_create "$here"
	sandbox_build >/dev/null
	case "$suite" in
		regress) var=REGRESS ;;
		isolation) var=ISOLATION ;;
		tap) var=PROVE_TESTS ;;
	esac
	list=$(test_list "$suite" "$SANDBOX/src")
	if [ -z "$list" ]; then
		echo "$suite: no test left to run"
		sandbox_destroy
		return 0
	fi
	# prove runs ORDERING_PROVE_JOBS test files at a time (default 2): each
	# has clusters of its own in its own directory, and many of them wait
	# (for a worker, a standby, a restart) more than they compute
	local flags=()
	if [ "$suite" = tap ]; then
		flags=("PROVE_FLAGS=${PROVE_FLAGS:--j${ORDERING_PROVE_JOBS:-2}}")
		# one initdb for the run's nodes, copied for each
		# (test/t/OrderingInitdbTemplate.pm)
		export ORDERING_INITDB_TEMPLATE=$SANDBOX/initdb-template
		export PERL5LIB=$SANDBOX/src/test/t${PERL5LIB:+:$PERL5LIB}
		export PERL5OPT="-MOrderingInitdbTemplate${PERL5OPT:+ $PERL5OPT}"
		# the Citus cluster updated from 1.2 starts on release 1.2's files
		# (test/lib.sh, release_files); without the git history it skips
		if [[ " $list " == *047_citus_update* ]]; then
			local commit
			commit=$(commit_of 1.2)
			if release_in_history "$here" "$commit"; then
				ORDERING_RELEASE_12=$(release_files "$here" 1.2 "$commit")
				export ORDERING_RELEASE_12
			else
				export ORDERING_RELEASE_12_MISSING="no git history with commit $commit of release 1.2 in $here to build it from"
			fi
		fi
	fi
	if sandbox_make "installcheck-$suite" "$var=$list" "${flags[@]}" |
		tee "$SANDBOX/$suite.out"; then
		# a TAP file that skips itself (Citus where there is none) says
		# why in prove's output: the summary at the end shows it
		sed -n 's|^\(test/t/[^ ]*\.pl\) \.* *skipped: \(.*\)$|'"$suite"': skipped \1: \2|p' \
			"$SANDBOX/$suite.out"
		sandbox_destroy
	else
		sandbox_show_diffs
		echo "sandbox kept in $SANDBOX" >&2
		return 1
	fi
}

run_suite() {
	local suite=$1
	case "$suite" in
		lint) bash "$here/test/lint.sh" ;;
		# its own sandbox: it builds the extension with assertions
		valgrind) env -u ORDERING_SANDBOX_BASE bash "$here/test/valgrind.sh" ;;
		regress | isolation | tap) pgxs_suite "$suite" ;;
		demo) bash "$here/demo/test.sh" ;;
		monitoring) bash "$here/test/monitoring.sh" ;;
		examples) bash "$here/examples/test.sh" ;;
		upgrade) bash "$here/test/upgrade.sh" ;;
		package) bash "$here/test/package.sh" ;;
		# the platforms' own lines go to the summary
		matrix) ORDERING_RESULTS=$logs/matrix.results bash "$here/test/matrix.sh" ;;
		model) bash "$here/test/model/run.sh" ;;
	esac
}

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }


declare -A pid_of=() started=() elapsed=() status=()
echo "running:$suites ($jobs at a time; logs in $logs)"
# Waits for one suite to end and records it.
reap() {
	local done_pid suite rc=0
	wait -n -p done_pid || rc=$?
	for suite in "${!pid_of[@]}"; do
		[ "${pid_of[$suite]}" = "$done_pid" ] || continue
		elapsed[$suite]=$((SECONDS - started[$suite]))
		status[$suite]=$rc
		unset "pid_of[$suite]"
		if [ "$rc" -eq 0 ]; then
			echo "$(date +%T) $suite passed ($(fmt_time "${elapsed[$suite]}"))"
		else
			echo "$(date +%T) $suite FAILED ($(fmt_time "${elapsed[$suite]}")), log: $logs/$suite.log"
		fi
	done
}
start_suite() {
	local suite=$1
	while [ ${#pid_of[@]} -ge "$jobs" ]; do reap; done
	started[$suite]=$SECONDS
	(
		cg_join "$suite"
		# Suites that only compute (no timeout of theirs depends on the
		# machine's speed) yield the CPU to those that wait for a broker,
		# a pipeline to drain or a worker within a time limit, and fill
		# the cores while those wait.
		case "$suite" in
			valgrind | lint | package | upgrade | model) renice -n 10 -p "$BASHPID" >/dev/null ;;
		esac
		cd /
		run_suite "$suite"
	) </dev/null >"$logs/$suite.log" 2>&1 &
	pid_of[$suite]=$!
	echo "$(date +%T) $suite started"
}

# The suites that need nothing of this run's build start at once: lint
# reads the tree, package builds the Debian package from a copy of it, and
# valgrind builds the extension its own way (with assertions).
for suite in $suites; do
	case "$suite" in
		valgrind | lint | package) start_suite "$suite" ;;
	esac
done
needs_build=0
case "$suites" in
	*regress* | *isolation* | *tap* | *demo* | *monitoring* | *examples* | *upgrade* | *model*) needs_build=1 ;;
esac
# The matrix builds its toolchains (at nice 10) and the extension against
# each; its Citus tests run on this PostgreSQL, from this run's build when
# there is one (ORDERING_MATRIX_BASE: it waits for "built" or "failed").
start_matrix() {
	case " $suites " in
		*" matrix "*) start_suite matrix ;;
	esac
}
[ "$needs_build" = 1 ] || start_matrix

# The sandbox built once, meanwhile: every other suite starts from a copy
# of it (test/lib.sh, ORDERING_SANDBOX_BASE).
build_time=
build_failed=0
if [ "$needs_build" = 1 ]; then
	start=$SECONDS
	sandbox_create "$here"
	base=$SANDBOX
	export ORDERING_MATRIX_BASE=$base
	start_matrix
	if (cg_join build && sandbox_build) >"$logs/build.log" 2>&1; then
		touch "$base/built"
		build_time=$((SECONDS - start))
		echo "$(date +%T) built the extension in $base ($(fmt_time "$build_time"))"
	else
		touch "$base/failed"
		cat "$logs/build.log"
		echo "the build failed: the suites that need it do not run" >&2
		build_failed=1
	fi
	export ORDERING_SANDBOX_BASE=$base
	unset SANDBOX SANDBOX_BIN
fi

for suite in $suites; do
	case "$suite" in
		matrix | valgrind | lint | package) ;;
		*)
			if [ "$build_failed" = 1 ]; then
				echo "not run: the build failed ($logs/build.log)" >"$logs/$suite.log"
				elapsed[$suite]=0
				status[$suite]=1
			else
				start_suite "$suite"
			fi
			;;
	esac
done
while [ ${#pid_of[@]} -gt 0 ]; do reap; done
# from the start of this command: package installation and the build too
total=$SECONDS

passed=0
failed=0
for suite in $suites; do
	if [ "${status[$suite]}" -ne 0 ]; then
		echo
		echo "======== suite $suite FAILED: its log ($logs/$suite.log)"
		cat "$logs/$suite.log"
	fi
done
echo
# the matrix's log holds its runs of this command, with lines of their own
for suite in $suites; do
	if [ "$suite" = matrix ]; then
		grep -h "^matrix: skipped" "$logs/$suite.log" || true
	else
		grep -h "^[a-z]*: skipped" "$logs/$suite.log" || true
	fi
done
# A line of the table: NAME RESULT SECONDS CPU NOTE; with ORDERING_RESULTS
# (test/matrix.sh sets it) also a tab-separated line in that file.
summary_row() {
	printf '%-24s %-7s %-8s %-7s%s\n' "$1" "$2" "$(fmt_time "$3")" "$4" "${5:+ ($5)}"
	if [ -n "${ORDERING_RESULTS:-}" ]; then
		printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$ORDERING_RESULTS"
	fi
}
printf '%-24s %-7s %-8s %-7s\n' suite result time CPU
if [ -n "$build_time" ]; then
	summary_row build passed "$build_time" "$(cg_seconds build)"
fi
for suite in $suites; do
	if [ "${status[$suite]}" -eq 0 ]; then
		result=passed
		passed=$((passed + 1))
	else
		result=FAILED
		failed=$((failed + 1))
	fi
	if [ "$suite" = matrix ]; then
		skipped=$(grep -c "^matrix: skipped" "$logs/$suite.log" || true)
	else
		skipped=$(grep -c "^[a-z]*: skipped" "$logs/$suite.log" || true)
	fi
	summary_row "$suite" "$result" "${elapsed[$suite]}" "$(cg_seconds "$suite")" \
		"$([ "$skipped" -gt 0 ] && echo "$skipped skipped")"
	# the matrix: a line per (platform, suite), from test/matrix.sh
	if [ "$suite" = matrix ] && [ -f "$logs/matrix.results" ]; then
		while IFS=$'\t' read -r platform s r t c n; do
			printf '%-24s %-7s %-8s %-7s%s\n' "  $platform $s" "$r" "$(fmt_time "$t")" "$c" "${n:+ ($n)}"
		done <"$logs/matrix.results"
	fi
done
printf '%-24s %-7s %-8s\n' total "" "$(fmt_time "$total")"
# The default suites without the matrix: say that it did not run, and why.
if [ "$suites" = " $default_suites" ]; then
	toolchains_find "$here"
	if [ -n "$TOOLCHAINS" ]; then
		echo "matrix: not run: bash test/run.sh runs PostgreSQL 15 only; .ci/run, or bash test/run.sh matrix, adds the matrix of $TOOLCHAINS"
	else
		echo "matrix: skipped: $TOOLCHAINS_WHY"
	fi
fi
if [ "$failed" -eq 0 ]; then
	rm -rf "$logs"
else
	echo "logs kept in $logs"
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
