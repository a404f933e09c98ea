/**
 * The DynamoDB store's table and housekeeping: the table's definition and its creation, the health
 * checks (table, key schema, TTL, the inbox's index), the operator's counts and stuck leases (a bounded Scan), and
 * `purgeExpired` for a table without TTL.
 */
import {
  CreateTableCommand,
  DeleteItemCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  ScanCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import type { HealthCheck, StoreHealth } from '../../core/health.js';
import type { RecordView, StoreStats } from '../../core/types.js';
import type { DynamoDbClientLike } from './claims.js';
import { dynamoFailure, errorName } from './failure.js';
import { INBOX_INDEX } from './inbox-items.js';
import {
  expression,
  type Item,
  isClaimPk,
  KEY_ATTRIBUTE,
  N,
  readClaim,
  TTL_ATTRIBUTE,
  viewOf,
} from './items.js';

/**
 * The CreateTable input of the store's table: one partition key `pk` (S), on-demand capacity, and
 * the inbox's sparse global secondary index `inbox` (partition key `iq` S, sort key `idue` N,
 * projecting `key`). Enable TTL on `ttl` after it (createDynamoDbTable does both).
 */
export function dynamoDbTableInput(table: string) {
  return {
    TableName: table,
    AttributeDefinitions: [
      { AttributeName: KEY_ATTRIBUTE, AttributeType: 'S' as const },
      { AttributeName: 'iq', AttributeType: 'S' as const },
      { AttributeName: 'idue', AttributeType: 'N' as const },
    ],
    KeySchema: [{ AttributeName: KEY_ATTRIBUTE, KeyType: 'HASH' as const }],
    GlobalSecondaryIndexes: [
      {
        IndexName: INBOX_INDEX,
        KeySchema: [
          { AttributeName: 'iq', KeyType: 'HASH' as const },
          { AttributeName: 'idue', KeyType: 'RANGE' as const },
        ],
        Projection: { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: ['key'] },
      },
    ],
    BillingMode: 'PAY_PER_REQUEST' as const,
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates the table (when missing), waits until it is ACTIVE, and turns TTL on (unless `ttl: false`). */
export async function createTable(
  client: DynamoDbClientLike,
  table: string,
  options: { ttl?: boolean; timeoutMs?: number } = {},
): Promise<void> {
  try {
    await client.send(new CreateTableCommand(dynamoDbTableInput(table)));
  } catch (error) {
    if (errorName(error) !== 'ResourceInUseException') throw dynamoFailure(table, 'create its table', error);
  }
  const deadline = Date.now() + (options.timeoutMs ?? 120_000);
  for (;;) {
    const out = await client.send(new DescribeTableCommand({ TableName: table })).catch((error: unknown) => {
      if (errorName(error) === 'ResourceNotFoundException') return undefined;
      throw dynamoFailure(table, 'create its table', error);
    });
    if (out?.Table?.TableStatus === 'ACTIVE') break;
    if (Date.now() > deadline)
      throw dynamoFailure(table, 'create its table', new Error('not ACTIVE in time'));
    await sleep(500);
  }
  if (options.ttl === false) return;
  try {
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { Enabled: true, AttributeName: TTL_ATTRIBUTE },
      }),
    );
  } catch (error) {
    // Already on: DynamoDB refuses to enable it twice.
    if (!/already enabled/i.test(String((error as Error)?.message)))
      throw dynamoFailure(table, 'turn TTL on', error);
  }
}

interface KeyElement {
  AttributeName?: string;
  KeyType?: string;
}
interface AttributeDefinition {
  AttributeName?: string;
  AttributeType?: string;
}
interface IndexDescription {
  IndexName?: string;
  IndexStatus?: string;
  KeySchema?: KeyElement[];
  Projection?: { ProjectionType?: string; NonKeyAttributes?: string[] };
}

const INDEX_FIX = `add it to the table: an UpdateTable with GlobalSecondaryIndexUpdates Create ${INBOX_INDEX} (partition key iq S, sort key idue N, projection INCLUDE key), or the snippets in docs/dynamodb.md`;

/**
 * The inbox's index on the described table: present as `dynamoDbTableInput` makes it (partition
 * key `iq` S, sort key `idue` N, `key` projected) and usable (ACTIVE or UPDATING, not backfilling).
 */
