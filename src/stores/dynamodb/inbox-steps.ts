/** The DynamoDB inbox's durable steps: a map in the entry's item, written only by its lease's owner. */
import { GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import type { StepStore } from '../../core/step-store.js';
import { StepError } from '../../core/steps.js';
import type { Lease } from '../../core/types.js';
import type { DynamoDbClientLike } from './claims.js';
import { conditionFailed, dynamoFailure, errorName } from './failure.js';
import { DYNAMODB_INBOX_STEPS_MAX_BYTES, inboxPk, names, OWNED, str } from './inbox-items.js';
import { type Item, S } from './items.js';

/** The steps of the entries in `table`: see StepStore. */
export function inboxSteps(client: DynamoDbClientLike, table: string): StepStore {
  const send = async (command: unknown): Promise<{ Item?: Item }> => {
    try {
      return (await client.send(command as never)) as { Item?: Item };
    } catch (error) {
      throw dynamoFailure(table, 'load steps', error);
    }
  };
  return {
    maxBytes: DYNAMODB_INBOX_STEPS_MAX_BYTES,
    load: async (lease: Lease): Promise<ReadonlyMap<string, string>> => {
      const out = await send(
        new GetItemCommand({
          TableName: table,
          Key: { pk: S(inboxPk(lease.key)) },
          ConsistentRead: true,
          ProjectionExpression: '#steps',
          ExpressionAttributeNames: { '#steps': 'steps' },
        }),
      );
      const steps = new Map<string, string>();
      for (const [name, value] of Object.entries(out.Item?.steps?.M ?? {})) steps.set(name, str(value) ?? '');
      return steps;
    },
    save: async (lease: Lease, name: string, value: string): Promise<boolean> => {
      if (lease.token === '') return false;
      const update = 'SET #steps.#name = :value';
      try {
        await client.send(
          new UpdateItemCommand({
            TableName: table,
            Key: { pk: S(inboxPk(lease.key)) },
            UpdateExpression: update,
            ConditionExpression: OWNED,
            ExpressionAttributeNames: names([update, OWNED], { '#name': name }),
            ExpressionAttributeValues: {
              ':processing': S('processing'),
              ':token': S(lease.token),
              ':value': S(value),
            },
          }) as never,
        );
        return true;
      } catch (error) {
        if (conditionFailed(error)) return false;
        if (errorName(error) === 'ValidationException' && /item size/i.test(String((error as Error).message)))
          throw new StepError(
            'step_too_large',
            name,
            `onceonly: step "${name}" does not fit in its inbox entry's DynamoDB item (400 KB with the delivery and every step): keep step results small (an id, not a whole response)`,
            { cause: error },
          );
        throw dynamoFailure(table, 'save a step', error);
      }
    },
  };
}
