#!/usr/bin/env bash
#
# The upgrade suite of test/run.sh: each released version, filled with
# state, then the current build and ALTER EXTENSION ordering UPDATE, as a
# user who preloads the library does it (README, "Upgrading").
#
#   bash test/upgrade.sh
#
# 1. For each released version, 1.0, 1.1 and 1.2 (their commits in
#    test/lib.sh, commit_of): builds it from the git
#    history and installs it into a private copy of PostgreSQL; starts a
#    server of its own (library preloaded), creates the extension at that
#    version in two databases and fills one: test/upgrade/fill.sql
#    (counters of the outbox and of an attached table, next_sequence-only
#    streams, published and unpublished outbox rows, positions, parked
#    events, gap requests) and, from 1.1 on, test/upgrade/fill11.sql (dead
#    letters with the blocks and attempts, batch consumers, a detached
#    table with a stream of its own, a table with the relay wake-up, what
#    reconciliation sees); each records what must survive.  fill.sql also
#    gives a role each privilege set, in a database of its own.  Without
#    the git history it says so and uses the current build's library with
#    the old version's SQL.  Of the previous version (1.2) it takes dumps
#    (custom and plain) of the filled database, of the roles' database, of
#    a database created at 1.0, given the sets there and updated to 1.2,
#    and of one with a view and an index of a user's that call functions
#    1.3 moves (test/upgrade/user_calls.sql).
# 2. Installs the current build into the same copy, starts the servers
#    again, runs ALTER EXTENSION ordering UPDATE in every database, and
#    checks that every row survived and that producing and consuming
#    continue (test/upgrade/verify.sql; from 1.1 on also verify11.sql and
#    continue11.sql), and that the roles work (roles.sql).
# 3. Compares the schema of each updated database with a fresh CREATE
#    EXTENSION (test/upgrade/schema.sql: every object of the extension and
#    what defines it, without OIDs): they must be the same.
# 4. Privileges: what each role holds after the update must be what a new
#    install with the same grant_* calls gives (test/upgrade/privileges.sql),
#    and still after a dump (custom, plain, directory with pg_restore -j)
#    and the documented restore (docs/restore.md), before and after
#    ordering.post_restore().
# 5. The dumps of the previous version restore into the current one as
#    docs/restore.md says: the filled database then has the schema of a new
#    install, its state, and producing and consuming continue (verify*.sql);
#    the roles hold what a new install gives them; the user's view and
#    index work, post_restore() keeps what they call under its 1.2 name
#    with a WARNING until they are made again, then drops it.
# 6. Runs the regression suite (REGRESS of the Makefile) with pg_regress
#    --use-existing against each version's other database, created at that
#    version and updated.
#
# 1.0 builds on PostgreSQL 15 only (src/compat.h lists the APIs that changed
# after it): elsewhere only 1.1 and 1.2 are updated, saying so.  Depends
# only on "old version, then UPDATE", not on what the update scripts do.
# Exits non-zero on any failure and keeps its sandbox for a look.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

# the version before the current one: its dumps restore into the current one
PREVIOUS=1.2
REGRESS_DB=contrib_regression
STATE_DB=upgrade_state
ROLES_DB=upgrade_roles
FRESH_DB=upgrade_fresh
FRESH_ROLES_DB=upgrade_roles_fresh
DAMAGED_DB=upgrade_damaged
VIA10_DB=upgrade_roles_via10
USER_CALLS_DB=upgrade_user_calls

if [ "$PG_MAJOR" = 15 ]; then
	versions="1.0 1.1 1.2"
else
	versions="1.1 1.2"
	echo "upgrade: 1.0 is not updated: it builds only on PostgreSQL 15, this is $PG_MAJOR"
fi
ensure_packages $(pg_packages) make gcc libc6-dev git
sandbox_create "$here"
trap finish EXIT
# the postgres user's commands need a working directory they may enter
cd "$SANDBOX"

cur_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$here/ordering.control")
owner=$(stat -c %U "$SANDBOX")

# One server per released version: its data directory, socket and log.
data() { echo "$SANDBOX/data-$1"; }
sock() { echo "$SANDBOX/sock-$1"; }

