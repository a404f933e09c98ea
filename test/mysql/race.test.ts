// Real processes racing on one MariaDB/MySQL server through once(): exactly one effect per event, and
// a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { assertExactlyOnce, RACE_EVENTS, runCrash, runRace, runReleaseRace } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));
const up = await reachable('MySQL/MariaDB', servers.mysql, async () => {
  const c = await mysql.createConnection(servers.mysql);
  await c.end();
});

if (up) {
  describe('mysqlStore across processes', () => {
    it('4 processes racing RACE_EVENTS (2,000; CI 800) events with 3 deliveries each write exactly one effect per event', async () => {
      const report = await runRace({ spec, processes: 4, events: RACE_EVENTS, deliveries: 3 });
      assertExactlyOnce(report);
    });

    it('a lease holder SIGKILLed mid-handler: in-flight during its lease, taken over with attempt 2 after', async () => {
      await runCrash({ spec, leaseMs: 1500 });
    });

    it('4 processes releasing and claiming one key 25 times each: attempts 1..100, strictly increasing, one owner at a time', async () => {
      await runReleaseRace({ spec, processes: 4, rounds: 25 });
    });
  });
}
