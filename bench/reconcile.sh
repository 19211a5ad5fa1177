#!/usr/bin/env bash
#
# Growth check of reconciliation: a producer stream of 1,000,000 resources
# and a consumer that is behind on 100 of them (the last event of each
# lost).  Runs tools/ordering-reconcile at a few bucket counts and prints,
# for each, the time of every step, the buckets that differed, the
# resources looked at one by one and the resources found behind.  Not run
# by the tests; timings mean something only on a quiet machine.
#
#   bash bench/reconcile.sh                       1,000,000 resources, 100 behind
#   RESOURCES=10000 BEHIND=10 bash bench/reconcile.sh
#   BUCKETS="4096 65536" bash bench/reconcile.sh  bucket counts to try
#                                                 (default: the command's own
#                                                 choice, 4096, 16384, 65536)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=test/lib.sh
. "$here/test/lib.sh"
# shellcheck source=bench/server.sh
. "$here/bench/server.sh"

resources=${RESOURCES:-1000000}
behind=${BEHIND:-100}
buckets=${BUCKETS:-auto 4096 16384 65536}

ensure_packages $(pg_packages) python3-psycopg make gcc libc6-dev
sandbox_create "$here"
trap 'as_postgres pg_ctl -D "$SANDBOX/data" -m immediate stop >/dev/null 2>&1 || true; sandbox_destroy' EXIT
sandbox_build
bench_server_start
sql() { as_postgres psql -X -q -v ON_ERROR_STOP=1 -h "$SANDBOX" -U postgres "$@"; }

sql -d postgres -c 'CREATE DATABASE producer' -c 'CREATE DATABASE consumer'
sql -d producer -c 'CREATE EXTENSION ordering'
sql -d consumer -c 'CREATE EXTENSION ordering'

echo "== setting up: $resources resources with 1 to 5 events each, the consumer behind on $behind"
# Counters written directly (as after producing), the consumer's positions
# equal to them except for the $behind resources whose last event was lost;
# the outbox holds the last event of those (published an hour ago).
# (session_replication_role = replica: loaded as history, without the
# triggers that merge counter rows and number outbox rows)
sql -d producer <<SQL
SET session_replication_role = replica;
INSERT INTO ordering.sequences (stream, resource_id, last_seq)
SELECT 'ordering.outbox', 'customer-' || i, 1 + i % 5 FROM generate_series(1, $resources) i;
INSERT INTO ordering.outbox (resource_id, seq, event_type, payload, published_at)
SELECT 'customer-' || i, 1 + i % 5, 'e', '{}', now() - interval '1 hour'
  FROM generate_series(1, $resources, $resources / $behind) i;
RESET session_replication_role;
VACUUM ANALYZE ordering.sequences;
SQL
sql -d consumer <<SQL
INSERT INTO ordering.positions (consumer, resource_id, position)
SELECT 'billing', 'customer-' || i,
       CASE WHEN (i - 1) % ($resources / $behind) = 0 THEN i % 5 ELSE 1 + i % 5 END
  FROM generate_series(1, $resources) i;
DELETE FROM ordering.positions WHERE position = 0;
VACUUM ANALYZE ordering.positions;
SQL
echo "producer: $(sql -d producer -Atc 'SELECT count(*) FROM ordering.sequences') counters;" \
	"consumer: $(sql -d consumer -Atc 'SELECT count(*) FROM ordering.positions') positions"

cat >"$SANDBOX/show.py" <<'PY'
import json
import sys

o = json.load(sys.stdin)
s = o["seconds"]
print(f"  buckets {o['buckets']}: {o['differing_buckets']} differ; "
      f"{o['resources_drilled']} resources looked at, {o['behind']} behind, "
      f"{o['republished']} events to republish")
print("  seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in s.items())
      + f"; total {sum(s.values()):.2f}")
PY

dsn_p="host=$SANDBOX user=postgres dbname=producer"
dsn_c="host=$SANDBOX user=postgres dbname=consumer"
for b in $buckets; do
	opt=()
	[ "$b" = auto ] || opt=(--buckets "$b")
	echo "== buckets: $b (dry run)"
	as_postgres "$SANDBOX/src/tools/ordering-reconcile" --producer "$dsn_p" --consumer "$dsn_c" \
		--consumer-name billing --dry-run --json "${opt[@]}" | /usr/bin/python3 "$SANDBOX/show.py"
done
