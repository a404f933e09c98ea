/**
 * The DynamoDB spec module for the multi-process inbox race (test/support/inbox-race.ts): every
 * worker process opens its own client to the dynalite server the test started (its endpoint and
 * table come through the environment), and the run's entries are those of its receiver.
 */
import { dynamoDbStore } from '../../src/stores/dynamodb.js';
import { dynamoClient } from '../support/dynalite.js';

export async function open(_runId: string) {
  const client = dynamoClient(process.env.ONCEONLY_DYNAMODB_ENDPOINT!);
  // One host's clock for every process: a small skew bound, so a stalled run is taken over soon.
  const store = dynamoDbStore({ client, table: process.env.ONCEONLY_DYNAMODB_TABLE!, maxClockSkew: 100 });
  return { inbox: store.inbox!, close: async () => client.destroy() };
}

export async function cleanup(_runId: string): Promise<void> {
  // The table lives in the test's in-memory dynalite, which goes with the test.
}
