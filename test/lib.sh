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

# Install the Debian packages that are missing (needs root and apt-get).
ensure_packages() {
	local missing=()
	for pkg in "$@"; do
		dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
			grep -q "install ok installed" || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "installing: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Run a command as the postgres user (PostgreSQL refuses to run as root).
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- env PATH="$SANDBOX_BIN:$PATH" "$@"
	else
		env PATH="$SANDBOX_BIN:$PATH" "$@"
	fi
}

# Copy the source tree ($1) and the PostgreSQL installation into a fresh
# directory owned by postgres.  The server finds its share and lib
# directories relative to its own binary, so the copy serves the extension
# installed into it and leaves the system's installation alone.
sandbox_create() {
	local src=$1
	SANDBOX=$(mktemp -d /tmp/ordering.XXXXXX)
	chmod 755 "$SANDBOX"
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
sandbox_build() {
	as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM"
	as_postgres make -s -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		DESTDIR="$SANDBOX/inst" install
}

# Run a make target of the source copy against the sandbox's binaries.
sandbox_make() {
	as_postgres make -C "$SANDBOX/src" PG_CONFIG="$PG_CONFIG_SYSTEM" \
		bindir="$SANDBOX_BIN" "$@"
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
