#!/usr/bin/env bash
#
# The package suite of test/run.sh: the Debian package, built, checked,
# unpacked and tested the way a user of the package gets it, without
# touching the system's PostgreSQL (runs side by side must not disturb each
# other, nor the machine).
#
#   bash test/package.sh        (as root: it installs the build tools)
#
# 1. Builds postgresql-15-ordering from a copy of the tree with
#    `dpkg-buildpackage -b -us -uc` (debian/, pg_buildext), as the postgres
#    user and without ORDERING_WERROR (a packager's build); the package's
#    version must be ordering.control's.  debian/pgversions lists the
#    majors the tests cover (15 to 18); pg_buildext builds for those whose
#    server headers the machine has (Debian 12: 15 only), and says which.
# 2. Checks it with lintian: no error and no warning.
# 3. Unpacks it with `dpkg -x` into a private copy of the system's
#    PostgreSQL, from which every file of the extension was removed first,
#    and verifies the unpacked files against the package's md5sums.
# 4. Runs the regression suite (REGRESS of the Makefile) against the
#    unpacked package on a temporary instance of that copy (its binaries, so
#    its extension directory), and the README's quick start on another one.
#
# Exits non-zero on any failure and keeps its work directory for a look.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "package: must run as root: it installs the build tools" >&2
	exit 1
fi
if [ "$PG_DEBIAN" != 1 ]; then
	echo "package: skipped: the Debian package is built for Debian's PostgreSQL, not $PG_CONFIG_SYSTEM"
	exit 0
fi
ensure_packages build-essential debhelper postgresql-server-dev-all lintian \
	postgresql-$PG_MAJOR python3-psycopg

pkg=postgresql-$PG_MAJOR-ordering
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$here/ordering.control")
arch=$(dpkg --print-architecture)
bin=/usr/lib/postgresql/$PG_MAJOR/bin

work=$(mktemp -d /tmp/ordering-package.XXXXXX)
chmod 755 "$work"
mkdir "$work/ordering"
tar -C "$here" --exclude=.git --exclude='tmp_check*' --exclude=results \
	--exclude=output_iso --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	-cf - . | tar -C "$work/ordering" -xf -
chown -R postgres: "$work"
# the postgres user's commands need a working directory they may enter
cd "$work"

# On the way out: stop the server, and keep the work directory and the
# sandbox after a failure.
finish() {
	local rc=$?
	if [ -n "${SANDBOX:-}" ] && [ -f "$work/quickstart/postmaster.pid" ]; then
		as_postgres pg_ctl -D "$work/quickstart" -m immediate stop >/dev/null || true
	fi
	if [ "$rc" -eq 0 ]; then
		rm -rf "$work"
		sandbox_destroy
	else
		echo "package: FAILED, work directory kept in $work${SANDBOX:+, the unpacked package in $SANDBOX}" >&2
	fi
}
trap finish EXIT

as_pg() {
	runuser -u postgres -- "$@"
}

# 1. Build, as a packager does: no -Werror from test/run.sh.  pg_buildext
# builds for each major of debian/pgversions (those the tests cover) that
# this machine has the server of; debian/control must name exactly those
# (dh's "pg_buildext checkcontrol" fails otherwise).
listed=$(sed -n 's/^\([0-9][0-9]*\)$/\1/p' "$here/debian/pgversions" | tr '\n' ' ')
built=$(cd "$work/ordering" && pg_buildext supported-versions | tr '\n' ' ')
echo "package: debian/pgversions lists ${listed% }; built here for ${built% }" \
	"(a major needs postgresql-server-dev-MAJOR)"
case " $built " in
	*" $PG_MAJOR "*) ;;
	*)
		echo "package: PostgreSQL $PG_MAJOR, the one tested here, is not among them" >&2
		exit 1
		;;
esac
echo "package: building $pkg $version"
if ! (cd "$work/ordering" && as_pg env -u ORDERING_WERROR dpkg-buildpackage -b -us -uc) \
	>"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	exit 1
fi
deb=$work/${pkg}_${version}_$arch.deb
if [ ! -f "$deb" ]; then
	echo "package: $deb was not built (is debian/changelog at version $version?):" >&2
	ls "$work" >&2
	exit 1
fi
test "$(dpkg-deb -f "$deb" Version)" = "$version"

# 2. lintian
echo "package: lintian"
as_pg lintian --info --fail-on error,warning "$work/ordering_${version}_$arch.changes"

