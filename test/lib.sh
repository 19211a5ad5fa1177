# Shared shell functions for the test, demo and bench commands: package
# installation and a private, postgres-owned PostgreSQL sandbox.
# Source it; it defines functions only.

PG_MAJOR=15
PG_CONFIG_SYSTEM=/usr/lib/postgresql/$PG_MAJOR/bin/pg_config

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
	mkdir -p "$SANDBOX/src" "$SANDBOX/inst/usr/lib/postgresql" \
		"$SANDBOX/inst/usr/share/postgresql"
	tar -C "$src" --exclude=.git --exclude='tmp_check*' --exclude=results \
		--exclude=output_iso --exclude='*.o' --exclude='*.so' \
		--exclude='*.bc' -cf - . | tar -C "$SANDBOX/src" -xf -
	cp -a "/usr/lib/postgresql/$PG_MAJOR" "$SANDBOX/inst/usr/lib/postgresql/"
	cp -a "/usr/share/postgresql/$PG_MAJOR" "$SANDBOX/inst/usr/share/postgresql/"
	SANDBOX_BIN=$SANDBOX/inst/usr/lib/postgresql/$PG_MAJOR/bin
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
