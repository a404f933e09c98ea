import { after } from 'node:test';
import { dynamoClient, startDynalite } from '../../test/support/dynalite.js';
import { runInboxConformance } from '../testing/index.js';
import { DYNAMODB_INBOX_MAX_BYTES, dynamoDbStore } from './dynamodb.js';

// Started before the suites register: a server that cannot start fails the file, never skips it.
const server = await startDynalite();
const client = dynamoClient(server.endpoint);
const table = await server.table('inbox');
after(async () => {
  client.destroy();
  await server.stop();
});

// Every process of a test shares one host clock: a small skew bound keeps the time-based cases short.
const store = dynamoDbStore({ client, table, maxClockSkew: 50 });
await runInboxConformance({
  name: 'dynamoDbStore inbox on dynalite',
  factory: () => store.inbox!,
  maxDeliveryBytes: DYNAMODB_INBOX_MAX_BYTES,
});
