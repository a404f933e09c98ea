// A receiver in inbox mode over mysqlStore, on the MariaDB or MySQL server (test/support/inbox-receiver.ts).
import { randomBytes } from 'node:crypto';
import { after } from 'node:test';
import mysql from 'mysql2/promise';
import { mysqlStore } from '../../src/stores/mysql.js';
import { inboxReceiverSpec } from '../support/inbox-receiver.js';
import { reachable, servers } from '../support/servers.js';
import { stepsSpec } from '../support/steps-spec.js';

const run = randomBytes(4).toString('hex');
const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 8 });
const tables: string[] = [];

if (await reachable('MySQL', servers.mysql, () => pool.query('SELECT 1'))) {
  after(async () => {
    for (const t of tables)
      await pool.query(`DROP TABLE IF EXISTS \`${t}\`, \`${t}_versions\`, \`${t}_inbox\``);
    await pool.end();
  });
  const store = (name: string) => {
    const t = `oo_rcv_${run}_${name}`;
    tables.push(t);
    return mysqlStore({ client: pool, table: t });
  };
  inboxReceiverSpec('mysqlStore', store);
  stepsSpec('mysqlStore', store);
} else {
  await pool.end();
}