server() {
	local v=$1
	shift
	as_postgres pg_ctl -D "$(data "$v")" -l "$SANDBOX/server-$v.log" -w -t 120 \
		-o "-k $(sock "$v") -c listen_addresses=''" "$@" >/dev/null
}

# On the way out: stop the servers that run; keep the sandbox after a failure.
finish() {
	local rc=$? v
	for v in ${versions:-}; do
		if [ -f "$(data "$v")/postmaster.pid" ]; then
			server "$v" stop -m immediate || true
		fi
	done
	if [ "$rc" -eq 0 ]; then
		sandbox_destroy
	else
		echo "upgrade: FAILED, sandbox kept in $SANDBOX (server logs: $SANDBOX/server-*.log)" >&2
	fi
}

psql_db() {
	local v=$1 db=$2
	shift 2
	as_postgres psql -X -q -h "$(sock "$v")" -d "$db" -v ON_ERROR_STOP=1 "$@"
}

# Install release $1, built from commit $2 (test/lib.sh, release_files),
# into the sandbox's copy of PostgreSQL.
install_release() {
	cp -a "$(release_files "$here" "$1" "$2")/." "$SANDBOX/inst/"
}

# The privileges of fill.sql's roles in a database, one line each
# (test/upgrade/privileges.sql).
privileges() {
	psql_db "$1" "$2" -f "$SANDBOX/src/test/upgrade/privileges.sql"
}

# Compares the privileges of fill.sql's roles in a database with a new
# install's ($FRESH_ROLES_DB of that server): they must be the same.
same_privileges() {
	local v=$1 db=$2 what=$3 out
	out=$SANDBOX/privileges-$v-$db.txt
	privileges "$v" "$db" >"$out"
	if ! diff -u --label "new install" --label "$what" "$SANDBOX/privileges-$v-fresh.txt" "$out"; then
		echo "upgrade: the roles' privileges in $what differ from a new install's (above)" >&2
		false
	fi
}

# Restores a dump into a new database as docs/restore.md says: restore mode
# on, pg_restore (--exit-on-error; -j 2 for the custom and directory
# formats) or psql (--single-transaction, ON_ERROR_STOP), and, unless the
# fourth argument says "before", ordering.post_restore().
restore_dump() {
	local v=$1 db=$2 dump=$3 step=${4:-}
	psql_db "$v" postgres -c "CREATE DATABASE $db TEMPLATE template0" \
		-c "ALTER DATABASE $db SET ordering.restoring = on" >/dev/null
	case "$dump" in
		*.sql)
			psql_db "$v" "$db" --single-transaction -f "$dump" >/dev/null ;;
		*)
			as_postgres pg_restore -h "$(sock "$v")" --exit-on-error -j 2 -d "$db" "$dump" ;;
	esac
	if [ "$step" != before ]; then
		psql_db "$v" "$db" -Atc "SELECT ordering.post_restore()" >/dev/null
	fi
}

# The state fill.sql (and fill11.sql) recorded survived, and producing and
# consuming go on (from 1.1 on, the 1.1 features too).
verify_state() {
	local v=$1 db=$2
	if [ "$v" != 1.0 ]; then
		psql_db "$v" "$db" -P footer=off -f "$SANDBOX/src/test/upgrade/verify11.sql"
	fi
	psql_db "$v" "$db" -P footer=off -f "$SANDBOX/src/test/upgrade/verify.sql"
	if [ "$v" != 1.0 ]; then
		psql_db "$v" "$db" -P footer=off -f "$SANDBOX/src/test/upgrade/continue11.sql"
	fi
}

# The user's view and index of user_calls.sql work, and call the functions
# where they are now.
user_calls_follow() {
	local v=$1 db=$2 what=$3 def
	psql_db "$v" "$db" -f "$SANDBOX/src/test/upgrade/user_calls_verify.sql"
	def=$(psql_db "$v" "$db" -Atc "SELECT pg_get_viewdef('user_account_buckets') || pg_get_indexdef('user_accounts_fingerprint'::regclass)")
	if [[ "$def" == *"ordering.resource_"* ]]; then
		echo "upgrade: the view or index of $what still calls ordering.resource_*: $def" >&2
		false
	fi
}

