// Step consumer: apply the events read as JSON lines from stdin once and in
// order.
//
//   node consumer.js CONSUMER_DSN [--dead-letter]
//
// Each message goes through ordering.deliver in its own transaction, and the
// rows deliver returns (the event, then the parked events it lets through)
// are applied in that transaction: duplicates and stale events return
// nothing, early events park until their predecessors arrive.
//
// With --dead-letter (ordering 1.1), deliver calls the handler
// example_apply_step itself; when it fails for a reason retrying will not
// fix, the event becomes its resource's dead letter and only that resource
// waits.
import readline from 'node:readline';
import pg from 'pg';

const CONSUMER = 'ledger';
const HANDLER = 'example_apply_step(text,bigint,jsonb)';

// The application's work for one event, in the caller's transaction.
async function applyStep(client, resourceId, seq, payload) {
  await client.query('INSERT INTO example_ledger (resource_id, seq, payload) VALUES ($1, $2, $3)',
    [resourceId, seq, JSON.stringify(payload)]);
}

// Runs today: deliver returns the rows to apply, the client applies them.
async function deliver(client, m) {
  const { rows } = await client.query(
    'SELECT seq, payload FROM ordering.deliver($1, $2, $3, $4)',
    [CONSUMER, m.resource_id, m.seq, JSON.stringify(m.payload)]);
  for (const r of rows) await applyStep(client, m.resource_id, r.seq, r.payload);
}

// Needs ordering 1.1: deliver calls the handler, a poison event is set aside.
async function deliverOrDeadLetter(client, m) {
  await client.query(
    `SELECT ordering.deliver($1, $2, $3, $4, $5::regprocedure, on_error => 'dead_letter')`,
    [CONSUMER, m.resource_id, m.seq, JSON.stringify(m.payload), HANDLER]);
}

// Run handle in one transaction.
async function inTransaction(client, handle, m) {
  await client.query('BEGIN');
  try {
    await handle(client, m);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

const client = new pg.Client({ connectionString: process.argv[2] });
await client.connect();
const handle = process.argv.includes('--dead-letter') ? deliverOrDeadLetter : deliver;
let refused = []; // a pipe cannot nack: keep refused messages for later
for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const pending = [...refused, JSON.parse(line)];
  refused = [];
  for (const m of pending) {
    for (;;) {
      try {
        await inTransaction(client, handle, m);
      } catch (err) {
        if (err.code?.startsWith('40')) continue; // serialization failure or deadlock: try again
        if (err.code !== '54000') throw err;
        refused.push(m); // too many parked: later
      }
      break;
    }
  }
}
await client.end();
if (refused.length > 0) {
  console.error(`consumer: ${refused.length} message(s) still refused at the end`);
  process.exitCode = 1;
}
