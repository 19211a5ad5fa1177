# Shared shell functions for the test, demo and bench commands: package
# installation and a private, postgres-owned PostgreSQL sandbox.
# Source it; it sets the PG_* variables below and defines functions.

# The PostgreSQL to build against and run: the pg_config named by the
# PG_CONFIG environment variable (any installation of 15 or later, used as
# it is), or by default Debian's PostgreSQL 15, which the scripts install
# with ensure_packages $(pg_packages).
if [ -n "${PG_CONFIG:-}" ]; then
	PG_CONFIG_SYSTEM=$PG_CONFIG
	PG_DEBIAN=0
	if [ ! -x "$PG_CONFIG_SYSTEM" ] ||
		! PG_MAJOR=$("$PG_CONFIG_SYSTEM" --version | sed -n 's/^PostgreSQL \([0-9]*\).*/\1/p') ||
		[ -z "$PG_MAJOR" ]; then
		echo "PG_CONFIG=$PG_CONFIG_SYSTEM is not a pg_config that runs" >&2
		exit 2
	fi
	if [ "$PG_MAJOR" -lt 15 ]; then
		echo "PG_CONFIG names PostgreSQL $PG_MAJOR; the extension needs 15 or later" >&2
		exit 2
	fi
else
	PG_MAJOR=15
	PG_CONFIG_SYSTEM=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config
	PG_DEBIAN=1
fi

# The Debian packages of the PostgreSQL in use, for ensure_packages: server
# and headers, and with an argument each package named
# postgresql-MAJOR-ARG (for the default only: a PG_CONFIG of your own comes
# with what it has, and nothing is installed into it).
pg_packages() {
	[ "$PG_DEBIAN" = 1 ] || return 0
	echo "postgresql-$PG_MAJOR postgresql-server-dev-$PG_MAJOR"
	local extra
	for extra in "$@"; do
		echo "postgresql-$PG_MAJOR-$extra"
	done
}

# An installation directory of the PostgreSQL in use: $1 is a pg_config
# option (--bindir, --sharedir, ...).
pg_dir() {
	"$PG_CONFIG_SYSTEM" "$1"
}

# apt-get, waiting for another apt or dpkg to finish instead of failing at
# once: DPkg::Lock::Timeout covers the dpkg lock of install and remove; the
# lists lock of "apt-get update" knows no timeout, so update is retried.
APT_LOCK_TIMEOUT=${APT_LOCK_TIMEOUT:-600}
apt_get() {
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_TIMEOUT" "$@"
}

apt_get_update() {
	local waited=0 err
	err=$(mktemp)
	until apt_get update -qq 2>"$err"; do
		if ! grep -q "Could not get lock" "$err" || [ "$waited" -ge "$APT_LOCK_TIMEOUT" ]; then
			cat "$err" >&2
			rm -f "$err"
			return 1
		fi
		[ "$waited" -eq 0 ] && echo "apt-get update: waiting for another apt to finish"
		sleep 5
		waited=$((waited + 5))
	done
	rm -f "$err"
}

