/**
 * Real processes racing on the shared Redis server through once(): exactly one effect per event,
 * and a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { assertExactlyOnce, RACE_EVENTS, runCrash, runRace, runReleaseRace } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  describe('redisStore across processes', () => {
    it('4 processes racing RACE_EVENTS (2,000; CI 800) events with 3 deliveries each write exactly one effect per event', async () => {
      // Act
      const report = await runRace({ spec, processes: 4, events: RACE_EVENTS, deliveries: 3 });
      // Assess
      assertExactlyOnce(report);
      assert.equal(
        Object.values(report.outcomes).reduce((a, b) => a + b, 0) >= 4 * RACE_EVENTS * 3,
        true,
        'every delivery got an outcome',
      );
    });

    it('a SIGKILLed lease holder blocks as in-flight, then is taken over with attempt 2', async () => {
      await runCrash({ spec, leaseMs: 1500 });
    });

    it('4 processes releasing and claiming one key 25 times each: attempts 1..100, strictly increasing, one owner at a time', async () => {
      await runReleaseRace({ spec, processes: 4, rounds: 25 });
    });
  });
}
