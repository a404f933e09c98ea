/**
 * Real processes racing on one dynalite server (started here, on a free loopback port) through
 * once(): exactly one effect per event, a SIGKILLed lease holder taken over with attempt 2 once its
 * lease runs out, and releases that hand out every attempt once.
 */
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startDynalite } from '../support/dynalite.js';
import { describeRaces } from '../support/race.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));
const server = await startDynalite();
// Inherited by the worker processes the harness forks.
process.env.ONCEONLY_DYNAMODB_ENDPOINT = server.endpoint;
process.env.ONCEONLY_DYNAMODB_TABLE = await server.table('race');
after(() => server.stop());

// dynalite answers a write in about 7 ms, one request at a time (a real table takes thousands at
// once): smaller races, DYNAMODB_RACE_EVENTS events (default 200) and 10 release rounds per process.
describeRaces('dynamoDbStore across processes', spec, {
  events: Number(process.env.DYNAMODB_RACE_EVENTS ?? 200),
  rounds: 10,
});