# A dump of user_calls.sql's database restored: the view works on the
# copies of the functions under their 1.2 names, which post_restore() keeps
# with a WARNING naming what uses them; made again as docs/restore.md says,
# the next post_restore() drops them, leaving the schema of a new install.
user_calls_restored() {
	local v=$1 db=$2 out f
	out=$(psql_db "$v" "$db" -Atc "SELECT ordering.post_restore()" 2>&1)
	for f in 'resource_bucket(text,integer) is kept: .*view public.user_account_buckets' \
		'resource_fingerprint(text,bigint) is kept: .*index public.user_accounts_fingerprint'; do
		if ! grep -q "WARNING:  function ordering.$f" <<<"$out"; then
			echo "upgrade: post_restore() in $db did not say: ordering.$f: $out" >&2
			false
		fi
	done
	psql_db "$v" "$db" -Atc "SELECT count(*) FROM ((TABLE user_account_buckets_at_12 EXCEPT TABLE user_account_buckets)
	                                 UNION ALL (TABLE user_account_buckets EXCEPT TABLE user_account_buckets_at_12)) d" |
		grep -qx 0 || { echo "upgrade: user_account_buckets in $db gives other rows than at $v" >&2; false; }
	out=$(psql_db "$v" "$db" 2>&1 <<-'SQL'
		CREATE OR REPLACE VIEW user_account_buckets AS
		SELECT ordering_internal.resource_bucket(id, 16) AS bucket, count(*) AS accounts,
		       bit_xor(ordering_internal.resource_fingerprint(id, version)) AS fingerprint
		  FROM user_accounts
		 GROUP BY 1;
		DROP INDEX user_accounts_fingerprint;
		CREATE INDEX user_accounts_fingerprint ON user_accounts (ordering_internal.resource_fingerprint(id, version));
		SELECT ordering.post_restore();
	SQL
	)
	if [[ "$out" == *WARNING* ]]; then
		echo "upgrade: post_restore() in $db after the view and index were made again: $out" >&2
		false
	fi
	psql_db "$v" "$db" -f "$SANDBOX/src/test/upgrade/schema.sql" >"$SANDBOX/schema-$db.txt"
	if ! diff -u --label "fresh install" --label "$db (restored, view and index made again)" \
		"$SANDBOX/schema-fresh.txt" "$SANDBOX/schema-$db.txt"; then
		echo "upgrade: $db differs from a fresh install (above)" >&2
		false
	fi
	user_calls_follow "$v" "$db" "$db"
}

dump_db() {
	local v=$1 db=$2 format=$3 file=$4
	as_postgres pg_dump -h "$(sock "$v")" -F "$format" -f "$file" "$db"
}

