/**
 * Store outages under load: receiver processes driven by the delivery simulator while their own
 * Redis (then PostgreSQL) server is stopped for seconds and started again, or has its client
 * connections killed mid-command. Fail-closed: nothing lost, nothing doubled once retries finish.
 * Fail-open: nothing lost, every doubled effect matched by a delivery reported degraded.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { startRedisInstance, type RedisInstance } from '../support/redis-instance.js';
import { FAULT_SIZE, type FleetReport, runFleet, sleep, summary } from './support/fleet.js';

const EVENTS = 300 * FAULT_SIZE;
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
    const r = await runFleet({ store: 'redis', url: redis.url, events: EVENTS, fault: { at: EVENTS / 4, inject: outage } });
    console.log(summary('redis outage, fail-closed', r));
    assertClosed(r);
    assert.ok((r.byStatus['503'] ?? 0) > 0, 'the outage was seen (503s answered)');
  });

  it('fail-open: a 4 s stop and restart loses no event; every double is reported degraded', async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      onStoreError: 'open',
      fault: { at: EVENTS / 4, inject: outage },
    });
    console.log(summary('redis outage, fail-open', r));
    assertOpen(r);
    assert.ok(r.degradedDeliveries > 0, 'the outage was seen (degraded deliveries)');
  });
});
