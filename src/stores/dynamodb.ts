/**
 * `onceonly/dynamodb`: a store on Amazon DynamoDB through the `DynamoDBClient` of
 * `@aws-sdk/client-dynamodb` you already have (an optional peer dependency: the store sends that
 * package's commands through your client, and nothing else of onceonly loads it).
 *
 * Every state change is one conditional write on the key's item. DynamoDB has no clock an
 * expression can read, so leases are measured on the callers' clocks, with a bound on how far
 * they may differ (`maxClockSkew`): see "Clock" in docs/dynamodb.md.
 */
import { type Duration, parseDuration, parsePositiveDuration } from '../core/duration.js';
import type { HealthAware } from '../core/health.js';
import { plainInbox } from '../core/inbox.js';
import { markBuiltin, type Store, type StoreAdmin } from '../core/types.js';
import { ConfigError } from '../errors.js';
import {
  createTable,
  dynamoDbTableInput,
  dynamoHealth,
  dynamoOldestLeases,
  dynamoPurge,
  dynamoStats,
} from './dynamodb/admin.js';
import { DYNAMODB_STEPS_MAX_BYTES, DynamoClaims, type DynamoDbClientLike } from './dynamodb/claims.js';
import { DYNAMODB_INBOX_MAX_BYTES, DynamoInbox } from './dynamodb/inbox.js';

export type { DynamoDbClientLike } from './dynamodb/claims.js';
export { DYNAMODB_INBOX_MAX_BYTES, DYNAMODB_STEPS_MAX_BYTES, dynamoDbTableInput };

export interface DynamoDbStoreOptions {
  /**
   * Your `DynamoDBClient` (from `@aws-sdk/client-dynamodb`). The store never destroys it. Give it a
   * request timeout below the receiver's `storeTimeout` so a stalled request fails rather than waits.
   * @example
   * const client = new DynamoDBClient({
   *   requestHandler: { requestTimeout: 1_000, connectionTimeout: 500 },
   *   maxAttempts: 3,
   * });
   * dynamoDbStore({ client, table: 'onceonly' })
   */
  client: DynamoDbClientLike;
  /**
   * The table: one partition key `pk` of type S and no sort key, TTL on the attribute `ttl`
   * and the inbox's index `inbox` (createDynamoDbTable, or the CloudFormation snippet in
   * docs/dynamodb.md). Give onceonly a table of its own: claims live under `k:`, the
   * ordering guard's versions under `v:`, inbox entries under `i:` and `ih:`.
   * @default 'onceonly'
   */
  table?: string;
  /**
   * The most the clocks of the processes sharing the table may differ. A lease is taken over only
   * once it ran out by this much on the taker's clock, so a host whose clock runs this far ahead
   * never takes a live lease. Keep hosts on NTP (Amazon Time Sync keeps EC2 and Lambda well within
   * it); raise it if yours may drift further. Takeovers after a crash wait this much longer.
   * @default '1s'
   * @example dynamoDbStore({ client, maxClockSkew: '5s' })
   */
  maxClockSkew?: Duration;
  /**
   * How long a released or run-out record is kept, takeable with its attempt, when the claim gives
   * no `retentionMs` (the receiver always gives its retention).
   * @default '1h'
   */
  leaseGrace?: Duration;
  /**
   * Whether `health()` reports a table without TTL on `ttl` as unhealthy. Turn off when you delete
   * expired items with {@link DynamoDbStore.purgeExpired} on a schedule instead.
   * @default true
   */
  checkTtl?: boolean;
  /**
   * The clock, in ms since the epoch: every lease and retention is measured on it.
   * @default Date.now
   */
  now?: () => number;
}

/** A DynamoDB store: the {@link Store} contract, health, the operator's views, and a purge for tables without TTL. */
export interface DynamoDbStore extends Store, StoreAdmin, HealthAware {
  /** The table's name. */
  readonly table: string;
  /**
   * Deletes the items whose life ended (completed keys past retention, takeable records past their
   * grace), at most `limit` items scanned (default 100,000). DynamoDB's TTL does this without cost
   * when it is on; use this on a table without TTL (and DynamoDB Local, which has none), scheduled.
   * Expired items read as absent either way. Returns how many it deleted.
   */
  purgeExpired(options?: { limit?: number }): Promise<number>;
}