# 1. Each released version, filled
from_history=1
for v in $versions; do
	commit=$(commit_of "$v")
	if [ "$from_history" = 1 ] && release_in_history "$here" "$commit"; then
		echo "upgrade: installing $v built from commit $commit"
		# without the current build's LLVM bitcode in place, which JIT
		# would inline into the old library's callers
		rm -rf "$SANDBOX/inst$(pg_dir --pkglibdir)/bitcode/ordering" \
			"$SANDBOX/inst$(pg_dir --pkglibdir)/bitcode/ordering.index.bc"
		install_release "$v" "$commit"
	else
		if [ "$from_history" = 1 ]; then
			echo "upgrade: no git history with commit $commit here: installing the"
			echo "upgrade: current build and creating the extension from its old"
			echo "upgrade: scripts with the current library (not the released ones)"
			from_history=0
			sandbox_build
		fi
	fi
	mkdir -p "$(sock "$v")"
	chown "$owner": "$(sock "$v")"
	as_postgres initdb -D "$(data "$v")" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
	cat "$here/test/ordering.conf" >>"$(data "$v")/postgresql.conf"
	server "$v" start
	for db in "$STATE_DB" "$REGRESS_DB"; do
		# the settings pg_regress gives the databases it creates itself
		psql_db "$v" postgres -c "CREATE DATABASE $db TEMPLATE template0" \
			-c "ALTER DATABASE $db SET lc_messages TO 'C'" \
			-c "ALTER DATABASE $db SET lc_monetary TO 'C'" \
			-c "ALTER DATABASE $db SET lc_numeric TO 'C'" \
			-c "ALTER DATABASE $db SET lc_time TO 'C'" \
			-c "ALTER DATABASE $db SET bytea_output TO 'hex'" \
			-c "ALTER DATABASE $db SET timezone_abbreviations TO 'Default'"
		psql_db "$v" "$db" -c "CREATE EXTENSION ordering VERSION '$v'"
	done
	psql_db "$v" "$STATE_DB" -f "$SANDBOX/src/test/upgrade/fill.sql" >/dev/null
	if [ "$v" != 1.0 ]; then
		psql_db "$v" "$STATE_DB" -f "$SANDBOX/src/test/upgrade/fill11.sql" >/dev/null
	fi
	if [ "$v" = "$PREVIOUS" ]; then
		# the roles given their sets at 1.0 and updated to this version,
		# whose updates granted them the new objects: the case where a
		# dump of this version lacks privileges (post_restore() gives
		# them back)
		psql_db "$v" postgres -c "CREATE DATABASE $VIA10_DB TEMPLATE template0" >/dev/null
		psql_db "$v" "$VIA10_DB" -c "CREATE EXTENSION ordering VERSION '1.0'" \
			-c "SELECT ordering.grant_producer('upgrade_producer'), ordering.grant_consumer('upgrade_consumer'),
			           ordering.grant_monitor('upgrade_monitor'), ordering.grant_operator('upgrade_operator')" \
			-c "ALTER EXTENSION ordering UPDATE" >/dev/null
		psql_db "$v" postgres -c "CREATE DATABASE $USER_CALLS_DB TEMPLATE template0" >/dev/null
		psql_db "$v" "$USER_CALLS_DB" -c "CREATE EXTENSION ordering VERSION '$v'" >/dev/null
		psql_db "$v" "$USER_CALLS_DB" -f "$SANDBOX/src/test/upgrade/user_calls.sql" >/dev/null
		for db in "$STATE_DB" "$ROLES_DB" "$VIA10_DB" "$USER_CALLS_DB"; do
			dump_db "$v" "$db" c "$SANDBOX/dump-$v-$db.custom"
			dump_db "$v" "$db" p "$SANDBOX/dump-$v-$db.sql"
		done
		echo "upgrade: dumps of $v taken"
	fi
	if [ "$v" = 1.1 ]; then
		# a column added to ordering.positions and dropped again, which 1.1
		# allowed: the update refuses it (step 2)
		psql_db "$v" postgres -c "CREATE DATABASE $DAMAGED_DB TEMPLATE template0"
		psql_db "$v" "$DAMAGED_DB" -c "CREATE EXTENSION ordering VERSION '$v'" \
			-c "SELECT ordering.deliver('c', 'r', 1, '{}')" \
			-c "ALTER TABLE ordering.positions ADD COLUMN note text" \
			-c "ALTER TABLE ordering.positions DROP COLUMN note" >/dev/null
	fi
	server "$v" stop
done

# 2. The current build, a restart, and the update
if [ "$from_history" -eq 1 ]; then
	echo "upgrade: installing the current build ($cur_version) over them"
	sandbox_build
