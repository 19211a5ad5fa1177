#!/usr/bin/env bash
#
# The package suite of test/run.sh: the Debian package, built, checked,
# installed and tested the way a user of the package gets it.
#
#   bash test/package.sh        (as root: it installs the package)
#
# 1. Builds postgresql-15-ordering from a copy of the tree with
#    `dpkg-buildpackage -b -us -uc` (debian/, pg_buildext), as the postgres
#    user; the package's version must be ordering.control's.
# 2. Checks it with lintian: no error and no warning.
# 3. Installs it into the system's PostgreSQL and verifies the installed
#    files against the package.
# 4. Runs the regression suite (REGRESS of the Makefile) against the
#    installed package on a temporary instance (the system's binaries, so
#    the system's extension directory), and the README's quick start on
#    another one.
# 5. Removes the package again, unless it was installed before.
#
# Exits non-zero on any failure and keeps its work directory for a look.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "package: must run as root: it installs the package" >&2
	exit 1
fi
ensure_packages build-essential debhelper postgresql-server-dev-all lintian \
	postgresql-$PG_MAJOR

pkg=postgresql-$PG_MAJOR-ordering
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$here/ordering.control")
arch=$(dpkg --print-architecture)
bin=/usr/lib/postgresql/$PG_MAJOR/bin
apt_lock=(-o DPkg::Lock::Timeout=300)

work=$(mktemp -d /tmp/ordering-package.XXXXXX)
chmod 755 "$work"
mkdir "$work/ordering"
tar -C "$here" --exclude=.git --exclude='tmp_check*' --exclude=results \
	--exclude=output_iso --exclude='*.o' --exclude='*.so' --exclude='*.bc' \
	-cf - . | tar -C "$work/ordering" -xf -
chown -R postgres: "$work"
# the postgres user's commands need a working directory they may enter
cd "$work"

if dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
	installed_before=1
else
	installed_before=0
fi
installed=0

# On the way out: stop the servers, remove the package if this script
# installed it, and keep the work directory after a failure.
finish() {
	local rc=$?
	if [ -f "$work/quickstart/postmaster.pid" ]; then
		runuser -u postgres -- "$bin/pg_ctl" -D "$work/quickstart" -m immediate stop \
			>/dev/null || true
	fi
	if [ "$installed" -eq 1 ] && [ "$installed_before" -eq 0 ]; then
		apt-get "${apt_lock[@]}" remove -y -qq "$pkg" >/dev/null || true
	fi
	if [ "$rc" -eq 0 ]; then
		rm -rf "$work"
	else
		echo "package: FAILED, work directory kept in $work" >&2
	fi
}
trap finish EXIT

as_pg() {
	runuser -u postgres -- "$@"
}

# 1. Build
echo "package: building $pkg $version"
if ! (cd "$work/ordering" && as_pg dpkg-buildpackage -b -us -uc) >"$work/build.log" 2>&1; then
	tail -n 60 "$work/build.log"
	exit 1
fi
deb=$work/${pkg}_${version}_$arch.deb
if [ ! -f "$deb" ]; then
	echo "package: $deb was not built (is debian/changelog at version $version?):" >&2
	ls "$work" >&2
	exit 1
fi

# 2. lintian
echo "package: lintian"
as_pg lintian --info --fail-on error,warning "$work/ordering_${version}_$arch.changes"

# 3. Install (--reinstall: a package of the same version installed before,
# from older sources, must not stay in place of the one just built)
echo "package: installing $deb"
installed=1
DEBIAN_FRONTEND=noninteractive apt-get "${apt_lock[@]}" install -y -qq \
	--reinstall --no-install-recommends "$deb" >/dev/null
dpkg --verify "$pkg"
cmp "$(dpkg -L "$pkg" | grep '/ordering\.so$')" \
	"$work/ordering/debian/$pkg$(dpkg -L "$pkg" | grep '/ordering\.so$')"
test "$(dpkg-query -W -f='${Version}' "$pkg")" = "$version"

# 4. The regression suite against the installed package
echo "package: regression suite against the installed package"
if ! as_pg make -C "$work/ordering" PG_CONFIG="$bin/pg_config" installcheck-regress; then
	cat "$work/ordering/regression.diffs" 2>/dev/null || true
	exit 1
fi

# ... and the README's quick start, in psql, on a server with the library
# preloaded as the README's install commands set it up.
echo "package: the README's quick start against the installed package"
qs=$work/quickstart
awk '/^## Quick start/ { f = 1 } f && /^```sql/ { g = 1; next } g && /^```/ { exit } g' \
	"$here/README.md" >"$work/quickstart.sql"
test -s "$work/quickstart.sql"
as_pg "$bin/initdb" -D "$qs" -E UTF8 --locale=C.UTF-8 -A trust -U postgres >/dev/null
echo "shared_preload_libraries = 'ordering'" >>"$qs/postgresql.conf"
as_pg "$bin/pg_ctl" -D "$qs" -l "$work/quickstart.log" -w \
	-o "-k $work -c listen_addresses=''" start >/dev/null
qpsql() {
	as_pg "$bin/psql" -X -h "$work" -d postgres -v ON_ERROR_STOP=1 "$@"
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
as_pg "$bin/pg_ctl" -D "$qs" -w stop >/dev/null
echo "package: passed (ledger $ledger)"
