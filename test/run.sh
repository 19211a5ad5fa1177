#!/usr/bin/env bash
#
# Runs every test of the extension: pg_regress, isolation specs and TAP.
#
#   bash test/run.sh            everything
#   bash test/run.sh regress    only pg_regress (also: isolation, tap, lint, demo,
#                               valgrind: regress + isolation under memcheck,
#                               monitoring: rules and dashboard against Prometheus,
#                               examples: the client examples in examples/,
#                               upgrade: 1.0 filled, then updated (test/upgrade.sh),
#                               package: the Debian package built, checked with
#                               lintian, installed and tested (test/package.sh))
#   PG_CONFIG=/path/to/pg_config bash test/run.sh
#                               the same against another PostgreSQL (15 or
#                               later, built with --enable-tap-tests for tap);
#                               by default Debian's 15, installed if missing
#
# Works from any folder on a fresh Debian 12 machine as root: installs what is
# missing, copies the source tree and a private copy of the PostgreSQL
# installation into a temporary directory owned by the postgres user, builds
# and installs the extension into that copy (never into the system's), and
# runs each suite on its own throwaway server with the library preloaded.
# Several runs may go on side by side.  Exits non-zero on any failure and
# prints regression.diffs.  It names the PostgreSQL it tests before it starts.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

suites=${*:-lint regress isolation tap valgrind demo monitoring examples upgrade package}

ensure_packages $(pg_packages) libipc-run-perl \
	prometheus-postgres-exporter python3-psycopg \
	make gcc libc6-dev
echo "PostgreSQL: $("$PG_CONFIG_SYSTEM" --version) ($PG_CONFIG_SYSTEM)"
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
		demo) run=(bash "$here/demo/test.sh") ;;
		monitoring) run=(bash "$here/test/monitoring.sh") ;;
		examples) run=(bash "$here/examples/test.sh") ;;
		upgrade) run=(bash "$here/test/upgrade.sh") ;;
		package) run=(bash "$here/test/package.sh") ;;
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
