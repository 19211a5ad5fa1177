#!/usr/bin/env bash
#
# Monitoring, end to end: the rules and the dashboard of monitoring/ against
# a real Prometheus.
#
#   bash test/monitoring.sh [--png FILE]
#
# 1. promtool check rules and promtool test rules (monitoring/rules_test.yml);
# 2. a sandbox server (library preloaded, its gap sweeper on) runs a small
#    shuffled workload for ORDERING_MONITORING_SECONDS (default 75): producers
#    emitting to ordering.outbox, some asserting a wrong expected_seq, one
#    stream dominated by one resource, a relay that shuffles, duplicates and
#    loses 1% of the events on their way to a state consumer (billing,
#    apply_if_newer) and a step consumer (ledger, deliver), and now and then
#    a skip_gap().  Set up by hand: an hour-old gap, a dead letter, and an
#    outbox row the relay never publishes (an hour old), so that every alert
#    condition holds;
# 3. Debian's prometheus-postgres-exporter (monitoring/queries.yaml) and
#    Debian's prometheus (monitoring/rules.yml, scrape and evaluation every
#    second) on loopback ports;
# 4. then asks the Prometheus HTTP API for every expression of every panel of
#    monitoring/dashboard.json and of every rule, and fails unless each
#    returns data and every rule evaluates without error; promtool check
#    metrics lints ordering.metrics() and what the exporter serves.
# With --png, draws the key series of the run from Prometheus (query_range)
# with monitoring/chart.gp.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$here/test/lib.sh"

png=
while [ $# -gt 0 ]; do
	case "$1" in
		--png) png=$(realpath -m "$2"); shift 2 ;;
		-h|--help) sed -n '3,27p' "$0"; exit 0 ;;
		*) echo "unknown argument: $1" >&2; exit 2 ;;
	esac
done
seconds=${ORDERING_MONITORING_SECONDS:-75}

ensure_packages $(pg_packages) make gcc libc6-dev \
	prometheus prometheus-postgres-exporter gnuplot-nox jq yq curl

echo "== promtool"
promtool check rules "$here/monitoring/rules.yml"
promtool test rules "$here/monitoring/rules_test.yml"

pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ -n "${SANDBOX:-}" ] && [ -d "$SANDBOX/data" ] &&
		as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1
	sandbox_destroy
}
sandbox_create "$here"
trap cleanup EXIT
sandbox_build

free_port() {
	perl -MIO::Socket::INET -e \
		'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1", LocalPort => 0)->sockport'
}
pgport=$(free_port)
export PGHOST=$SANDBOX PGPORT=$pgport PGUSER=postgres PGDATABASE=shop
sql() { as_postgres psql -XAtq -v ON_ERROR_STOP=1 "$@"; }

echo "== server"
as_postgres initdb -D "$SANDBOX/data" -A trust -U postgres >/dev/null
cat >>"$SANDBOX/data/postgresql.conf" <<CONF
port = $pgport
listen_addresses = ''
unix_socket_directories = '$SANDBOX'
fsync = off
shared_preload_libraries = 'ordering'
ordering.sweep_databases = 'shop'
ordering.sweep_interval = '1s'
ordering.gap_deadline = '3s'
CONF
as_postgres pg_ctl -D "$SANDBOX/data" -l "$SANDBOX/server.log" -w start >/dev/null
sql -d postgres -c "CREATE DATABASE shop"
sql -o /dev/null <<'SQL'
CREATE EXTENSION ordering;
SELECT setseed(0.16);
-- what the workload cannot produce by itself in a minute: an hour-old gap,
-- a dead letter, and a row the relay cannot publish, written an hour ago
INSERT INTO ordering.parked (consumer, resource_id, seq, payload, parked_at)
VALUES ('ledger', 'old-gap', 5, '{}', now() - interval '1 hour');
INSERT INTO ordering.dead_letter_events (consumer, resource_id, seq, payload, message)
VALUES ('ledger', 'poison', 1, '{}', 'cannot be applied');
SELECT ordering.emit('stuck', 'held', '{}');
UPDATE ordering.outbox SET created_at = now() - interval '1 hour' WHERE event_type = 'held';

