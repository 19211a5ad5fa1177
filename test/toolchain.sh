#!/usr/bin/env bash
#
# Builds one toolchain of the matrix (test/matrix.sh) from its source
# archive, once, into a cache outside the repository, and prints the
# directory it is in.
#
#   bash test/toolchain.sh DIR/postgresql-17.6.tar.zst
#       PostgreSQL 17.6, configured for the tests (--enable-tap-tests,
#       --enable-cassert, no ICU, no readline, no -g), only what the tests
#       use built and installed: the server, plpgsql, libpq, the programs
#       the tests and PostgreSQL::Test::Cluster run (pg_tools below),
#       pg_regress, the isolation tester and the contrib modules the tests
#       name (test_needs in test/lib.sh; one not in contrib/ fails the
#       build); prints the installation's prefix (bin/pg_config in it)
#   bash test/toolchain.sh DIR/citus-13.2.2.tar.zst
#       Citus built against Debian's PostgreSQL 15 (no LLVM bitcode, no
#       -g), after the patches
#       DIR/citus-13.2.2-*.patch in name order, installed with
#       "make install DESTDIR=<image>"; prints the image, which
#       ORDERING_CITUS_DIR takes
#
# The cache is ORDERING_TOOLCHAIN_CACHE (default
# /var/cache/ordering-toolchains); an entry is named after the archive and
# the first 16 hex digits of a SHA-256 over everything the build depends
# on: the archive, its patches, this recipe's flags, the contrib modules,
# and for Citus the version of the PostgreSQL it is built against.  A
# changed input gives a new entry (an old one can be removed by hand).
# Each build runs in a temporary directory beside the entry and is renamed
# into place only when complete, so a build interrupted half-way is never
# taken for one; a lock on the entry makes a second run wait for the first
# instead of building twice.  Builds run at nice 10 with make -j$(nproc)
# (ORDERING_TOOLCHAIN_JOBS), as root, with their log in the entry
# (build.log) or, after a failure, printed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

archive=$(readlink -f "$1")
cache=${ORDERING_TOOLCHAIN_CACHE:-/var/cache/ordering-toolchains}
jobs=${ORDERING_TOOLCHAIN_JOBS:-$(nproc)}
name=$(basename "$archive")
name=${name%.tar*}

case "$name" in
	postgresql-*) kind=postgresql ;;
	citus-*) kind=citus ;;
	*)
		echo "toolchain: $archive is neither postgresql-VERSION nor citus-VERSION" >&2
		exit 2
		;;
esac

# The Debian packages the build needs, where test/run.sh has not installed
# them already.
# shellcheck source=test/lib.sh
PG_CONFIG='' . "$here/test/lib.sh"
# shellcheck disable=SC2046 # package names are words
ensure_packages $(toolchain_packages "$kind")