# 3. Unpack into a private copy of the system's PostgreSQL (not one that
# test/run.sh built: the package alone must bring the extension), with
# whatever ordering files the system's copy had removed first.
echo "package: unpacking $deb into a sandbox"
unset ORDERING_SANDBOX_BASE
sandbox_create "$here"
inst=$SANDBOX/inst
rm -f "$inst$(pg_dir --pkglibdir)/ordering.so" "$inst$(pg_dir --sharedir)"/extension/ordering[.-]*
rm -rf "$inst$(pg_dir --pkglibdir)/bitcode/ordering" "$inst$(pg_dir --pkglibdir)/bitcode/ordering.index.bc"
dpkg -x "$deb" "$inst"
dpkg -e "$deb" "$work/control"
# every file of the package, as dpkg --verify would check it installed
(cd "$inst" && md5sum --quiet -c "$work/control/md5sums")
so=$(dpkg -c "$deb" | awk '{ print substr($6, 2) }' | grep '/ordering\.so$')
cmp "$inst$so" "$work/ordering/debian/$pkg$so"
# tools/ordering-reconcile, in PostgreSQL's bindir, executable
reconcile=$(pg_dir --bindir)/ordering-reconcile
if ! dpkg -c "$deb" | awk '$1 ~ /^-..x/ { print substr($6, 2) }' | grep -qx "$reconcile"; then
	echo "package: $deb has no executable $reconcile:" >&2
	dpkg -c "$deb" >&2
	exit 1
fi
cmp "$inst$reconcile" "$here/tools/ordering-reconcile"
chown -R postgres: "$SANDBOX"

# 4. The regression suite against the unpacked package
echo "package: regression suite against the unpacked package"
regress=$(test_list regress "$work/ordering")
if ! as_pg make -C "$work/ordering" PG_CONFIG="$bin/pg_config" bindir="$SANDBOX_BIN" \
	REGRESS="$regress" installcheck-regress; then
	cat "$work/ordering/regression.diffs" 2>/dev/null || true
	exit 1
fi

# ... and the README's quick start, in psql, on a server with the library
# preloaded as the README's install commands set it up.
echo "package: the README's quick start against the unpacked package"
qs=$work/quickstart
awk '/^## Quick start/ { f = 1 } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g' \
	"$here/README.md" >"$work/quickstart.sql"
test -s "$work/quickstart.sql"
as_postgres initdb -D "$qs" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
echo "shared_preload_libraries = 'ordering'" >>"$qs/postgresql.conf"
as_postgres pg_ctl -D "$qs" -l "$work/quickstart.log" -w \
	-o "-k $work -c listen_addresses=''" start >/dev/null
qpsql() {
	as_postgres psql -X -h "$work" -d postgres -v ON_ERROR_STOP=1 "$@"
}
qpsql -qc 'CREATE EXTENSION ordering'
qpsql -f "$work/quickstart.sql" >"$work/quickstart.out"
# what the README's comments say: the early event parks, the next one
# brings both, in order, and the ledger holds each amount once
grep -E '^INSERT 0 [0-9]+$' "$work/quickstart.out" | tail -n 2 | tr '\n' ' ' |
	grep -qx 'INSERT 0 0 INSERT 0 2 ' || {
	echo "package: the quick start's deliveries did not park, then apply two:" >&2
	cat "$work/quickstart.out" >&2
	exit 1
}
ledger=$(qpsql -Atc "SELECT string_agg(seq || ':' || amount, ',' ORDER BY seq) FROM ledger")
outbox=$(qpsql -Atc "SELECT string_agg(seq || ':' || (payload->>'add'), ',' ORDER BY seq)
	FROM ordering.outbox WHERE resource_id = 'acct-9'")
if [ "$ledger" != "$outbox" ]; then
	echo "package: quick start: ledger $ledger, producer's events $outbox" >&2
	exit 1
fi
# ... and the packaged ordering-reconcile on it: the ledger has every event
echo "package: the packaged ordering-reconcile against the quick start"
dsn="host=$work dbname=postgres user=postgres"
as_postgres "$inst$reconcile" --producer "$dsn" --consumer "$dsn" --consumer-name ledger \
	--dry-run >"$work/reconcile.out"
grep -q '0 resources behind' "$work/reconcile.out" || {
	echo "package: ordering-reconcile on the quick start:" >&2
	cat "$work/reconcile.out" >&2
	exit 1
}
as_postgres pg_ctl -D "$qs" -w stop >/dev/null
echo "package: passed (ledger $ledger; ordering-reconcile installed and run)"
