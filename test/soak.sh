#!/usr/bin/env bash
#
# Runs only the randomized soak (test/t/022_soak.pl) in its own sandbox,
# the way test/run.sh runs the suites.
#
#   bash test/soak.sh                          a seed of the clock, scale 1
#   ORDERING_SOAK_SCALE=10 bash test/soak.sh   10x events and resources
#   ORDERING_SOAK_SEED=123 bash test/soak.sh   replay the run of seed 123
#
# The seed and what was processed are printed; the TAP log is kept in the
# sandbox on failure.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

ensure_packages $(pg_packages) libipc-run-perl \
	make gcc libc6-dev
sandbox_create "$here"
trap sandbox_destroy EXIT
sandbox_build

export ORDERING_SOAK_SEED=${ORDERING_SOAK_SEED:-} ORDERING_SOAK_SCALE=${ORDERING_SOAK_SCALE:-1}
export PG_TEST_TIMEOUT_DEFAULT=$((180 * ORDERING_SOAK_SCALE))
[ -n "$ORDERING_SOAK_SEED" ] || unset ORDERING_SOAK_SEED
if sandbox_make installcheck-tap PROVE_TESTS=test/t/022_soak.pl PROVE_FLAGS=-v; then
	echo "soak passed"
else
	echo "soak FAILED; log: $SANDBOX/src/tmp_check/log/regress_log_022_soak" >&2
	trap - EXIT
	exit 1
fi