export function inboxIndexCheck(
  table: string,
  indexes: readonly IndexDescription[],
  types: readonly AttributeDefinition[],
): HealthCheck {
  const name = 'inbox-index';
  const index = indexes.find((i) => i.IndexName === INBOX_INDEX);
  if (!index) {
    return { name, ok: false, detail: `${table} has no global secondary index ${INBOX_INDEX}: ${INDEX_FIX}` };
  }
  const keys = index.KeySchema ?? [];
  const typeOf = (attribute: string) => types.find((d) => d.AttributeName === attribute)?.AttributeType;
  const keysOk =
    keys.length === 2 &&
    keys.some((k) => k.AttributeName === 'iq' && k.KeyType === 'HASH') &&
    keys.some((k) => k.AttributeName === 'idue' && k.KeyType === 'RANGE') &&
    typeOf('iq') === 'S' &&
    typeOf('idue') === 'N';
  if (!keysOk) {
    const found = keys.map((k) => `${k.AttributeName} ${typeOf(k.AttributeName ?? '') ?? '?'} ${k.KeyType}`);
    return {
      name,
      ok: false,
      detail: `${table}'s index ${INBOX_INDEX} has key schema ${found.join(', ') || 'none'}: the inbox needs partition key iq (S) and sort key idue (N); delete the index and ${INDEX_FIX}`,
    };
  }
  const projection = index.Projection ?? {};
  if (projection.ProjectionType !== 'ALL' && !(projection.NonKeyAttributes ?? []).includes('key')) {
    return {
      name,
      ok: false,
      detail: `${table}'s index ${INBOX_INDEX} projects ${projection.ProjectionType ?? 'nothing'} without the attribute key, which take reads: delete the index and ${INDEX_FIX}`,
    };
  }
  const status = index.IndexStatus ?? 'ACTIVE';
  return {
    name,
    ok: status === 'ACTIVE' || status === 'UPDATING',
    detail:
      status === 'CREATING'
        ? `${INBOX_INDEX} CREATING (backfilling): the inbox's take fails until it is ACTIVE`
        : `${INBOX_INDEX} ${status} (iq S, idue N, projecting ${projection.ProjectionType === 'ALL' ? 'ALL' : 'key'})`,
  };
}

/**
 * The table's health: it exists and is active with the store's key schema, its TTL is on `ttl`
 * (unless `checkTtl` is off), and, when the caller uses the inbox, the inbox's index is there.
 */
export async function dynamoHealth(
  client: DynamoDbClientLike,
  table: string,
  checkTtl: boolean,
  inbox = false,
): Promise<StoreHealth> {
  const checks: HealthCheck[] = [];
  let described: {
    Table?: {
      TableStatus?: string;
      KeySchema?: unknown[];
      AttributeDefinitions?: unknown[];
      GlobalSecondaryIndexes?: unknown[];
    };
  };
  try {
    described = await client.send(new DescribeTableCommand({ TableName: table }));
  } catch (error) {
    if (errorName(error) !== 'ResourceNotFoundException')
      throw dynamoFailure(table, 'describe its table', error);
    checks.push({
      name: 'table',
      ok: false,
      detail: `${table} is missing: create it with createDynamoDbTable or the snippet in docs/dynamodb.md`,
    });
    return { checks };
  }
  const t = described.Table ?? {};
  const keys = (t.KeySchema ?? []) as KeyElement[];
  const types = (t.AttributeDefinitions ?? []) as AttributeDefinition[];
  const schemaOk =
    keys.length === 1 &&
    keys[0]?.AttributeName === KEY_ATTRIBUTE &&
    keys[0]?.KeyType === 'HASH' &&
    types.some((d) => d.AttributeName === KEY_ATTRIBUTE && d.AttributeType === 'S');
  checks.push(
    schemaOk
      ? {
          name: 'table',
          ok: t.TableStatus === 'ACTIVE' || t.TableStatus === 'UPDATING',
          detail: `${table} ${t.TableStatus}`,
        }
      : {
          name: 'table',
          ok: false,
          detail: `${table} has key schema ${keys.map((k) => `${k.AttributeName} ${k.KeyType}`).join(', ')}: onceonly's is one partition key pk (S)`,
        },
  );
  if (inbox)
    checks.push(inboxIndexCheck(table, (t.GlobalSecondaryIndexes ?? []) as IndexDescription[], types));
  if (checkTtl) {
    const ttl = (await client
      .send(new DescribeTimeToLiveCommand({ TableName: table }))
      .catch((error: unknown) => {
        throw dynamoFailure(table, 'describe its TTL', error);
      })) as { TimeToLiveDescription?: { TimeToLiveStatus?: string; AttributeName?: string } };
    const status = ttl.TimeToLiveDescription?.TimeToLiveStatus ?? 'DISABLED';
    const on =
      (status === 'ENABLED' || status === 'ENABLING') &&
      ttl.TimeToLiveDescription?.AttributeName === TTL_ATTRIBUTE;
    checks.push(
      on
        ? { name: 'ttl', ok: true, detail: `${status} on ${TTL_ATTRIBUTE}` }
        : {
            name: 'ttl',
            ok: false,
            detail: `${status}${ttl.TimeToLiveDescription?.AttributeName ? ` on ${ttl.TimeToLiveDescription.AttributeName}` : ''}: turn TTL on for attribute ${TTL_ATTRIBUTE}, or schedule purgeExpired() and pass checkTtl: false`,
          },
    );
  }
  return { checks };
}

