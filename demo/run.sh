#!/usr/bin/env bash
#
# The demo: the scenario of "Handling Out-of-Order Events with Sequence
# Numbers", broken by the transport and fixed by the extension.
#
#   bash demo/run.sh                       in-process transport, throwaway cluster
#   bash demo/run.sh --broker              the same over a private RabbitMQ
#   bash demo/run.sh --broker amqp://127.0.0.1:5672    over your RabbitMQ
#   bash demo/run.sh --producer-dsn ... --consumer-dsn ...   your databases
#
# As root on a fresh Debian 12 machine: installs what it needs with apt-get,
# builds the extension into a private copy of PostgreSQL (Debian's 15, or
# the installation the PG_CONFIG environment variable names; test/lib.sh),
# starts a throwaway server as postgres on a unix socket in that sandbox
# (library preloaded, gap sweeper on the consumer database with a 1 s
# deadline), runs demo/ordering_demo, draws the parked-events chart with
# gnuplot, and stops and removes everything at the end.  Exits non-zero if
# a verification check fails.  See --help.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"

usage() {
	cat <<EOF
Usage: bash demo/run.sh [OPTION]... [DEMO OPTION]...

  --broker [amqp://HOST:PORT]  use RabbitMQ; without a URL, install and start
                               a private one on 127.0.0.1 (stopped at the end)
  --dsn CONNINFO               run against an existing database (producer and
  --producer-dsn CONNINFO      consumer in one), or two; they need the
  --consumer-dsn CONNINFO      extension installed, the library preloaded and
                               the consumer database in ordering.sweep_databases
  --out DIR                    where the chart, samples and report go
                               (default: demo/out)
  --keep                       keep the sandbox (server stopped) for a look
  -h, --help                   this text, and the demo program's options

Every other option goes to the demo program (demo/options.c):
EOF
}

broker=
start_broker=0
external_db=0
out=$here/demo/out
keep=0
prog_args=()
while [ $# -gt 0 ]; do
	case "$1" in
		-h | --help) help=1 ;;
		--broker)
			if [ $# -gt 1 ] && [[ "$2" == amqp://* ]]; then
				broker=$2
				shift
			else
				start_broker=1
			fi
			;;
		--broker=*) broker=${1#--broker=} ;;
		--out)
			[ $# -gt 1 ] || { echo "demo/run.sh: --out needs a directory" >&2; exit 2; }
			out=$2
			shift
			;;
		--out=*) out=${1#--out=} ;;
		--keep) keep=1 ;;
		--dsn | --producer-dsn | --consumer-dsn)
			[ $# -gt 1 ] || { echo "demo/run.sh: $1 needs a connection string" >&2; exit 2; }
			external_db=1
			prog_args+=("$1" "$2")
			shift
			;;
		--dsn=* | --producer-dsn=* | --consumer-dsn=*)
			external_db=1
			prog_args+=("$1")
			;;
		*) prog_args+=("$1") ;;
	esac
	shift
done

ensure_packages $(pg_packages) libpq-dev \
	librabbitmq-dev gnuplot-nox make gcc libc6-dev

