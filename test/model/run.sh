#!/usr/bin/env bash
#
# The model-based tester (test/model/README.md): a reference model of the
# contract drives a server of its own through several sessions for a time
# budget, with a new seed each run (printed).
#
#   bash test/model/run.sh                       3 minutes, a new seed
#   bash test/model/run.sh --minutes 10 --seed 1234
#                                                reproduce a run, or run longer
#
# Builds the extension into a sandbox (test/lib.sh), or uses the one
# test/run.sh built (ORDERING_SANDBOX_BASE).  On a failure it prints the
# shrunk example as a SQL script that replays it, keeps the sandbox and
# exits non-zero.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

ensure_packages $(pg_packages) make gcc libc6-dev python3-hypothesis python3-psycopg

sandbox_create "$here"
sandbox_build >/dev/null
mkdir -p "$SANDBOX/model"
chown postgres: "$SANDBOX/model" 2>/dev/null || true
# Debian's python3 (its packages are the ones installed above)
if as_postgres /usr/bin/python3 "$SANDBOX/src/test/model/main.py" \
	--bindir "$SANDBOX_BIN" --workdir "$SANDBOX/model" "$@"; then
	sandbox_destroy
else
	echo "sandbox kept in $SANDBOX" >&2
	exit 1
fi