# What the build depends on besides the archive, one item a line: it goes
# into the entry's key.
# No --enable-debug: -g makes the compiler take about 40% more CPU time
# (docs/testing.md, "Timings"), and a backtrace of a failure is rare
# enough to rebuild for.
pg_configure=(--enable-tap-tests --enable-cassert --without-icu --without-readline)
# The programs of src/bin the suites run, themselves or through
# PostgreSQL::Test::Cluster (initdb, pg_ctl, psql, pg_basebackup for
# backups and pg_recvlogical, pgbench, pg_config); pg_dump and pg_restore;
# createdb and dropdb (scripts).  The others (pg_upgrade, pg_rewind,
# pg_waldump, ...) and ecpg are not built.
pg_tools="initdb pg_basebackup pg_config pg_ctl pg_dump pgbench psql scripts"
# Citus: no LLVM bitcode (PGXS compiles every file a second time for it,
# with clang, when the server has JIT; a module without it is only never
# inlined) and no -g (after PGXS's -g in the flags: the last one counts).
citus_configure=(--without-libcurl CFLAGS=-g0)
citus_make=(with_llvm=no)
patches=()
if [ "$kind" = postgresql ]; then
	# every module any test names, whichever suite runs it
	# shellcheck disable=SC2046 # file names without spaces, one a line
	modules=$(test_needs $(suite_files regress "$here") $(suite_files isolation "$here") \
		"$here"/test/t/*.pl "$here"/test/t/*.pm)
	recipe="configure ${pg_configure[*]}
programs $pg_tools
contrib $(echo "$modules" | tr '\n' ' ')"
else
	for p in "$(dirname "$archive")/$name"-*.patch; do
		[ -f "$p" ] && patches+=("$p")
	done
	recipe="configure ${citus_configure[*]}
make ${citus_make[*]}
against $("$PG_CONFIG_SYSTEM" --version)"
fi
key=$({
	sha256sum "$archive" | cut -d' ' -f1
	for p in ${patches[@]+"${patches[@]}"}; do sha256sum "$p" | cut -d' ' -f1; done
	echo "$recipe"
} | sha256sum | cut -c1-16)
entry=$cache/$name-$key

mkdir -p "$cache"
exec 9>"$entry.lock"
if ! flock -n 9; then
	echo "toolchain: $name: another run is building $entry, waiting" >&2
	flock 9
fi
if [ -f "$entry/.complete" ]; then
	echo "$entry"
	exit 0
fi

work=$(mktemp -d "$cache/.building-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
log=$work/build.log
echo "toolchain: building $name into $entry (log: $log)" >&2
start=$SECONDS

# Unpacks the archive into $work/src and runs the recipe there; the result
# goes to $work/image.
build_postgresql() {
	local m
	cd "$work/src/$name"
	for m in $modules; do
		if [ ! -d "contrib/$m" ]; then
			echo "toolchain: a test names the module \"$m\", which $name does not have in contrib/" >&2
			return 1
		fi
	done
	./configure --prefix="$entry" "${pg_configure[@]}"
	# the recursion of src/bin and src/interfaces, narrowed to what is used
	sed -i "/^\$(recurse)\$/i SUBDIRS := $pg_tools" src/bin/Makefile
	sed -i "/^\$(recurse)\$/i SUBDIRS := libpq" src/interfaces/Makefile
	make -j"$jobs" -s
	make -s install DESTDIR="$work/image"
	# "make install" leaves the isolation tester out; PGXS's
	# installcheck-isolation runs it from pgxsdir
	make -s -C src/test/isolation install DESTDIR="$work/image"
	for m in $modules; do
		make -s -C "contrib/$m" install DESTDIR="$work/image"
	done
	mv "$work/image$entry" "$work/result"
}

build_citus() {
	local p
	cd "$work/src/$name"
	for p in ${patches[@]+"${patches[@]}"}; do
		patch -p1 <"$p"
	done
	./configure "${citus_configure[@]}" PG_CONFIG="$PG_CONFIG_SYSTEM"
	make -j"$jobs" -s "${citus_make[@]}"
	make -s install "${citus_make[@]}" DESTDIR="$work/result"
}

# Not a condition of "if" or "||": there, bash ignores set -e in the
# subshell, and a failed step would go on silently.
set +e
(
	set -e
	renice -n 10 -p "$BASHPID" >/dev/null
	mkdir "$work/src"
	tar -C "$work/src" -xf "$archive"
	"build_$kind"
) >"$log" 2>&1 </dev/null
rc=$?
set -e
if [ "$rc" -ne 0 ]; then
	tail -n 60 "$log" >&2
	echo "toolchain: building $name FAILED (the log's end is above)" >&2
	exit 1
fi
# in place only when complete: an entry without .complete is never used
cp "$log" "$work/result/build.log"
{
	echo "archive $archive"
	echo "$recipe"
	echo "built in $((SECONDS - start))s on $(date -u +%FT%TZ)"
} >"$work/result/.complete"
rm -rf "$entry"
mv "$work/result" "$entry"
echo "toolchain: built $name in $((SECONDS - start))s" >&2
echo "$entry"