/** Every item of the table, page by page, at most `limit` items read. */
async function* scan(
  client: DynamoDbClientLike,
  table: string,
  what: string,
  limit: number,
  filter?: { text: string; values: Record<string, ReturnType<typeof N>> },
): AsyncGenerator<Item[], boolean> {
  let start: Item | undefined;
  let read = 0;
  do {
    const out = (await client
      .send(
        new ScanCommand({
          TableName: table,
          ConsistentRead: true,
          Limit: Math.min(1_000, limit - read),
          ...(start ? { ExclusiveStartKey: start } : {}),
          ...(filter ? { FilterExpression: filter.text, ...expression([filter.text], filter.values) } : {}),
        }),
      )
      .catch((error: unknown) => {
        throw dynamoFailure(table, what, error);
      })) as { Items?: Item[]; LastEvaluatedKey?: Item; ScannedCount?: number };
    read += out.ScannedCount ?? out.Items?.length ?? 0;
    start = out.LastEvaluatedKey;
    yield out.Items ?? [];
  } while (start && read < limit);
  return start !== undefined;
}

/** Counts by state over at most `limit` items (`partial` past it). */
export async function dynamoStats(
  client: DynamoDbClientLike,
  table: string,
  now: number,
  skewMs: number,
  limit: number,
): Promise<StoreStats> {
  let processing = 0;
  let takeable = 0;
  let completed = 0;
  const pages = scan(client, table, 'count its records', limit);
  let next = await pages.next();
  while (!next.done) {
    for (const item of next.value) {
      const pk = (item.pk as { S?: string } | undefined)?.S ?? '';
      const record = isClaimPk(pk) ? readClaim(item) : undefined;
      if (!record || record.dropAt <= now) continue;
      if (record.state === 'completed') completed++;
      else if (record.state === 'processing' && record.expiresAt > now - skewMs) processing++;
      else takeable++;
    }
    next = await pages.next();
  }
  return { processing, takeable, completed, ...(next.value ? { partial: true } : {}) };
}

/** Processing records (and released ones), soonest lease end first, from at most `limit` items. */
export async function dynamoOldestLeases(
  client: DynamoDbClientLike,
  table: string,
  now: number,
  count: number,
  limit: number,
): Promise<RecordView[]> {
  const held: RecordView[] = [];
  const filter = {
    text: '#state <> :completed AND #dropAt > :now',
    values: { ':now': N(now), ':completed': { S: 'completed' } },
  };
  for await (const items of scan(client, table, 'list its leases', limit, filter)) {
    for (const item of items) {
      const record = readClaim(item);
      if (record) held.push(viewOf(record));
    }
  }
  return held.sort((a, b) => a.expiresAt.getTime() - b.expiresAt.getTime()).slice(0, count);
}

/**
 * Deletes the items whose life ended (what TTL deletes, for a table without it): each delete is
 * conditional on the life still being over, so a key claimed again meanwhile stays.
 */
export async function dynamoPurge(
  client: DynamoDbClientLike,
  table: string,
  now: number,
  limit: number,
): Promise<number> {
  let deleted = 0;
  const condition = '#dropAt <= :now';
  const values = { ':now': N(now) };
  for await (const items of scan(client, table, 'purge expired records', limit, {
    text: condition,
    values,
  })) {
    for (const item of items) {
      try {
        await client.send(
          new DeleteItemCommand({
            TableName: table,
            Key: { pk: item.pk ?? { S: '' } },
            ConditionExpression: condition,
            ...expression([condition], values),
          }),
        );
        deleted++;
      } catch (error) {
        if (errorName(error) !== 'ConditionalCheckFailedException')
          throw dynamoFailure(table, 'purge expired records', error);
      }
    }
  }
  return deleted;
}