const DEFAULT_TABLE = 'onceonly';
/** The most items stats(), oldestLeases() and purgeExpired() read in one call. */
const SCAN_LIMIT = 100_000;

/**
 * A store on DynamoDB. Each operation is one conditional PutItem or UpdateItem on the key's item (a
 * claim that takes over a released or run-out record takes two: the PutItem that finds it, then the
 * takeover); `inspect`
 * and `steps.load` are one strongly consistent GetItem. Durable steps live in the key's item, so
 * one key's steps hold at most {@link DYNAMODB_STEPS_MAX_BYTES} (350 KiB) on this store. Its inbox
 * (`store.inbox`) keeps entries in the same table, found through the `inbox` index: a delivery
 * holds at most {@link DYNAMODB_INBOX_MAX_BYTES} (256 KiB), its steps 96 KiB.
 *
 * @example
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
 * import { dynamoDbStore } from 'onceonly/dynamodb';
 * const store = dynamoDbStore({ client: new DynamoDBClient({}), table: 'onceonly' });
 */
export function dynamoDbStore(options: DynamoDbStoreOptions): DynamoDbStore {
  if (!options || typeof options !== 'object' || typeof options.client?.send !== 'function') {
    throw new ConfigError(
      'invalid_option',
      'onceonly: dynamoDbStore needs { client }: a DynamoDBClient from @aws-sdk/client-dynamodb',
    );
  }
  const { client } = options;
  const table = options.table ?? DEFAULT_TABLE;
  if (typeof table !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(table)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: dynamoDbStore table must be a DynamoDB table name (3 to 255 of A-Z a-z 0-9 _ - .), got ${String(table)}`,
    );
  }
  const skewMs = parseDuration(options.maxClockSkew ?? '1s', 'maxClockSkew');
  const graceMs = parsePositiveDuration(options.leaseGrace ?? '1h', 'leaseGrace');
  const now = options.now ?? Date.now;
  const claims = new DynamoClaims({ client, table, defaultGraceMs: graceMs, skewMs, now });
  const checkTtl = options.checkTtl !== false;
  const store: DynamoDbStore = {
    table,
    claim: (key, claimOptions) => claims.claim(key, claimOptions),
    confirm: (lease, confirmOptions) => claims.confirm(lease, confirmOptions),
    release: (lease) => claims.release(lease),
    extend: (lease, extendOptions) => claims.extend(lease, extendOptions),
    record: (key, recordOptions) => claims.record(key, recordOptions),
    advance: (entity, version) => claims.advance(entity, version),
    inspect: (key) => claims.inspect(key),
    steps: {
      maxBytes: DYNAMODB_STEPS_MAX_BYTES,
      load: (lease) => claims.loadSteps(lease),
      save: (lease, name, value) => claims.saveStep(lease, name, value),
    },
    inbox: plainInbox(
      new DynamoInbox({ client, table, now: () => claims.now(), skewMs, scanLimit: SCAN_LIMIT }),
    ),
    health: (scope) => dynamoHealth(client, table, checkTtl, scope?.inbox === true),
    stats: () => dynamoStats(client, table, claims.now(), skewMs, SCAN_LIMIT),
    oldestLeases: (limit) => dynamoOldestLeases(client, table, claims.now(), limit, SCAN_LIMIT),
    purgeExpired: (purge) => dynamoPurge(client, table, claims.now(), purge?.limit ?? SCAN_LIMIT),
    async close(): Promise<void> {
      // The client is the caller's: it stays open for the rest of their application.
    },
  };
  return markBuiltin('dynamodb', client, table, store);
}

/**
 * Creates the store's table when it is missing (one partition key `pk` of type S, on-demand
 * capacity), waits until it is active, and turns TTL on for `ttl` (`ttl: false` leaves it: DynamoDB
 * Local and dynalite have no TTL). For scripts and tests; in production prefer your infrastructure
 * code (the CloudFormation and CDK snippets in docs/dynamodb.md). Needs dynamodb:CreateTable,
 * DescribeTable and UpdateTimeToLive.
 *
 * @example
 * await createDynamoDbTable({ client, table: 'onceonly' });
 */
export async function createDynamoDbTable(options: {
  client: DynamoDbClientLike;
  table?: string;
  ttl?: boolean;
}): Promise<void> {
  await createTable(options.client, options.table ?? DEFAULT_TABLE, { ttl: options.ttl !== false });
}
