#!/usr/bin/env bash
#
# The matrix suite of test/run.sh: the suites on the platforms Debian's
# archive does not have, built from source archives once into a cache.
#
#   bash test/run.sh matrix         (or bash test/matrix.sh, as root)
#   ORDERING_MATRIX=full bash test/run.sh matrix
#                                   every suite on every version (longer)
#
# The archives are in ORDERING_TOOLCHAINS (test/lib.sh, toolchains_find;
# by default ../shared/toolchains beside the checkout): postgresql-*.tar.*
# and citus-*.tar.* (with its citus-*-*.patch).  Without them the matrix is
# skipped, saying why, and passes.  Each is built once into
# ORDERING_TOOLCHAIN_CACHE (test/toolchain.sh), one after the other at nice
# 10; as soon as one is ready, its tests start, while the next one builds:
#
# - each PostgreSQL: `PG_CONFIG=<its pg_config> bash test/run.sh SUITES`,
#   the extension built once for them with -Werror and against a server
#   built with assertions, every contrib module the tests name installed
#   (ORDERING_MISSING_CONTRIB=fail); SUITES are the selection below;
# - Citus: on Debian's PostgreSQL 15, the TAP files that use OrderingCitus,
#   with ORDERING_CITUS_DIR naming the built image; a skip is a failure.
#
# ORDERING_MATRIX_JOBS platforms are tested at a time (default 2).  Each
# (platform, suite) gets a line with its result, wall and CPU time: in
# ORDERING_RESULTS when test/run.sh runs this, which prints them in its
# summary, or printed at the end.  Exits non-zero on any failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# the toolchains are tested here, not the PostgreSQL the caller named
unset PG_CONFIG ORDERING_SANDBOX_BASE SANDBOX SANDBOX_BIN
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

mode=${ORDERING_MATRIX:-selected}
case "$mode" in
	selected | full) ;;
	*)
		echo "ORDERING_MATRIX=$mode: selected (the default) or full" >&2
		exit 2
		;;
esac
jobs=${ORDERING_MATRIX_JOBS:-2}