fi
for v in $versions; do
	server "$v" start
	for db in "$STATE_DB" "$REGRESS_DB" "$ROLES_DB"; do
		psql_db "$v" "$db" -c "ALTER EXTENSION ordering UPDATE"
		got=$(psql_db "$v" "$db" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'ordering'")
		if [ "$got" != "$cur_version" ]; then
			echo "upgrade: $db is at version $got after the update from $v, not $cur_version" >&2
			false
		fi
	done
	echo "upgrade: the databases updated from $v to $cur_version"
done

# The view and the index of a user's that call functions the update moves
# follow them.
if [[ " $versions " == *" $PREVIOUS "* ]]; then
	psql_db "$PREVIOUS" "$USER_CALLS_DB" -c "ALTER EXTENSION ordering UPDATE"
	user_calls_follow "$PREVIOUS" "$USER_CALLS_DB" "$USER_CALLS_DB updated from $PREVIOUS"
	echo "upgrade: a view and an index calling functions that moved follow them through the update from $PREVIOUS"
fi

# A 1.1 database whose ordering.positions had a column added and dropped
# again: the update refuses it and changes nothing; the way its hint gives
# (a dump restored into a new database) updates, keeping the position.
if [[ " $versions " == *" 1.1 "* ]]; then
	if out=$(psql_db 1.1 "$DAMAGED_DB" -c "ALTER EXTENSION ordering UPDATE" 2>&1); then
		echo "upgrade: $DAMAGED_DB (a column dropped from ordering.positions) was updated" >&2
		false
	fi
	grep -q 'ordering.positions has a column that was added and dropped again' <<<"$out"
	got=$(psql_db 1.1 "$DAMAGED_DB" -Atc "SELECT extversion FROM pg_extension WHERE extname = 'ordering'")
	[ "$got" = 1.1 ]
	psql_db 1.1 postgres -c "CREATE DATABASE ${DAMAGED_DB}_restored TEMPLATE template0"
	as_postgres pg_dump -h "$(sock 1.1)" -d "$DAMAGED_DB" |
		psql_db 1.1 "${DAMAGED_DB}_restored" >/dev/null
	psql_db 1.1 "${DAMAGED_DB}_restored" -c "ALTER EXTENSION ordering UPDATE"
	got=$(psql_db 1.1 "${DAMAGED_DB}_restored" -Atc "SELECT count(*) FROM ordering.deliver('c', 'r', 2, '{}')")
	[ "$got" = 1 ]
	echo "upgrade: a dropped column of ordering.positions refuses the update; dumped and restored, it updates"
fi

# 3. The same schema as a fresh install
first=${versions%% *}
psql_db "$first" postgres -c "CREATE DATABASE $FRESH_DB TEMPLATE template0"
psql_db "$first" "$FRESH_DB" -c "CREATE EXTENSION ordering"
psql_db "$first" "$FRESH_DB" -f "$SANDBOX/src/test/upgrade/schema.sql" >"$SANDBOX/schema-fresh.txt"
echo "upgrade: a fresh install has $(grep -c '^member' "$SANDBOX/schema-fresh.txt") objects"
for v in $versions; do
	for db in "$STATE_DB" "$REGRESS_DB"; do
		out=$SANDBOX/schema-$v-$db.txt
		psql_db "$v" "$db" -f "$SANDBOX/src/test/upgrade/schema.sql" >"$out"
		if ! diff -u --label "fresh install" --label "$db, updated from $v" \
			"$SANDBOX/schema-fresh.txt" "$out"; then
			echo "upgrade: $db updated from $v differs from a fresh install (above)" >&2
			false
		fi
	done
	echo "upgrade: the databases updated from $v have the schema of a fresh install"
done

# The state survived, and producing and consuming go on.
for v in $versions; do
	echo "upgrade: the state filled at $v"
	verify_state "$v" "$STATE_DB"
	psql_db "$v" "$ROLES_DB" -P footer=off -f "$SANDBOX/src/test/upgrade/roles.sql"
done

# 4. Privileges: each role holds what a new install with the same grant_*
# calls gives it, after the update and after a dump and a restore, in
# every format, before ordering.post_restore() (the dump carries them) and
# after it.
for v in $versions; do
	psql_db "$v" postgres -c "CREATE DATABASE $FRESH_ROLES_DB TEMPLATE template0" >/dev/null
	psql_db "$v" "$FRESH_ROLES_DB" -c "CREATE EXTENSION ordering" \
		-c "SELECT ordering.grant_producer('upgrade_producer'), ordering.grant_consumer('upgrade_consumer'),
		           ordering.grant_monitor('upgrade_monitor'), ordering.grant_operator('upgrade_operator')" >/dev/null
	privileges "$v" "$FRESH_ROLES_DB" >"$SANDBOX/privileges-$v-fresh.txt"
	same_privileges "$v" "$ROLES_DB" "$ROLES_DB updated from $v"
	for format in custom plain directory; do
		case "$format" in
			custom) file=$SANDBOX/dump-roles-$v.custom; dump_db "$v" "$ROLES_DB" c "$file" ;;
			plain) file=$SANDBOX/dump-roles-$v.sql; dump_db "$v" "$ROLES_DB" p "$file" ;;
			directory) file=$SANDBOX/dump-roles-$v.dir; dump_db "$v" "$ROLES_DB" d "$file" ;;
		esac
		restore_dump "$v" "${ROLES_DB}_$format" "$file" before
		same_privileges "$v" "${ROLES_DB}_$format" "$ROLES_DB updated from $v, dumped ($format) and restored"
		psql_db "$v" "${ROLES_DB}_$format" -Atc "SELECT ordering.post_restore()" >/dev/null
		same_privileges "$v" "${ROLES_DB}_$format" "$ROLES_DB updated from $v, dumped ($format), restored and post_restore()"
	done
	echo "upgrade: the roles given their sets at $v hold what a new install gives them, updated, dumped and restored"
