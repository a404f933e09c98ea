/**
 * Real processes racing on one SQLite inbox (a connection each to one database file): 4 workers accept the same events and take,
 * complete, retry, abandon and stall on them at once. Every entry is accepted once and completed
 * exactly once, by its latest run; the attempts of each are 1..k, each handed out once, increasing in
 * every process. ONCEONLY_INBOX_RACE_EVENTS makes it larger (default 200).
 */
import { fileURLToPath } from 'node:url';
import { inboxRaceTest } from '../support/inbox-race.js';

const spec = fileURLToPath(new URL('./inbox-race-spec.ts', import.meta.url));

inboxRaceTest('sqliteStore', spec);
