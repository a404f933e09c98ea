/**
 * Real processes racing on one DynamoDB inbox (dynalite, started here on a free loopback port; a
 * client each): 4 workers accept the same events and take, complete, retry, abandon and stall on
 * them at once. Every entry is accepted once and completed exactly once, by its latest run; the
 * attempts of each are 1..k, each handed out once, increasing in every process.
 */
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startDynalite } from '../support/dynalite.js';
import { inboxRaceTest } from '../support/inbox-race.js';

const spec = fileURLToPath(new URL('./inbox-race-spec.ts', import.meta.url));
const server = await startDynalite();
// Inherited by the worker processes the harness forks.
process.env.ONCEONLY_DYNAMODB_ENDPOINT = server.endpoint;
process.env.ONCEONLY_DYNAMODB_TABLE = await server.table('irace');
after(() => server.stop());

// dynalite answers one request at a time (a real table takes thousands at once), and each event here
// is 4 accepts and its runs: half the size of the DynamoDB claims race, DYNAMODB_RACE_EVENTS / 2
// (100 by default).
inboxRaceTest('dynamoDbStore', spec, 4, {
  events: Math.ceil(Number(process.env.DYNAMODB_RACE_EVENTS ?? 200) / 2),
});
