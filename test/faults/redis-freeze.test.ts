/**
 * Redis answering late or not at all, under load: the server frozen with SIGSTOP for longer than the
 * provider's request timeout (connections stay open, commands wait), and an outage seen through
 * node-redis's default offline queue (commands wait for the reconnect instead of failing).
 * Fail-closed: nothing lost, nothing doubled once retries finish.
 */
import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { FAULT_SIZE, runFleet, sleep, summary } from './support/fleet.js';

const EVENTS = 100 * FAULT_SIZE;

describe('Redis store frozen or queued behind a reconnect (own redis-server)', () => {
  let redis: RedisInstance;
  before(async () => {
    redis = await startRedisInstance();
  });
  after(async () => {
    await redis?.destroy();
  });

  it('fail-closed: a server frozen 7 s answers 503 within storeTimeout (never the provider timing out), and loses and doubles nothing', async () => {
    // 2 s deadline: 8 s lease, longer than the freeze; the simulator gives up on a request after 6 s,
    // but every store call gives up after storeTimeout (3 s), so the provider hears 503 first.
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      timeoutMs: 2_000,
      fault: { at: EVENTS / 4, inject: () => redis.pause(7_000) },
    });
    console.log(summary('redis frozen 7 s (SIGSTOP), fail-closed', r));
    assert.equal(r.gaveUp, 0);
    assert.equal(r.eventsLost, 0);
    assert.equal(r.effectsDoubled, 0);
    assert.ok((r.sim.byStatus['503'] ?? 0) > 0, 'deliveries during the freeze were answered 503');
    assert.equal(
      r.sim.timeouts,
      0,
      'no request hung until the provider gave up (it did before storeTimeout)',
    );
  });

  it("fail-closed: node-redis's offline queue holds commands through a 4 s outage; nothing lost or doubled", async () => {
    const r = await runFleet({
      store: 'redis',
      url: redis.url,
      events: EVENTS,
      timeoutMs: 2_000,
      redisOfflineQueue: true,
      fault: {
        at: EVENTS / 4,
        inject: async () => {
          await redis.stop();
          await sleep(4_000);
          await redis.start();
        },
      },
    });
    console.log(summary('redis outage, default offline queue, fail-closed', r));
    assert.equal(r.gaveUp, 0);
    assert.equal(r.eventsLost, 0);
    assert.equal(r.effectsDoubled, 0);
  });
});
