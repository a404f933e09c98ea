// Real processes racing on one MariaDB/MySQL server through once(): exactly one effect per event, and
// a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { assertExactlyOnce, runCrash, runRace } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));
const up = await reachable('MySQL/MariaDB', servers.mysql, async () => {
  const c = await mysql.createConnection(servers.mysql);
  await c.end();
});

if (up) {
  describe('mysqlStore across processes', () => {
    it('4 processes racing 2,000 events with 3 deliveries each write exactly one effect per event', async () => {
      const report = await runRace({ spec, processes: 4, events: 2000, deliveries: 3 });
      assertExactlyOnce(report);
    });

    it('a lease holder SIGKILLed mid-handler: in-flight during its lease, taken over with attempt 2 after', async () => {
      await runCrash({ spec, leaseMs: 1500 });
    });
  });
}
