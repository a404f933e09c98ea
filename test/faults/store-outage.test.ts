/**
 * Store outages under load: receiver processes driven by the delivery simulator while their own
 * Redis (then PostgreSQL) server is stopped for seconds and started again, or has its client
 * connections killed mid-command. Fail-closed: nothing lost, nothing doubled once retries finish.
 * Fail-open: nothing lost, every doubled effect matched by a delivery reported degraded.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { FAULT_SIZE, type FleetReport, runFleet, sleep, summary } from './support/fleet.js';

const EVENTS = 100 * FAULT_SIZE;
// Fail-closed keeps its promise for an outage shorter than the lease: a handler that ends while the
// store is away confirms once it is back, within its lease. 2 s deadline: 8 s lease, 4 s outage.
const TIMEOUT_MS = 2_000;
const KILL_FOR_MS = 3_000;
const OUTAGE_MS = 4_000;

function assertClosed(r: FleetReport) {
  assert.equal(r.gaveUp, 0, 'the simulator gave up on events');
  assert.equal(r.eventsLost, 0, 'events lost');
  assert.equal(r.effectsDoubled, 0, 'effects doubled under fail-closed');
}

function assertOpen(r: FleetReport) {
  assert.equal(r.gaveUp, 0, 'the simulator gave up on events');
  assert.equal(r.eventsLost, 0, 'events lost');
  assert.equal(r.unreportedDoubles, 0, 'a doubled effect no degraded delivery reported');
}

describe('Redis store outage under load (own redis-server)', () => {
  let redis: RedisInstance;
  before(async () => {
    redis = await startRedisInstance();
  });
  after(async () => {
    await redis?.destroy();
  });

  const outage = async () => {
    await redis.stop();
    await sleep(OUTAGE_MS);
    await redis.start();
  };

  it('fail-closed: a 4 s stop and restart loses no event and doubles no effect', async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      timeoutMs: TIMEOUT_MS,
      fault: { at: EVENTS / 4, inject: outage },
    });
    console.log(summary('redis outage, fail-closed', r));
    assertClosed(r);
    assert.ok((r.byStatus['503'] ?? 0) > 0, 'the outage was seen (503s answered)');
  });

  it('fail-closed: handlers still running when the server stops confirm once it is back (no double)', async () => {
    // Every handler takes 1 s, so dozens end during the outage with their confirm failing; each
    // event is delivered again after its first success, so an unconfirmed key would run twice.
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: 80 * FAULT_SIZE,
      workMs: 1_000,
      timeoutMs: 2_000,
      concurrency: 32,
      duplicateRate: 1,
      fault: { at: 20, inject: outage },
    });
    console.log(summary('redis outage with 1 s handlers, fail-closed', r));
    assertClosed(r);
    assert.ok(r.degradedDeliveries > 0, 'confirms failed during the outage');
  });

  it('fail-open: a 4 s stop and restart loses no event; every double is reported degraded', async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      timeoutMs: TIMEOUT_MS,
      onStoreError: 'open',
      fault: { at: EVENTS / 4, inject: outage },
    });
    console.log(summary('redis outage, fail-open', r));
    assertOpen(r);
    assert.ok(r.degradedDeliveries > 0, 'the outage was seen (degraded deliveries)');
  });

  // CLIENT KILL cuts every client connection, whatever command is on it, every 100 ms for 3 s.
  const clientKills = async () => {
    const end = Date.now() + KILL_FOR_MS;
    while (Date.now() < end) {
      await redis.cli('client', 'kill', 'type', 'normal');
      await sleep(100);
    }
  };

  it('fail-closed: connections killed mid-command (CLIENT KILL) lose and double nothing', async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      fault: { at: EVENTS / 4, inject: clientKills },
    });
    console.log(summary('redis CLIENT KILL, fail-closed', r));
    assertClosed(r);
  });

  it('fail-open: connections killed mid-command (CLIENT KILL) lose nothing; doubles are reported', async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      onStoreError: 'open',
      fault: { at: EVENTS / 4, inject: clientKills },
    });
    console.log(summary('redis CLIENT KILL, fail-open', r));
    assertOpen(r);
  });

  it('SCRIPT FLUSH every 50 ms mid-run is absorbed: no failed delivery, no 5xx, one effect each', async () => {
    let flushes = 0;
    // One connection of its own: a redis-cli process per flush took ~400 ms to start on a loaded
    // host. The count of flushes still depends on the load; what proves the fault landed is the
    // server's count of EVAL (a script sent again after NOSCRIPT) growing after the first flush.
    const admin = await createClient({ url: redis.url }).connect();
    const evals = async () =>
      Number(/cmdstat_eval:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    let evalsAtFault = 0;
    let evalsAfter = 0;
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      fault: {
        at: EVENTS / 10,
        inject: async () => {
          evalsAtFault = await evals();
          const end = Date.now() + KILL_FOR_MS;
          while (Date.now() < end) {
            await admin.scriptFlush();
            flushes++;
            await sleep(50);
          }
        },
      },
    }).finally(async () => {
      evalsAfter = await evals();
      await admin.quit();
    });
    console.log(summary(`redis SCRIPT FLUSH x${flushes}, EVAL x${evalsAfter - evalsAtFault} after`, r));
    assert.ok(flushes >= 3, `flushes: ${flushes}`);
    assert.ok(
      evalsAfter > evalsAtFault,
      'a flushed script was sent again (NOSCRIPT, then EVAL) during the run',
    );
    assertClosed(r);
    assert.equal(r.responses5xx, 0);
    assert.equal(r.failedOutcomes, 0);
  });
});