CREATE PROCEDURE e2e_workload(seconds integer) LANGUAGE plpgsql AS $$
DECLARE
    stop timestamptz := clock_timestamp() + seconds * interval '1 second';
    i integer := 0;
    e record;
    r text;
    ids bigint[];
BEGIN
    WHILE clock_timestamp() < stop LOOP
        i := i + 1;
        -- producers: 20 events over 200 resources; a stream with one hot key
        PERFORM ordering.emit('acct-' || (random() * 199)::int, 'Changed',
                              jsonb_build_object('n', i))
           FROM generate_series(1, 20);
        PERFORM ordering.next_sequence('orders',
                    CASE WHEN random() < 0.8 THEN 'hot-1' ELSE 'acct-' || (random() * 199)::int END)
           FROM generate_series(1, 10);
        -- optimistic producers that lost the race: three refused numbers
        FOR k IN 1..3 LOOP
            BEGIN
                PERFORM ordering.emit('acct-7', 'Changed', '{}', expected_seq => 1);
            EXCEPTION WHEN serialization_failure THEN
                NULL;
            END;
        END LOOP;
        -- a relay: shuffles, duplicates 5%, loses 1%; cannot publish "held"
        ids := '{}';
        FOR e IN SELECT * FROM ordering.claim_unpublished(200) c ORDER BY random() LOOP
            CONTINUE WHEN e.event_type = 'held';
            ids := ids || e.id;
            CONTINUE WHEN random() < 0.01;
            PERFORM ordering.apply_if_newer('billing', e.resource_id, e.seq);
            PERFORM count(*) FROM ordering.deliver('ledger', e.resource_id, e.seq, e.payload);
            IF random() < 0.05 THEN
                PERFORM count(*) FROM ordering.deliver('ledger', e.resource_id, e.seq, e.payload);
            END IF;
            -- late redeliveries of older events: stale for the state consumer
            IF random() < 0.4 AND e.seq > 1 THEN
                PERFORM ordering.apply_if_newer('billing', e.resource_id, e.seq - 1);
            END IF;
        END LOOP;
        PERFORM ordering.mark_published(ids);
        -- an operator gives up on a gap now and then
        IF i % 40 = 0 THEN
            SELECT p.resource_id INTO r FROM ordering.parked p
             WHERE p.consumer = 'ledger' AND p.resource_id LIKE 'acct-%' LIMIT 1;
            IF r IS NOT NULL THEN
                PERFORM count(*) FROM ordering.skip_gap('ledger', r);
            END IF;
        END IF;
        COMMIT;
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
SQL

echo "== exporter and prometheus"
exporter_port=$(free_port)
DATA_SOURCE_NAME="host=$SANDBOX port=$pgport dbname=shop user=postgres sslmode=disable" \
	prometheus-postgres-exporter --web.listen-address="127.0.0.1:$exporter_port" \
	--extend.query-path="$here/monitoring/queries.yaml" --disable-default-metrics \
	--disable-settings-metrics --no-collector.database --no-collector.bgwriter \
	>"$SANDBOX/exporter.log" 2>&1 &
pids+=($!)
prom_port=$(free_port)
mkdir -p "$SANDBOX/prometheus"
cat >"$SANDBOX/prometheus/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $here/monitoring/rules.yml
scrape_configs:
  - job_name: ordering
    static_configs:
      - targets: ['127.0.0.1:$exporter_port']
YML
prometheus --config.file="$SANDBOX/prometheus/prometheus.yml" \
	--storage.tsdb.path="$SANDBOX/prometheus/data" \
	--web.listen-address="127.0.0.1:$prom_port" >"$SANDBOX/prometheus.log" 2>&1 &
pids+=($!)
api=http://127.0.0.1:$prom_port/api/v1
for _ in $(seq 1 60); do
	curl -sf "$api/query?query=up" >/dev/null 2>&1 && break
	sleep 1
done