# Install the Debian packages that are missing (needs root and apt-get).
ensure_packages() {
	local missing=()
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	apt_get_update
	apt_get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ---------------------------------------------------------------------------
# CPU time per part of a command, where root may make cgroups (v1 cpuacct,
# or v2): a part's processes, and the servers they start, stay in its
# group.  On a machine shared with other work the wall time says little;
# the CPU time says where the time goes.  Without cgroups it shows "-".
# The groups are made below the one the command runs in, so that what
# contains it counts them too (test/matrix.sh's runs of test/run.sh nest).
# ---------------------------------------------------------------------------

# cg_init NAME: the command's group, NAME below the one it runs in.
cg_run=
cg_init() {
	cg_run=
	[ "$(id -u)" -eq 0 ] || return 0
	if [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
		cg_run=/sys/fs/cgroup/cpuacct$(sed -n 's/^[0-9]*:[^:]*cpuacct[^:]*://p' /proc/self/cgroup)
	elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		cg_run=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
	elif [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
		cg_run=/sys/fs/cgroup/unified$(sed -n 's/^0:://p' /proc/self/cgroup)
	fi
	if [ -n "$cg_run" ]; then
		cg_run=${cg_run%/}/$1
		mkdir "$cg_run" 2>/dev/null || cg_run=
	fi
	return 0
}

# cg_join PART: the calling (sub)shell and what it starts count for PART.
cg_join() {
	[ -n "$cg_run" ] && mkdir "$cg_run/$1" 2>/dev/null &&
		echo "$BASHPID" >"$cg_run/$1/cgroup.procs" 2>/dev/null
	return 0
}

# cg_seconds PART: the CPU time PART used, as "123s", or "-".
cg_seconds() {
	local g=$cg_run/$1
	if [ -n "$cg_run" ] && [ -f "$g/cpuacct.usage" ]; then
		echo "$(($(cat "$g/cpuacct.usage") / 1000000000))s"
	elif [ -n "$cg_run" ] && [ -f "$g/cpu.stat" ]; then
		echo "$(($(awk '$1 == "usage_usec" { print $2 }' "$g/cpu.stat") / 1000000))s"
	else
		echo -
	fi
}

cg_cleanup() {
	[ -n "$cg_run" ] || return 0
	rmdir "$cg_run"/* "$cg_run" 2>/dev/null || true
}

# Run a command as the postgres user (PostgreSQL refuses to run as root).
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env PATH="$SANDBOX_BIN:$PATH" "$@"
	else
		env PATH="$SANDBOX_BIN:$PATH" "$@"
	fi
}

# Copy what a Citus installed with "make install DESTDIR=$1" put into
# this PostgreSQL's library and share directories into the sandbox's copy.
sandbox_add_citus() {
	local dir found=0
	for dir in "$(pg_dir --pkglibdir)" "$(pg_dir --sharedir)"; do
		[ -d "$1$dir" ] || continue
		cp -a "$1$dir/." "$SANDBOX/inst$dir/"
		found=1
	done
	if [ "$found" = 0 ] || [ ! -e "$SANDBOX/inst$(pg_dir --pkglibdir)/citus.so" ]; then
		echo "ORDERING_CITUS_DIR=$1 holds no citus.so for $(pg_dir --pkglibdir)" >&2
		return 1
	fi
}

# Copy the source tree ($1) and the PostgreSQL installation into a fresh
# directory owned by postgres.  The server finds its share and lib
# directories relative to its own binary, so the copy serves the extension
# installed into it and leaves the system's installation alone.
#
# test/run.sh builds one sandbox and names it in ORDERING_SANDBOX_BASE: then
# this clones that one instead (its source tree with the objects built, and
# its PostgreSQL copy with the extension installed), so that each suite has
# a directory of its own without building again; sandbox_build then finds
# nothing to compile.
sandbox_create() {
	local src=$1
	SANDBOX=$(mktemp -d /tmp/ordering.XXXXXX)
	chmod 755 "$SANDBOX"
	if [ -n "${ORDERING_SANDBOX_BASE:-}" ] && [ -f "$ORDERING_SANDBOX_BASE/built" ]; then
		cp -a "$ORDERING_SANDBOX_BASE/src" "$ORDERING_SANDBOX_BASE/inst" "$SANDBOX/"
	else
		mkdir -p "$SANDBOX/src" "$SANDBOX/inst"
		tar -C "$src" --exclude=.git --exclude='tmp_check*' --exclude=results \
			--exclude=output_iso --exclude='*.o' --exclude='*.so' \
			--exclude='*.bc' -cf - . | tar -C "$SANDBOX/src" -xf -
		# the server finds the other two relative to bindir: keep their places
		local dir
		for dir in "$(pg_dir --bindir)" "$(pg_dir --pkglibdir)" "$(pg_dir --sharedir)"; do
			mkdir -p "$SANDBOX/inst$(dirname "$dir")"
			cp -a "$dir" "$SANDBOX/inst$dir"
		done
	fi
	# ORDERING_HIDE_CITUS=1: the copy without Citus, as on CI (Citus is
	# not in Debian), so that a machine with Citus installed runs what
	# CI runs (TAP 040 and 041 skip, saying why)
	if [ "${ORDERING_HIDE_CITUS:-0}" = 1 ]; then
		rm -rf "$SANDBOX/inst$(pg_dir --pkglibdir)"/citus* \
			"$SANDBOX/inst$(pg_dir --sharedir)"/extension/citus*
	fi
	# ORDERING_CITUS_DIR=DIR: a Citus built by hand and installed with
	# "make install DESTDIR=DIR", added to the copy (never to the
	# system's installation), also to a clone of a sandbox without it
	# (test/matrix.sh's Citus tests start from test/run.sh's build): TAP
	# 040 and 041 then run
	if [ -n "${ORDERING_CITUS_DIR:-}" ]; then
		sandbox_add_citus "$ORDERING_CITUS_DIR"
	fi
	SANDBOX_BIN=$SANDBOX/inst$(pg_dir --bindir)
	if [ "$(id -u)" -eq 0 ]; then
		chown -R postgres: "$SANDBOX"
	fi
	export SANDBOX SANDBOX_BIN
}

sandbox_destroy() {
	[ -n "${SANDBOX:-}" ] && [ -d "$SANDBOX" ] && rm -rf "$SANDBOX"
	return 0
}

# Build with the system's headers, install into the sandbox's copy.
# ORDERING_WERROR=-Werror (test/run.sh sets it) turns warnings into errors;
# the Makefile alone does not, so that packagers' newer compilers build it.
sandbox_build() {
	as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		ORDERING_WERROR="${ORDERING_WERROR:-}"
	as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		DESTDIR="$SANDBOX/inst" install
}

# Run a make target of the source copy against the sandbox's binaries.  The
# suites' test lists come from test_list (tests that need a contrib module
# this PostgreSQL lacks are left out there, saying so).
sandbox_make() {
	as_postgres make -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		bindir="$SANDBOX_BIN" ORDERING_WERROR="${ORDERING_WERROR:-}" "$@"
}

# ---------------------------------------------------------------------------
# Contrib modules: some tests need a module that Debian's server package
# ships but a PostgreSQL built from source has only after "make install" in
# its contrib/ (amcheck, dblink, test_decoding, ...).  The tests say what
# they need (CREATE EXTENSION, a logical decoding plugin by name); a test
# whose module this PostgreSQL lacks is left out of its suite, saying why,
# or with ORDERING_MISSING_CONTRIB=fail the run stops before it starts.
# ---------------------------------------------------------------------------

# The modules the given test files need, one a line: the extensions they
# create (not ordering itself, nor citus, whose tests skip themselves where
# it is missing) and the logical decoding plugins they name; comment lines
# (--, #) are not read: "CREATE EXTENSION runs ..." names no module.
test_needs() {
	cat "$@" 2>/dev/null | grep -vE '^[[:space:]]*(--|#)' |
		grep -oiE "create extension +(if not exists +)?\"?[a-z_0-9]+|'test_decoding'" |
		sed -E "s/.* \"?([a-zA-Z_0-9]+)$/\1/; s/'//g" | tr 'A-Z' 'a-z' |
		grep -vxE 'ordering|citus' | sort -u
	return 0
}

# Whether the PostgreSQL in use has a module: its extension control file,
# or its library (output plugins are libraries only).
module_available() {
	[ -f "$(pg_dir --sharedir)/extension/$1.control" ] ||
		[ -f "$(pg_dir --pkglibdir)/$1.so" ]
}

# The tests of a suite (regress, isolation, tap) as the Makefile in $2 lists
# them (REGRESS, ISOLATION, PROVE_TESTS), with their files.
suite_tests() {
	local suite=$1 dir=$2 var
	case "$suite" in
		regress) var=REGRESS ;;
		isolation) var=ISOLATION ;;
		tap) var=PROVE_TESTS ;;
	esac
	# shellcheck disable=SC2016 # make expands it
	make -s --no-print-directory -C "$dir" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		--eval='print-tests: ; @echo $('"$var"')' print-tests
}

# suite_files SUITE DIR: the files of the suite's tests, one a line.
suite_files() {
	local t
	for t in $(cd "$2" && eval "echo $(suite_tests "$1" "$2")"); do
		test_file "$1" "$t" "$2"
	done
}

test_file() {
	case "$1" in
		regress) echo "$3/sql/$2.sql" ;;
		isolation) echo "$3/test/specs/$2.spec" ;;
		tap) echo "$3/$2" ;;
	esac
}

# test_list SUITE DIR: the suite's tests that this PostgreSQL can run, on
# one line; each test left out is named on stderr with the module it needs.
test_list() {
	local suite=$1 dir=$2 t m tests=() missing
	for t in $(cd "$dir" && eval "echo $(suite_tests "$suite" "$dir")"); do
		missing=
		for m in $(test_needs "$(test_file "$suite" "$t" "$dir")"); do
			module_available "$m" || missing="$missing $m"
		done
		if [ -n "$missing" ]; then
			echo "$suite: skipped $t: needs${missing}, which this PostgreSQL ($PG_CONFIG_SYSTEM) lacks" >&2
		else
			tests+=("$t")
		fi
	done
	echo "${tests[*]}"
}

# Says up front which contrib modules the suites need and which of them this
# PostgreSQL lacks; with ORDERING_MISSING_CONTRIB=fail, a missing one fails.
contrib_report() {
	local dir=$1 suite t m line missing=() base=()
	declare -A used=()
	shift
	# valgrind and upgrade run the regression and isolation tests too
	for suite in "$@"; do
		case "$suite" in
			regress|valgrind|upgrade) base+=(regress) ;;
		esac
		case "$suite" in
			isolation|valgrind) base+=(isolation) ;;
			tap) base+=(tap) ;;
		esac
	done
	for suite in $(printf '%s\n' "${base[@]}" | sort -u); do
		for t in $(cd "$dir" && eval "echo $(suite_tests "$suite" "$dir")"); do
			for m in $(test_needs "$(test_file "$suite" "$t" "$dir")"); do
				used[$m]="${used[$m]:-}${used[$m]:+, }$suite $(basename "$t" .pl)"
			done
		done
	done
	[ ${#used[@]} -eq 0 ] && return 0
	for m in $(printf '%s\n' "${!used[@]}" | sort); do
		if module_available "$m"; then
			line="have"
		else
			line="MISSING"
			missing+=("$m")
		fi
		echo "contrib module $m ($line): ${used[$m]}"
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "this PostgreSQL lacks ${missing[*]}: install them into it (make -C contrib/NAME install" \
		"in its source tree, as the user who built it), or run without those tests"
	if [ "${ORDERING_MISSING_CONTRIB:-skip}" = fail ]; then
		echo "ORDERING_MISSING_CONTRIB=fail: stopping before any suite runs" >&2
		return 1
	fi
	echo "the tests that need them are skipped (ORDERING_MISSING_CONTRIB=fail stops here instead)"
}

sandbox_show_diffs() {
	local f
	for f in "$SANDBOX"/src/regression.diffs "$SANDBOX"/src/output_iso/regression.diffs; do
		[ -s "$f" ] && { echo "=== $f"; cat "$f"; }
	done
	for f in "$SANDBOX"/src/tmp_check/log/regress_log_*; do
		[ -s "$f" ] && grep -q "not ok" "$f" && { echo "=== $f"; tail -n 60 "$f"; }
	done
	return 0
}

# ---------------------------------------------------------------------------
# The matrix's toolchains (test/matrix.sh): source archives of other
# PostgreSQL majors and of Citus, which a machine may have beside the
# checkout.  A newcomer's clone has none, and the matrix is skipped, saying
# why.
# ---------------------------------------------------------------------------

# toolchain_packages postgresql|citus: the Debian packages that building
# such a toolchain needs (listed in the toolchains' README).  test/run.sh
# installs them with everything else up front, in one apt-get, when it runs
# the matrix.
toolchain_packages() {
	case "$1" in
		postgresql) echo "make gcc libc6-dev bison flex perl zlib1g-dev zstd libipc-run-perl" ;;
		citus)
			echo "make gcc libc6-dev autoconf flex bison zstd patch" \
				"postgresql-15 postgresql-server-dev-15 libcurl4-openssl-dev" \
				"liblz4-dev libzstd-dev libkrb5-dev libssl-dev libselinux1-dev" \
				"libxslt1-dev libpam0g-dev"
			;;
	esac
}

# toolchains_find CHECKOUT: sets TOOLCHAINS to the directory of the
# archives, or to nothing and TOOLCHAINS_WHY to the reason.  The directory
# is ORDERING_TOOLCHAINS when set (empty: no matrix), else ../shared/toolchains
# beside the checkout, or beside the main checkout of which it is a git
# worktree.
toolchains_find() {
	local checkout=$1 dir common candidates=()
	TOOLCHAINS=
	TOOLCHAINS_WHY=
	if [ -n "${ORDERING_TOOLCHAINS+set}" ]; then
		if [ -z "$ORDERING_TOOLCHAINS" ]; then
			TOOLCHAINS_WHY="ORDERING_TOOLCHAINS is empty"
			return 0
		fi
		candidates=("$ORDERING_TOOLCHAINS")
	else
		candidates=("$checkout/../shared/toolchains")
		if command -v git >/dev/null &&
			common=$(git -C "$checkout" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
			candidates+=("$(dirname "$common")/../shared/toolchains")
		fi
	fi
	for dir in "${candidates[@]}"; do
		[ -d "$dir" ] || continue
		dir=$(cd "$dir" && pwd)
		if [ -z "$(toolchain_archives "$dir")" ]; then
			TOOLCHAINS_WHY="$dir holds no postgresql-*.tar.* or citus-*.tar.*"
			continue
		fi
		TOOLCHAINS=$dir
		return 0
	done
	[ -n "$TOOLCHAINS_WHY" ] ||
		TOOLCHAINS_WHY="no toolchains: $(realpath -m "${candidates[0]}") does not exist (ORDERING_TOOLCHAINS=DIR names them)"
	return 0
}

# The archives of a toolchains directory, one a line, in the order the
# matrix builds them: Citus first (the quickest to build, and its tests
# are long), then each PostgreSQL, the newest (with the longest tests) first.
toolchain_archives() {
	(
		cd "$1" || exit 0
		ls -1 citus-*.tar.* 2>/dev/null | sort -V
		ls -1 postgresql-*.tar.* 2>/dev/null | sort -rV
	) | sed "s|^|$1/|"
}

# ---------------------------------------------------------------------------
# Released versions, built from the git history: the upgrade suite and the
# TAP test of a Citus cluster updated from 1.2 install them.
# ---------------------------------------------------------------------------

# The commit of release $1.
commit_of() {
	case "$1" in
		1.0) echo 01fa343 ;;
		1.1) echo 364b7e8 ;;
		1.2) echo b268888 ;;
	esac
}

# Whether the git history of the source tree $1 has commit $2.
release_in_history() {
	git -c safe.directory="$1" -C "$1" cat-file -e "$2^{commit}" 2>/dev/null
}

# The directory holding release $2's files as "make install DESTDIR=..."
# puts them, built from commit $3 of the source tree $1 (against
# $PG_CONFIG_SYSTEM) in the sandbox.  A release's files depend only on its
# commit, the PostgreSQL it is built against and the compiler: they are
# kept in ORDERING_UPGRADE_CACHE (default /var/cache/ordering-upgrade,
# where it can be made; empty: none), in an entry named after a SHA-256
# over these, renamed into place only when complete, and taken from there
# on the next run instead of built again.
release_files() {
	local src=$1 v=$2 commit=$3 cache=${ORDERING_UPGRADE_CACHE-/var/cache/ordering-upgrade}
	local key entry owner
	key=$( (echo "$commit ${ORDERING_WERROR:-}"; "$PG_CONFIG_SYSTEM" --version --configure --cflags;
		gcc --version) | sha256sum | cut -c1-16)
	entry=$cache/ordering-$v-$key
	if [ -n "$cache" ] && [ -d "$entry" ]; then
		echo "release $v from the cache ($entry)" >&2
		echo "$entry"
		return 0
	fi
	owner=$(stat -c %U "$SANDBOX")
	mkdir "$SANDBOX/v$v" "$SANDBOX/v$v.files"
	git -c safe.directory="$src" -C "$src" archive "$commit" | tar -C "$SANDBOX/v$v" -xf -
	chown -R "$owner": "$SANDBOX/v$v" "$SANDBOX/v$v.files"
	# without LLVM bitcode (half the build)
	as_postgres make -s -C "$SANDBOX/v$v" PG_CONFIG="$PG_CONFIG_SYSTEM" with_llvm=no >&2
	as_postgres make -s -C "$SANDBOX/v$v" PG_CONFIG="$PG_CONFIG_SYSTEM" with_llvm=no \
		DESTDIR="$SANDBOX/v$v.files" install >&2
	if [ -n "$cache" ] && mkdir -p "$cache" 2>/dev/null; then
		local tmp
		tmp=$(mktemp -d "$entry.XXXXXX")
		cp -a "$SANDBOX/v$v.files/." "$tmp/"
		chmod 755 "$tmp"
		# a run side by side may have put the same entry in place first
		mv -T "$tmp" "$entry" 2>/dev/null || rm -rf "$tmp"
	fi
	echo "$SANDBOX/v$v.files"
}
