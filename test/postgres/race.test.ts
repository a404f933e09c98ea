import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { assertExactlyOnce, RACE_EVENTS, runCrash, runRace, runReleaseRace } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = (name: string) => fileURLToPath(new URL(`./${name}`, import.meta.url));

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL multi-process race', servers.postgres, () => probe.query('SELECT 1'));
await probe.end();

if (up) {
  describe('postgresStore across processes', () => {
    it('4 processes racing RACE_EVENTS (2,000; CI 800) events with 3 deliveries each write exactly one effect per event (pg)', async () => {
      // Act
      const report = await runRace({
        spec: spec('race-spec.ts'),
        processes: 4,
        events: RACE_EVENTS,
        deliveries: 3,
      });
      // Assess
      assertExactlyOnce(report);
      assert.equal(report.outcomes['lease-lost'] ?? 0, 0, 'no lease ran out with 30 s leases');
    });

    for (const name of ['race-spec.ts', 'race-spec-postgresjs.ts']) {
      it(`a worker SIGKILLed mid-handler blocks retries until its lease runs out, then attempt 2 completes (${name})`, async () => {
        await runCrash({ spec: spec(name) });
      });
    }

    it('4 processes releasing and claiming one key 25 times each: attempts 1..100, strictly increasing, one owner at a time', async () => {
      await runReleaseRace({ spec: spec('race-spec.ts'), processes: 4, rounds: 25 });
    });
  });
}