echo "== workload: $seconds s"
start=$(date +%s)
sql -c "CALL e2e_workload($seconds)"
sleep 5
end=$(date +%s)
sql -c "SELECT consumer, events_consumed, events_stale, events_parked, parked_current,
                events_skipped, dead_letters_current, oldest_gap_age, gaps_escalated
          FROM ordering.stats ORDER BY consumer"

echo "== expressions"
failures=0
check_expr() {
	local what=$1 expr=$2 n
	n=$(curl -sf -G "$api/query" --data-urlencode "query=$expr" | jq '.data.result | length')
	if [ "${n:-0}" -gt 0 ]; then
		echo "ok      $what: $n series"
	else
		echo "NO DATA $what: $expr"
		failures=$((failures + 1))
	fi
}
while IFS=$'\t' read -r title expr; do
	expr=$(base64 -d <<<"$expr")
	check_expr "panel \"$title\"" "${expr//\$datname/.*}"
done < <(jq -r '.panels[] | .title as $t | .targets[] | [$t, (.expr | @base64)] | @tsv' \
	"$here/monitoring/dashboard.json")
while IFS=$'\t' read -r name expr; do
	check_expr "rule $name" "$(base64 -d <<<"$expr")"
done < <(yq -r '.groups[].rules[] | [(.record // .alert), (.expr | @base64)] | @tsv' \
	"$here/monitoring/rules.yml")
bad_rules=$(curl -sf "$api/rules" | jq -r '.data.groups[].rules[] | select(.health != "ok") | .name')
if [ -n "$bad_rules" ]; then
	echo "rules that do not evaluate: $bad_rules"
	failures=$((failures + 1))
else
	echo "ok      every rule evaluates ($(curl -sf "$api/rules" | jq '[.data.groups[].rules[]] | length') rules)"
fi
firing=$(curl -sf "$api/alerts" | jq -r '[.data.alerts[].labels.alertname] | unique | join(" ")')
echo "alerts pending or firing: $firing"

echo "== promtool check metrics"
if sql -c "SELECT ordering.metrics()" | promtool check metrics; then
	echo "ok      ordering.metrics() lints clean"
else
	failures=$((failures + 1))
fi
if curl -sf "http://127.0.0.1:$exporter_port/metrics" | grep -E '^(# (HELP|TYPE) )?ordering_' |
	promtool check metrics; then
	echo "ok      the exporter's ordering_* families lint clean"
else
	failures=$((failures + 1))
fi

if [ -n "$png" ]; then
	echo "== chart"
	data=$SANDBOX/chart
	mkdir -p "$data"
	series() {
		curl -sf -G "$api/query_range" --data-urlencode "query=$2" \
			--data-urlencode "start=$start" --data-urlencode "end=$end" --data-urlencode step=1 |
			jq -r --argjson t0 "$start" '.data.result[0].values[]? | "\(.[0] - $t0) \(.[1])"' >"$data/$1"
	}
	# rates over 20 s: the run is shorter than the rules' 5 minutes
	series consumed_ledger 'rate(ordering_events_consumed_total{consumer="ledger"}[20s])'
	series consumed_billing 'rate(ordering_events_consumed_total{consumer="billing"}[20s])'
	series parked 'ordering_events_parked_current{consumer="ledger"}'
	series escalated 'ordering_event_gaps_escalated_total{consumer="ledger"}'
	series stale 'rate(ordering_events_stale_total{consumer="billing"}[20s])
		/ rate(ordering_events_consumed_total{consumer="billing"}[20s])'
	series hot 'max(rate(ordering_stream_hot_resource_events_total{stream="orders"}[20s]))
		/ sum(rate(ordering_sequences_assigned_total{stream="orders"}[20s]))'
	gnuplot -e "dir='$data'; outfile='$png'" "$here/monitoring/chart.gp"
	echo "chart: $png"
fi

if [ "$failures" -ne 0 ]; then
	echo "monitoring: $failures checks failed" >&2
	tail -n 20 "$SANDBOX/exporter.log" "$SANDBOX/prometheus.log" >&2
	exit 1
fi
echo "monitoring: all checks passed"
