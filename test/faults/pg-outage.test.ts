/**
 * PostgreSQL outages under load: receiver processes driven by the delivery simulator while their own
 * PostgreSQL instance (initdb into a temp dir, never the machine's server) is stopped for seconds
 * and started again, or has its client backends terminated mid-command (pg_terminate_backend).
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { type PgInstance, startPgInstance } from '../support/pg-instance.js';
import { FAULT_SIZE, type FleetReport, runFleet, sleep, summary } from './support/fleet.js';

const EVENTS = 100 * FAULT_SIZE;
// Fail-closed keeps its promise for an outage shorter than the lease: a handler that ends while the
// store is away confirms once it is back, within its lease. 2 s deadline: 8 s lease, 4 s outage.
const TIMEOUT_MS = 2_000;
const OUTAGE_MS = 4_000;
const KILL_FOR_MS = 3_000;

function assertNothingLost(r: FleetReport) {
  assert.equal(r.gaveUp, 0, 'the simulator gave up on events');
  assert.equal(r.eventsLost, 0, 'events lost');
}

describe('PostgreSQL store outage under load (own instance)', () => {
  let pg: PgInstance;
  before(async () => {
    pg = await startPgInstance();
  });
  after(async () => {
    await pg?.destroy();
  });

  const outage = async () => {
    await pg.stop();
    await sleep(OUTAGE_MS);
    await pg.start();
  };

  const terminate = async () => {
    const { default: pgLib } = await import('pg');
    const admin = new pgLib.Client({ connectionString: pg.url });
    await admin.connect();
    try {
      const end = Date.now() + KILL_FOR_MS;
      while (Date.now() < end) {
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
           WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
        );
        await sleep(100);
      }
    } finally {
      await admin.end();
    }
  };

  it('fail-closed: a 4 s stop and restart loses no event and doubles no effect', async () => {
    const r = await runFleet({
      store: 'postgres',
      url: pg.url,
      events: EVENTS,
      timeoutMs: TIMEOUT_MS,
      fault: { at: EVENTS / 4, inject: outage },
    });
    console.log(summary('postgres outage, fail-closed', r));
    assertNothingLost(r);
    assert.equal(r.effectsDoubled, 0, 'effects doubled under fail-closed');
    assert.ok((r.byStatus['503'] ?? 0) > 0, 'the outage was seen (503s answered)');
  });

  it('fail-open: a 4 s stop and restart loses no event; every double is reported degraded', async () => {
    const r = await runFleet({
      store: 'postgres',
      url: pg.url,
      events: EVENTS,
      timeoutMs: TIMEOUT_MS,
      onStoreError: 'open',
      fault: { at: EVENTS / 4, inject: outage },
    });
    console.log(summary('postgres outage, fail-open', r));
    assertNothingLost(r);
    assert.equal(r.unreportedDoubles, 0, 'a doubled effect no degraded delivery reported');
    assert.ok(r.degradedDeliveries > 0, 'the outage was seen (degraded deliveries)');
  });

  it('fail-closed: backends terminated mid-command lose and double nothing', async () => {
    const r = await runFleet({
      store: 'postgres',
      url: pg.url,
      events: EVENTS,
      fault: { at: EVENTS / 4, inject: terminate },
    });
    console.log(summary('postgres pg_terminate_backend, fail-closed', r));
    assertNothingLost(r);
    assert.equal(r.effectsDoubled, 0, 'effects doubled under fail-closed');
  });

  it('fail-open: backends terminated mid-command lose nothing; doubles are reported', async () => {
    const r = await runFleet({
      store: 'postgres',
      url: pg.url,
      events: EVENTS,
      onStoreError: 'open',
      fault: { at: EVENTS / 4, inject: terminate },
    });
    console.log(summary('postgres pg_terminate_backend, fail-open', r));
    assertNothingLost(r);
    assert.equal(r.unreportedDoubles, 0, 'a doubled effect no degraded delivery reported');
  });
});
