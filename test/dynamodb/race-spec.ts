/**
 * The DynamoDB spec module for the shared multi-process harness (test/support/race.ts): every
 * worker process opens its own client to the dynalite server the test started (its endpoint and
 * table come through the environment); each effect is one ADD on a per-run item of the same table,
 * so the effects are counted from the server itself.
 */
import { ScanCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { dynamoDbStore } from '../../src/stores/dynamodb.js';
import { dynamoClient } from '../support/dynalite.js';

const endpoint = () => process.env.ONCEONLY_DYNAMODB_ENDPOINT!;
const table = () => process.env.ONCEONLY_DYNAMODB_TABLE!;
const effectPk = (runId: string, eventId: string) => `fx:${runId}:${eventId}`;

/**
 * dynalite answers one request at a time in one Node process: 64 deliveries in flight queue there
 * for seconds when the host's two cores are busy (a real table answers each in milliseconds).
 */
export const storeTimeout = '20s';

export async function open(runId: string) {
  const client = dynamoClient(endpoint());
  return {
    // One host's clock for every process: a small skew bound (the crash case waits 500 ms past the lease).
    store: dynamoDbStore({ client, table: table(), maxClockSkew: 100 }),
    async effect(eventId: string, _attempt: number) {
      await client.send(
        new UpdateItemCommand({
          TableName: table(),
          Key: { pk: { S: effectPk(runId, eventId) } },
          UpdateExpression: 'ADD n :one',
          ExpressionAttributeValues: { ':one': { N: '1' } },
        }),
      );
    },
    async close() {
      client.destroy();
    },
  };
}

export async function effects(runId: string): Promise<Map<string, number>> {
  const client = dynamoClient(endpoint());
  const counts = new Map<string, number>();
  const prefix = effectPk(runId, '');
  try {
    let start: Record<string, never> | undefined;
    do {
      const out = await client.send(
        new ScanCommand({
          TableName: table(),
          ConsistentRead: true,
          FilterExpression: 'begins_with(pk, :prefix)',
          ExpressionAttributeValues: { ':prefix': { S: prefix } },
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of out.Items ?? []) counts.set(item.pk!.S!.slice(prefix.length), Number(item.n!.N));
      start = out.LastEvaluatedKey as Record<string, never> | undefined;
    } while (start);
  } finally {
    client.destroy();
  }
  return counts;
}

export async function cleanup(_runId: string): Promise<void> {
  // The table lives in the test's in-memory dynalite, which goes with the test.
}
