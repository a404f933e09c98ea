// Real processes racing on one MariaDB/MySQL server through once(): exactly one effect per event, and
// a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
import { fileURLToPath } from 'node:url';
import mysql from 'mysql2/promise';
import { describeRaces } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));
const up = await reachable('MySQL/MariaDB', servers.mysql, async () => {
  const c = await mysql.createConnection(servers.mysql);
  await c.end();
});

if (up) {
  describeRaces('mysqlStore across processes', spec);
}
