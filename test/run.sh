#!/usr/bin/env bash
#
# Runs every test of the extension: pg_regress, isolation specs and TAP.
#
#   bash test/run.sh            everything
#   bash test/run.sh regress    only pg_regress (also: isolation, tap, lint, demo,
#                               valgrind: regress + isolation under memcheck)
#
# Works from any folder on a fresh Debian 12 machine as root: installs what is
# missing, copies the source tree and a private copy of the PostgreSQL
# installation into a temporary directory owned by the postgres user, builds
# and installs the extension into that copy (never into the system's), and
# runs each suite on its own throwaway server with the library preloaded.
# Several runs may go on side by side.  Exits non-zero on any failure and
# prints regression.diffs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

suites=${*:-lint regress isolation tap valgrind demo}

# The demo suite: the end-to-end demo in a small configuration, over the
# in-process transport (billing with apply_if_newer) and over a private
# RabbitMQ (billing with the newer_only trigger; demo/run.sh starts and
# stops its own server and broker); fails if a verification fails.  A third
# run uses consumers without the extension and must fail the same checks,
# so they are shown not to be vacuous.
run_demo_suite() {
	local out rc=0
	out=$(mktemp -d /tmp/ordering-demo-out.XXXXXX)
	local small=(--subscriptions 300 --events 4000 --rate 1000 --quiet --out "$out")
	echo "demo: in-process transport"
	bash "$here/demo/run.sh" "${small[@]}" >"$out/inprocess.log" 2>&1 || rc=1
	grep -E "PASS|FAIL|RESULT|ended wrong" "$out/inprocess.log" || true
	echo "demo: RabbitMQ, billing through the newer_only trigger"
	bash "$here/demo/run.sh" --broker "${small[@]}" --state-consumer newer_only \
		>"$out/broker.log" 2>&1 || rc=1
	grep -E "PASS|FAIL|RESULT|ended wrong" "$out/broker.log" || true
	echo "demo: without the extension (the verification must fail)"
	if bash "$here/demo/run.sh" "${small[@]}" --without-extension --loss 0.05 \
		--duplicate 0.1 --rate 0 >"$out/without.log" 2>&1; then
		echo "the demo passed its checks without the extension" >&2
		rc=1
	elif ! grep -q "RESULT: FAILED" "$out/without.log" ||
		! grep -q "FAIL  every seat delta applied exactly once" "$out/without.log"; then
		echo "the demo without the extension did not fail its checks" >&2
		rc=1
	fi
	grep -E "PASS|FAIL|RESULT" "$out/without.log" || true
	if [ "$rc" -ne 0 ]; then
		echo "demo suite FAILED; logs in $out" >&2
		tail -n 40 "$out"/*.log >&2
		return 1
	fi
	rm -rf "$out"
}

ensure_packages postgresql-15 postgresql-server-dev-15 libipc-run-perl \
	prometheus-postgres-exporter \
	make gcc libc6-dev
sandbox_create "$here"
trap sandbox_destroy EXIT
sandbox_build

passed=0
failed=0
for suite in $suites; do
	case "$suite" in
		lint) run=(bash "$here/test/lint.sh") ;;
		valgrind) run=(bash "$here/test/valgrind.sh") ;;
		regress|isolation|tap) run=(sandbox_make "installcheck-$suite") ;;
		demo) run=(run_demo_suite) ;;
		*) echo "unknown suite: $suite" >&2; exit 2 ;;
	esac
	if "${run[@]}"; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "suite $suite FAILED" >&2
	fi
done

if [ "$failed" -ne 0 ]; then
	sandbox_show_diffs
	echo "sandbox kept in $SANDBOX" >&2
	trap - EXIT
fi
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