done

# 5. The dumps taken at the previous version restore into this one.
if [ "$from_history" -eq 1 ] && [[ " $versions " == *" $PREVIOUS "* ]]; then
	v=$PREVIOUS
	for format in custom sql; do
		db=${STATE_DB}_from_${v//./}_$format
		restore_dump "$v" "$db" "$SANDBOX/dump-$v-$STATE_DB.$format"
		out=$SANDBOX/schema-$db.txt
		psql_db "$v" "$db" -f "$SANDBOX/src/test/upgrade/schema.sql" >"$out"
		if ! diff -u --label "fresh install" --label "$db (a dump of $v restored)" \
			"$SANDBOX/schema-fresh.txt" "$out"; then
			echo "upgrade: a dump of $v restored ($format) differs from a fresh install (above)" >&2
			false
		fi
		verify_state "$v" "$db"
		db=${ROLES_DB}_from_${v//./}_$format
		restore_dump "$v" "$db" "$SANDBOX/dump-$v-$ROLES_DB.$format"
		same_privileges "$v" "$db" "$ROLES_DB dumped at $v ($format) and restored"
		psql_db "$v" "$db" -P footer=off -f "$SANDBOX/src/test/upgrade/roles.sql" >/dev/null
		db=${VIA10_DB}_from_${v//./}_$format
		restore_dump "$v" "$db" "$SANDBOX/dump-$v-$VIA10_DB.$format"
		same_privileges "$v" "$db" "$VIA10_DB (1.0, updated to $v) dumped ($format) and restored"
		db=${USER_CALLS_DB}_from_${v//./}_$format
		restore_dump "$v" "$db" "$SANDBOX/dump-$v-$USER_CALLS_DB.$format" before
		user_calls_restored "$v" "$db"
	done
	echo "upgrade: dumps of $v (custom with pg_restore -j, plain) restored: the schema of a new install, the state, producing and consuming go on, the roles' privileges, a user's view and index of moved functions"
fi

# 6. The regression suite on each database created at an old version
regress=$(test_list regress "$SANDBOX/src")
pgxs_dir=$(dirname "$("$PG_CONFIG_SYSTEM" --pgxs)")
for v in $versions; do
	echo "upgrade: the regression suite on $REGRESS_DB, created at $v and updated"
	mkdir -p "$SANDBOX/regress-$v"
	chown "$owner": "$SANDBOX/regress-$v"
	# shellcheck disable=SC2086 # the test names are words
	if ! (cd "$SANDBOX/src" && as_postgres "$pgxs_dir/../test/regress/pg_regress" \
		--bindir="$SANDBOX_BIN" --inputdir=. --outputdir="$SANDBOX/regress-$v" \
		--host="$(sock "$v")" --use-existing --dbname="$REGRESS_DB" $regress); then
		cat "$SANDBOX/regress-$v/regression.diffs" 2>/dev/null || true
		false
	fi
done
for v in $versions; do
	server "$v" stop
done
echo "upgrade: passed"
