/**
 * Real processes racing on one PostgreSQL inbox (even workers on pg, odd on postgres.js): 4 workers accept the same events and take,
 * complete, retry, abandon and stall on them at once. Every entry is accepted once and completed
 * exactly once, by its latest run; the attempts of each are 1..k, each handed out once, increasing in
 * every process. ONCEONLY_INBOX_RACE_EVENTS makes it larger (default 200).
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { inboxRaceTest } from '../support/inbox-race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./inbox-race-spec.ts', import.meta.url));

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL inbox race', servers.postgres, () => probe.query('SELECT 1'));
await probe.end();
if (up) inboxRaceTest('postgresStore', spec);