# What each PostgreSQL runs (docs/testing.md, "The matrix", says why):
# regress, isolation and TAP on every version, the TAP files without those
# of Citus (they run on 15, the Citus line) and with 002_dump_restore (two
# thirds of the TAP time) only on the newest version; with
# ORDERING_MATRIX=full, every TAP file and the upgrade suite too.
suites_of() {
	if [ "$mode" = full ]; then
		echo "regress isolation tap upgrade"
	else
		echo "regress isolation tap"
	fi
}
tap_files_of() {
	local f skip
	skip=$citus_files
	if [ "$mode" != full ] && [ "$1" != "$newest" ]; then
		skip="$skip test/t/002_dump_restore.pl"
	fi
	for f in "$here"/test/t/*.pl; do
		f=${f#"$here"/}
		case " $skip " in
			*" $f "*) ;;
			*) printf '%s ' "$f" ;;
		esac
	done
}
# 002_dump_restore's scale: 100,000 resources on 15 (the default suites)
# and in the full matrix; 10,000 on the newest version in the selected one,
# where it checks that version's pg_dump and pg_restore, not the scale
# (a tenth of the time on a server built with assertions).
dump_resources_of() {
	if [ -n "${ORDERING_DUMP_RESOURCES:-}" ]; then
		echo "$ORDERING_DUMP_RESOURCES"
	elif [ "$mode" = full ]; then
		echo 100000
	else
		echo 10000
	fi
}
citus_files=$(cd "$here" && grep -l '^use OrderingCitus' test/t/*.pl | tr '\n' ' ')

fmt_time() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

work=$(mktemp -d /tmp/ordering-matrix.XXXXXX)
chmod 755 "$work"
results=${ORDERING_RESULTS:-$work/results}
standalone=0
[ -n "${ORDERING_RESULTS:-}" ] || standalone=1
cg_init "ordering-matrix.${work##*.}"
cleanup() {
	cg_cleanup
	rm -rf "$work"
}
trap cleanup EXIT

# A line of the summary: PLATFORM SUITE RESULT SECONDS CPU [NOTE].
row() {
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "${6:-}" >>"$results"
}

toolchains_find "$here"
if [ -z "$TOOLCHAINS" ]; then
	echo "matrix: skipped: $TOOLCHAINS_WHY"
	exit 0
fi
mapfile -t archives < <(toolchain_archives "$TOOLCHAINS")
# the newest PostgreSQL: the one that runs what the others leave out
newest=$(for a in "${archives[@]}"; do basename "$a"; done |
	sed -n 's/^postgresql-\(.*\)\.tar\..*$/\1/p' | sort -V | tail -n 1)
echo "matrix: toolchains in $TOOLCHAINS: $(for a in "${archives[@]}"; do basename "$a"; done | tr '\n' ' ')"
echo "matrix: cache ${ORDERING_TOOLCHAIN_CACHE:-/var/cache/ordering-toolchains}, $mode suites, $jobs platforms at a time"

# A platform's name in the summary: "16.2", "citus-13.2.2".
platform_of() {
	local n
	n=$(basename "$1")
	n=${n%.tar*}
	echo "${n#postgresql-}"
}

# The builder: every toolchain, one after the other, each announced by a
# file in $work when ready (the directory it is in) or failed.
build_all() {
	local a p start rc
	for a in "${archives[@]}"; do
		p=$(platform_of "$a")
		start=$SECONDS
		rc=0
		(
			cg_join "toolchain-$p"
			bash "$here/test/toolchain.sh" "$a" >"$work/$p.dir.tmp"
		) 2>"$work/$p.build.log" || rc=$?
		if [ "$rc" -eq 0 ]; then
			row "$p" toolchain passed $((SECONDS - start)) "$(cg_seconds "toolchain-$p")" \
				"$(grep -q '^toolchain: built' "$work/$p.build.log" && echo built || echo cached)"
			mv "$work/$p.dir.tmp" "$work/$p.dir"
		else
			row "$p" toolchain FAILED $((SECONDS - start)) "$(cg_seconds "toolchain-$p")"
			touch "$work/$p.failed"
		fi
		cat "$work/$p.build.log"
	done
}

# The tests of one platform, with test/run.sh, its rows prefixed with the
# platform's name.
test_platform() {
	local p=$1 dir rc=0 sub=$work/$p.results
	dir=$(cat "$work/$p.dir")
	: >"$sub"
	case "$p" in
		citus-*)
			echo "matrix: $p: $citus_files on $("$PG_CONFIG_SYSTEM" --version)"
			# from test/run.sh's build of the extension, when it has one
			local base=
			if [ -n "${ORDERING_MATRIX_BASE:-}" ]; then
				while [ ! -f "$ORDERING_MATRIX_BASE/built" ] &&
					[ ! -f "$ORDERING_MATRIX_BASE/failed" ]; do
					sleep 2
				done
				[ -f "$ORDERING_MATRIX_BASE/built" ] && base=$ORDERING_MATRIX_BASE
			fi
			ORDERING_SANDBOX_BASE=$base ORDERING_CITUS_DIR=$dir PROVE_TESTS=$citus_files \
				ORDERING_RESULTS=$sub bash "$here/test/run.sh" tap || rc=$?
			# a Citus file that skipped itself did not test Citus
			if awk -F'\t' '$5 ~ /skipped/ { bad = 1 } END { exit !bad }' "$sub"; then
				echo "matrix: $p: a Citus test skipped itself: Citus was not found" >&2
				sed -i 's/\tpassed\t/\tFAILED\t/' "$sub"
				rc=1
			fi
			;;
		*)
			# shellcheck disable=SC2046 # suite names are words
			ORDERING_DUMP_RESOURCES=$(dump_resources_of "$p") \
				PG_CONFIG=$dir/bin/pg_config ORDERING_MISSING_CONTRIB=fail \
				PROVE_TESTS=$(tap_files_of "$p") ORDERING_RESULTS=$sub \
				bash "$here/test/run.sh" $(suites_of "$p") || rc=$?
			;;
	esac
	sed "s/^/$p\t/" "$sub" >>"$results"
	return "$rc"
}

build_all >"$work/builder.log" 2>&1 &
builder=$!

# Start each platform's tests as soon as its toolchain is ready, $jobs at a
# time, in the builder's order; each writes a log of its own, printed when
# it ends.
declare -A pid_of=()
pending=()
for a in "${archives[@]}"; do pending+=("$(platform_of "$a")"); done
failed=0
reap() {
	local done_pid p rc=0
	wait -n -p done_pid "${pid_of[@]}" || rc=$?
	for p in "${!pid_of[@]}"; do
		[ "${pid_of[$p]}" = "$done_pid" ] || continue
		unset "pid_of[$p]"
		echo "======== matrix: $p $([ "$rc" -eq 0 ] && echo passed || echo FAILED) at $(date +%T)"
		# prefixed: test/run.sh takes lines that start with "suite:" for its own
		sed "s/^/$p | /" "$work/$p.log"
		[ "$rc" -eq 0 ] || failed=1
	done
}
while [ ${#pending[@]} -gt 0 ]; do
	p=${pending[0]}
	if [ -f "$work/$p.failed" ]; then
		failed=1
		pending=("${pending[@]:1}")
	elif [ -f "$work/$p.dir" ] && [ ${#pid_of[@]} -lt "$jobs" ]; then
		echo "$(date +%T) matrix: $p started"
		test_platform "$p" >"$work/$p.log" 2>&1 </dev/null &
		pid_of[$p]=$!
		pending=("${pending[@]:1}")
	elif [ ${#pid_of[@]} -ge "$jobs" ]; then
		reap
	else
		sleep 2
	fi
done
while [ ${#pid_of[@]} -gt 0 ]; do reap; done
wait "$builder" || failed=1
echo "======== matrix: toolchains"
cat "$work/builder.log"

if [ "$standalone" = 1 ]; then
	echo
	echo "platform      suite       result  time     CPU"
	while IFS=$'\t' read -r p s r t c n; do
		printf '%-13s %-11s %-7s %-8s %-7s%s\n' "$p" "$s" "$r" "$(fmt_time "$t")" "$c" "${n:+ ($n)}"
	done <"$results"
fi
[ "$failed" -eq 0 ]
