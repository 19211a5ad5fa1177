#!/usr/bin/env bash
#
# The upgrade suite of test/run.sh: version 1.0, filled with producer and
# consumer state, then the current build and ALTER EXTENSION ordering UPDATE,
# as a user who preloads the library does it (README, "Upgrading").
#
#   bash test/upgrade.sh
#
# 1. Builds 1.0 from the git history (the 1.0 release, commit $V10_COMMIT)
#    and installs it into a private copy of PostgreSQL; without git history
#    it says so and installs the current build, whose 1.0 script is then
#    used with the current library.
# 2. Starts a server with the library preloaded, creates the extension at
#    1.0 in two databases, fills one (test/upgrade/fill.sql: counters of the
#    outbox and of an attached table, next_sequence-only streams, published
#    and unpublished outbox rows, positions, parked events, gap requests) and
#    records what must survive; stops the server.
# 3. Installs the current build into the same copy, starts the server again,
#    runs ALTER EXTENSION ordering UPDATE in both databases, and checks that
#    every row survived and that producing and consuming continue
#    (test/upgrade/verify.sql).
# 4. Runs the regression suite (REGRESS of the Makefile) with pg_regress
#    --use-existing against the other database, whose extension was created
#    at 1.0 and updated.
#
# Depends only on "1.0, then UPDATE", not on what the upgrade scripts do.
# Exits non-zero on any failure and keeps its sandbox for a look.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

V10_COMMIT=01fa343
REGRESS_DB=contrib_regression
STATE_DB=upgrade_state

# 1.0 was released for PostgreSQL 15 only: it does not build on 16 and
# later (src/compat.h lists the APIs that changed), so there is nothing to
# upgrade from there.
if [ "$PG_MAJOR" != 15 ]; then
	echo "upgrade: skipped: version 1.0 builds only on PostgreSQL 15, this is $PG_MAJOR"
	exit 0
fi
ensure_packages $(pg_packages) make gcc libc6-dev
sandbox_create "$here"
trap finish EXIT
# the postgres user's commands need a working directory they may enter
cd "$SANDBOX"

cur_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$here/ordering.control")
data=$SANDBOX/data
log=$SANDBOX/server.log

server() {
	as_postgres pg_ctl -D "$data" -l "$log" -w -t 120 \
		-o "-k $SANDBOX -c listen_addresses=''" "$@" >/dev/null
}

# On the way out: stop the server if it runs; keep the sandbox after a failure.
finish() {
	local rc=$?
	if [ -f "$data/postmaster.pid" ]; then
		server stop -m immediate || true
	fi
	if [ "$rc" -eq 0 ]; then
		sandbox_destroy
	else
		echo "upgrade: FAILED, sandbox kept in $SANDBOX (server log: $log)" >&2
	fi
}

psql_db() {
	local db=$1
	shift
	as_postgres psql -X -q -h "$SANDBOX" -d "$db" -v ON_ERROR_STOP=1 "$@"
}

# 1. Version 1.0
if git -c safe.directory="$here" -C "$here" cat-file -e "$V10_COMMIT^{commit}" 2>/dev/null; then
	echo "upgrade: installing 1.0 built from commit $V10_COMMIT"
	mkdir "$SANDBOX/v10"
	git -c safe.directory="$here" -C "$here" archive "$V10_COMMIT" | tar -C "$SANDBOX/v10" -xf -
	chown -R "$(stat -c %U "$SANDBOX")": "$SANDBOX/v10"
	as_postgres make -s -C "$SANDBOX/v10" PG_CONFIG="$PG_CONFIG_SYSTEM"
	as_postgres make -s -C "$SANDBOX/v10" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		DESTDIR="$SANDBOX/inst" install
	from_history=1
else
	echo "upgrade: no git history with commit $V10_COMMIT here: installing the"
	echo "upgrade: current build and creating the extension from its 1.0 script"
	echo "upgrade: with the current library (not the 1.0 library)"
	sandbox_build
	from_history=0
fi

# 2. A server at 1.0, filled
as_postgres initdb -D "$data" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
cat "$here/test/ordering.conf" >>"$data/postgresql.conf"
server start
for db in "$STATE_DB" "$REGRESS_DB"; do
	# the settings pg_regress gives the databases it creates itself
	psql_db postgres -c "CREATE DATABASE $db TEMPLATE template0" \
		-c "ALTER DATABASE $db SET lc_messages TO 'C'" \
		-c "ALTER DATABASE $db SET lc_monetary TO 'C'" \
		-c "ALTER DATABASE $db SET lc_numeric TO 'C'" \
		-c "ALTER DATABASE $db SET lc_time TO 'C'" \
		-c "ALTER DATABASE $db SET bytea_output TO 'hex'" \
		-c "ALTER DATABASE $db SET timezone_abbreviations TO 'Default'"
	psql_db "$db" -c "CREATE EXTENSION ordering VERSION '1.0'"
done
psql_db "$STATE_DB" -f "$SANDBOX/src/test/upgrade/fill.sql" >/dev/null
server stop

# 3. The current build, a restart, and the update
if [ "$from_history" -eq 1 ]; then
	echo "upgrade: installing the current build ($cur_version) over 1.0"
	sandbox_build
fi
server start
for db in "$STATE_DB" "$REGRESS_DB"; do
	psql_db "$db" -c "ALTER EXTENSION ordering UPDATE"
	got=$(psql_db "$db" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'ordering'")
	if [ "$got" != "$cur_version" ]; then
		echo "upgrade: $db is at version $got after the update, not $cur_version" >&2
		false
	fi
done
echo "upgrade: both databases updated from 1.0 to $cur_version"
psql_db "$STATE_DB" -P footer=off -f "$SANDBOX/src/test/upgrade/verify.sql"

# 4. The regression suite on the database created at 1.0
regress=$(as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
	--eval='print-regress: ; @echo $(REGRESS)' print-regress)
mkdir -p "$SANDBOX/regress"
chown "$(stat -c %U "$SANDBOX")": "$SANDBOX/regress"
pgxs_dir=$(dirname "$("$PG_CONFIG_SYSTEM" --pgxs)")
# shellcheck disable=SC2086 # the test names are words
if ! (cd "$SANDBOX/src" && as_postgres "$pgxs_dir/../test/regress/pg_regress" \
	--bindir="$SANDBOX_BIN" --inputdir=. --outputdir="$SANDBOX/regress" \
	--host="$SANDBOX" --use-existing --dbname="$REGRESS_DB" $regress); then
	cat "$SANDBOX/regress/regression.diffs" 2>/dev/null || true
	false
fi
server stop
echo "upgrade: passed"