# The program first: it checks the options before anything is started.
bindir=$(mktemp -d /tmp/ordering-demo-bin.XXXXXX)
cleanup_bin() { rm -rf "$bindir"; }
trap cleanup_bin EXIT
gcc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -pthread \
	-I"$(pg_config --includedir)" -o "$bindir/ordering_demo" \
	"$here"/demo/*.c -lpq -lrabbitmq
chmod 755 "$bindir"
if [ "${help:-0}" = 1 ]; then
	usage
	echo
	"$bindir/ordering_demo" --help
	exit 0
fi
"$bindir/ordering_demo" --check-options "${prog_args[@]}"
if [ -n "$broker" ]; then
	prog_args+=(--broker "$broker")
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)

# ---------------------------------------------------------------------------
# A private RabbitMQ on loopback: its own node name, ports, data and logs.
# ---------------------------------------------------------------------------
RMQ_DIR=
rmq_env() {
	env HOME="$RMQ_DIR" \
		RABBITMQ_NODENAME="ordering_demo_$$@localhost" \
		RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
		RABBITMQ_NODE_PORT="$RMQ_PORT" \
		RABBITMQ_DIST_PORT="$((RMQ_PORT + 10000))" \
		ERL_EPMD_PORT="$RMQ_EPMD_PORT" \
		ERL_EPMD_ADDRESS=127.0.0.1 \
		RABBITMQ_MNESIA_BASE="$RMQ_DIR/mnesia" \
		RABBITMQ_LOG_BASE="$RMQ_DIR/log" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$RMQ_DIR/enabled_plugins" \
		RABBITMQ_PID_FILE="$RMQ_DIR/pid" \
		RABBITMQ_CONFIG_FILE="$RMQ_DIR/rabbitmq" \
		RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}" \
		"$@"
}

# A TCP port on 127.0.0.1 that nothing listens on (from $1 upwards).
free_port() {
	local p=$1
	while (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; do
		p=$((p + 1))
	done
	echo "$p"
}

# Whether Debian's system-wide RabbitMQ service is running.
system_broker_running() {
	if [ -d /run/systemd/system ]; then
		systemctl is-active --quiet rabbitmq-server
	else
		[ -s /run/rabbitmq/pid ] && kill -0 "$(cat /run/rabbitmq/pid)" 2>/dev/null
	fi
}

broker_start() {
	if ! dpkg-query -W -f='${Status}' rabbitmq-server 2>/dev/null |
		grep -q "install ok installed"; then
		# Debian's package starts a system-wide broker on install where
		# services may start; the demo wants only its private one.
		local policy=/usr/sbin/policy-rc.d added_policy=0
		if [ ! -e "$policy" ]; then
			printf '#!/bin/sh\nexit 101\n' >"$policy"
			chmod 755 "$policy"
			added_policy=1
		fi
		if ! ensure_packages rabbitmq-server; then
			[ "$added_policy" = 1 ] && rm -f "$policy"
			return 1
		fi
		[ "$added_policy" = 1 ] && rm -f "$policy"
		# an existing policy may have let the install start the system
		# broker: it was not running before (not installed), so stop it
		# (asked without rabbitmqctl, which would start an epmd of its own)
		if system_broker_running; then
			echo "stopping the system RabbitMQ that the package install started"
			service rabbitmq-server stop >/dev/null 2>&1 || true
		fi
	fi
	RMQ_DIR=$(mktemp -d /tmp/ordering-rmq.XXXXXX)
	echo "[]." >"$RMQ_DIR/enabled_plugins"
	chown -R rabbitmq: "$RMQ_DIR"
	chmod 700 "$RMQ_DIR"
	RMQ_PORT=$(free_port $((25672 + RANDOM % 1000)))
	RMQ_EPMD_PORT=$(free_port $((24369 + RANDOM % 500)))
	echo "starting a private RabbitMQ on 127.0.0.1:$RMQ_PORT"
	rmq_env runuser -u rabbitmq -- /usr/lib/rabbitmq/bin/rabbitmq-server \
		>"$RMQ_DIR/server.out" 2>&1 &
	if ! rmq_env runuser -u rabbitmq -- timeout 600 \
		/usr/lib/rabbitmq/bin/rabbitmqctl wait --timeout 600 "$RMQ_DIR/pid" \
		>/dev/null 2>&1; then
		echo "demo/run.sh: RabbitMQ did not start; its log:" >&2
		tail -n 30 "$RMQ_DIR/server.out" >&2 || true
		return 1
	fi
	broker="amqp://guest:guest@127.0.0.1:$RMQ_PORT"
}

broker_stop() {
	[ -n "$RMQ_DIR" ] && [ -d "$RMQ_DIR" ] || return 0
	rmq_env runuser -u rabbitmq -- timeout 60 \
		/usr/lib/rabbitmq/bin/rabbitmqctl stop "$RMQ_DIR/pid" >/dev/null 2>&1 || {
		if [ -s "$RMQ_DIR/pid" ]; then
			kill "$(cat "$RMQ_DIR/pid")" 2>/dev/null || true
		fi
	}
	# the broker started its own epmd on a private port: stop that one
	rmq_env runuser -u rabbitmq -- epmd -kill >/dev/null 2>&1 || true
	rm -rf "$RMQ_DIR"
}

# ---------------------------------------------------------------------------
# A throwaway PostgreSQL: a producer and a consumer database.
# ---------------------------------------------------------------------------
server_started=0
cleanup() {
	set +e
	if [ "$server_started" = 1 ]; then
		as_postgres pg_ctl -D "$SANDBOX/data" -m fast -w stop >/dev/null
	fi
	broker_stop
	if [ "$keep" = 1 ] && [ -n "${SANDBOX:-}" ]; then
		echo "sandbox kept in $SANDBOX"
	else
		sandbox_destroy
	fi
	cleanup_bin
}
trap cleanup EXIT

if [ "$start_broker" = 1 ]; then
	broker_start
	prog_args+=(--broker "$broker")
fi

if [ "$external_db" = 0 ]; then
	sandbox_create "$here"
	echo "building the extension in $SANDBOX"
	sandbox_build >/dev/null
	as_postgres initdb -D "$SANDBOX/data" -A trust -U postgres >/dev/null
	cat >>"$SANDBOX/data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$SANDBOX'
port = 5432
max_connections = 100
shared_preload_libraries = 'ordering'
# a throwaway cluster: durability is not what the demo is about
fsync = off
synchronous_commit = off
# the gap sweeper: a short deadline, so lost events are asked for quickly
ordering.sweep_interval = 1s
ordering.gap_deadline = 1s
EOF
	as_postgres pg_ctl -D "$SANDBOX/data" -l "$SANDBOX/server.log" -w start >/dev/null
	server_started=1
	psql_sb() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -h "$SANDBOX" -U postgres "$@"; }
	psql_sb -d postgres -c "CREATE DATABASE demo_producer" -c "CREATE DATABASE demo_consumer"
	psql_sb -d demo_producer -c "CREATE EXTENSION ordering"
	psql_sb -d demo_consumer -c "CREATE EXTENSION ordering"
	# the sweeper starts with the server, so name the database and restart
	echo "ordering.sweep_databases = 'demo_consumer'" >>"$SANDBOX/data/postgresql.conf"
	as_postgres pg_ctl -D "$SANDBOX/data" -l "$SANDBOX/server.log" -m fast -w restart >/dev/null
	prog_args=(--producer-dsn "host=$SANDBOX user=postgres dbname=demo_producer"
		--consumer-dsn "host=$SANDBOX user=postgres dbname=demo_consumer"
		"${prog_args[@]}")
fi

status=0
"$bindir/ordering_demo" --samples "$out/samples.dat" "${prog_args[@]}" |
	tee "$out/report.txt" || status=$?

if [ -s "$out/samples.dat" ]; then
	for ext in svg png; do
		gnuplot -e "datafile='$out/samples.dat'; outfile='$out/parked.$ext'" \
			"$here/demo/parked.gp"
	done
	echo "chart: $out/parked.svg (and .png)"
fi
if [ "$status" -ne 0 ] && [ "$external_db" = 0 ]; then
	echo "--- server log (last lines) ---" >&2
	tail -n 20 "$SANDBOX/server.log" >&2 || true
fi
exit "$status"
