/** The DynamoDB inbox's durable steps: a map in the entry's item, written only by its lease's owner. */
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { StepStore } from '../../core/step-store.js';
import { StepError } from '../../core/steps.js';
import type { Lease } from '../../core/types.js';
import { StoreUnavailableError } from '../../errors.js';
import type { DynamoDbClientLike } from './claims.js';
import { dynamoFailure, errorName } from './failure.js';
import { DYNAMODB_INBOX_STEPS_MAX_BYTES, inboxPk, str } from './inbox-items.js';
import { type Attr, type Item, S } from './items.js';

/**
 * An UpdateItem on the lease's entry that lands only while the lease owns it: `false` when it does
 * not (DynamoInbox's owner-checked write); other failures thrown as the store's errors.
 */
export type OwnerWrite = (
  lease: Lease,
  update: string,
  values: Record<string, Attr>,
  extraNames: Record<string, string>,
) => Promise<boolean>;

/** The steps of the entries in `table`, saved through `write`: see StepStore. */
export function inboxSteps(client: DynamoDbClientLike, table: string, write: OwnerWrite): StepStore {
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
      try {
        return await write(lease, 'SET #steps.#name = :value', { ':value': S(value) }, { '#name': name });
      } catch (error) {
        const cause = error instanceof StoreUnavailableError ? error.cause : error;
        if (errorName(cause) === 'ValidationException' && /item size/i.test(String((cause as Error).message)))
          throw new StepError(
            'step_too_large',
            name,
            `onceonly: step "${name}" does not fit in its inbox entry's DynamoDB item (400 KB with the delivery and every step): keep step results small (an id, not a whole response)`,
            { cause },
          );
        throw error;
      }
    },
  };
}
