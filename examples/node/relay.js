// Relay: publish the producer's outbox as JSON lines on stdout, and answer
// gap requests.
//
//   node relay.js PRODUCER_DSN CONSUMER_DSN
//
// Each batch is claimed, written and marked published in one transaction: a
// relay that dies before its commit leaves the rows unpublished, and they are
// sent again (at least once; the consumer drops the duplicates).  A listener
// on ordering_gap in the consumer database puts the missing events back in
// the outbox with ordering.republish.  SIGTERM or SIGINT: finish the batch
// and stop.
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';

const BATCH = 100;
const [producerDsn, consumerDsn] = process.argv.slice(2);

// Write to stdout and wait until it has been handed over.
function write(text) {
  return new Promise((resolve, reject) =>
    process.stdout.write(text, (err) => (err ? reject(err) : resolve())));
}

// claim_unpublished -> write -> mark_published, in one transaction; returns
// how many rows were sent.
async function publishBatch(client) {
  await client.query('BEGIN');
  try {
    const { rows } = await client.query(
      `SELECT id, resource_id, seq, event_type, payload
         FROM ordering.claim_unpublished($1)`, [BATCH]);
    if (rows.length > 0) {
      await write(rows.map((r) => `${JSON.stringify({
        resource_id: r.resource_id, seq: Number(r.seq), event_type: r.event_type, payload: r.payload,
      })}\n`).join(''));   // handed over before the commit says so
      await client.query('SELECT ordering.mark_published($1::bigint[])', [rows.map((r) => r.id)]);
    }
    await client.query('COMMIT');
    return rows.length;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

// For each gap the consumer's sweeper reports, republish the missing events.
async function answerGaps() {
  const listener = new pg.Client({ connectionString: consumerDsn });
  const producer = new pg.Client({ connectionString: producerDsn });
  await Promise.all([listener.connect(), producer.connect()]);
  let done = Promise.resolve(); // one republish at a time, in arrival order
  listener.on('notification', ({ payload }) => {
    const gap = JSON.parse(payload);
    done = done.then(async () => {
      const { rows } = await producer.query('SELECT ordering.republish($1, $2, $3) AS n',
        [gap.resource_id, gap.missing_from, gap.missing_to]);
      console.error(`relay: republished ${rows[0].n} event(s) of ${gap.resource_id}`);
    });
  });
  await listener.query('LISTEN ordering_gap');
  return [listener, producer];
}

let stopping = false;
process.on('SIGTERM', () => { stopping = true; });
process.on('SIGINT', () => { stopping = true; });

const client = new pg.Client({ connectionString: producerDsn });
await client.connect();
const gapClients = await answerGaps();
while (!stopping) {
  if (await publishBatch(client) === 0) await sleep(50);
}
await Promise.all([client, ...gapClients].map((c) => c.end()));
