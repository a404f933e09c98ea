import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { DeleteTableCommand, GetItemCommand, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { type Dynalite, dynamoClient, startDynalite } from '../../test/support/dynalite.js';
import { checkHealth } from '../core/health.js';
import { RunSteps, StepError } from '../core/steps.js';
import type { Claim, Lease } from '../core/types.js';
import { ConfigError, StoreMisconfiguredError, StoreUnavailableError } from '../errors.js';
import { runConformance } from '../testing/index.js';
import { dynamoFailure } from './dynamodb/failure.js';
import { DYNAMODB_STEPS_MAX_BYTES, dynamoDbStore } from './dynamodb.js';

// Started before the suites register: a server that cannot start fails the file, never skips it.
const server: Dynalite = await startDynalite();
const client = dynamoClient(server.endpoint);
const table = await server.table('conf');
after(async () => {
  client.destroy();
  await server.stop();
});

// Every process of a test shares one host clock: a small skew bound keeps the time-based cases short.
const store = (options: Partial<Parameters<typeof dynamoDbStore>[0]> = {}) =>
  dynamoDbStore({ client, table, maxClockSkew: 50, ...options });

await runConformance({ name: 'dynamoDbStore on dynalite', factory: () => store() });

const LONG = 60_000;
function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<Claim, { status: 'acquired' }>).lease;
}
const unique = () => `dyn-test:${Math.random().toString(36).slice(2)}`;

describe('dynamoDbStore', () => {
  it('refuses a missing client and a table name DynamoDB would refuse', () => {
    assert.throws(() => dynamoDbStore({} as never), ConfigError);
    assert.throws(() => dynamoDbStore({ client, table: 'a' }), /table must be a DynamoDB table name/);
    assert.throws(() => dynamoDbStore({ client, maxClockSkew: '-1s' as never }), ConfigError);
  });

  it('a lease that ran out is not taken over until the clock skew bound passed too', async () => {
    let now = 1_000_000;
    const clocked = store({ maxClockSkew: '2s', now: () => now });
    const key = unique();
    const first = acquired(await clocked.claim(key, { leaseMs: 1_000, retentionMs: LONG }));
    now += 1_500; // ran out by 0.5 s: within the bound, a faster clock may be what says so
    const early = await clocked.claim(key, { leaseMs: 1_000 });
    assert.equal(early.status, 'in-flight');
    now += 2_000; // ran out by 2.5 s
    const taken = acquired(await clocked.claim(key, { leaseMs: 1_000 }));
    assert.equal(taken.attempt, 2);
    assert.equal(await clocked.confirm(first, { retentionMs: LONG }), false);
  });

  it('an item whose life ended but that TTL has not deleted reads as absent and starts a new life', async () => {
    let now = 2_000_000;
    const clocked = store({ now: () => now });
    const key = unique();
    const lease = acquired(await clocked.claim(key, { leaseMs: 1_000, retentionMs: 1_000 }));
    assert.equal(await clocked.steps!.save(lease, 'charge', '"pi_1"'), true);
    assert.equal(await clocked.release(lease), true);
    now += 5_000; // past the release's grace: the item is still there (no TTL deletion yet)
    assert.equal(await clocked.inspect(key), undefined);
    const fresh = acquired(await clocked.claim(key, { leaseMs: 1_000 }));
    assert.equal(fresh.attempt, 1, 'a new life');
    assert.deepEqual([...(await clocked.steps!.load(fresh))], [], 'with no steps');
    assert.equal(await clocked.confirm(fresh, { retentionMs: 1_000 }), true);
    now += 5_000;
    assert.deepEqual(await clocked.record(key, { retentionMs: 1_000 }), { duplicate: false });
  });

  it('keys longer than a partition key holds go through the whole life, apart from each other', async () => {
    const base = unique();
    const a = `${base}:${'é'.repeat(900)}a`;
    const b = `${base}:${'é'.repeat(900)}b`;
    const lease = acquired(await store().claim(a, { leaseMs: LONG }));
    assert.equal((await store().claim(b, { leaseMs: LONG })).status, 'acquired');
    assert.equal(await store().confirm(lease, { retentionMs: LONG }), true);
    assert.equal((await store().inspect(a))?.key, a);
    assert.equal((await store().inspect(b))?.state, 'processing');
  });

  it("keeps at most 350 KiB of one key's steps: the engine refuses past it with step_too_large", async () => {
    const lease = acquired(await store().claim(unique(), { leaseMs: LONG }));
    const steps = new RunSteps(store().steps, lease, 5_000, () => new AbortController().signal);
    const chunk = 'x'.repeat(60_000);
    let error: unknown;
    for (let i = 0; i < 10 && !error; i++)
      await steps.step(`part ${i}`, () => chunk).catch((e) => (error = e));
    assert.ok(error instanceof StepError && error.code === 'step_too_large', String(error));
    assert.match(
      String(error),
      new RegExp(`over the ${DYNAMODB_STEPS_MAX_BYTES} one key may keep on this store`),
    );
  });

  it('a save that the item cannot hold is a step_too_large StepError, not a store outage', async () => {
    const lease = acquired(await store().claim(unique(), { leaseMs: LONG }));
    const big = 'y'.repeat(210_000);
    assert.equal(await store().steps!.save(lease, 'a', big), true);
    await assert.rejects(
      store().steps!.save(lease, 'b', big),
      (e) => e instanceof StepError && e.code === 'step_too_large',
    );
  });

  it('health: the table and its key schema, and TTL (off on dynalite) unless checkTtl is off', async () => {
    const report = await checkHealth(store(), { timeoutMs: 5_000, maxClockSkewMs: 1_000 });
    assert.equal(report.store, 'dynamodb');
    assert.deepEqual(
      report.checks.map((c) => [c.name, c.ok]),
      [
        ['reachable', true],
        ['table', true],
        ['ttl', false],
      ],
    );
    assert.match(report.checks[2]!.detail!, /turn TTL on for attribute ttl/);
    const purging = await checkHealth(store({ checkTtl: false }), {
      timeoutMs: 5_000,
      maxClockSkewMs: 1_000,
    });
    assert.equal(purging.ok, true);
    const missing = await checkHealth(store({ table: 'no_such_table' }), {
      timeoutMs: 5_000,
      maxClockSkewMs: 1_000,
    });
    assert.equal(missing.ok, false);
    assert.match(missing.checks.find((c) => c.name === 'table')!.detail!, /no_such_table is missing/);
  });

  it('a missing table is store_missing_table naming the fix; an unreachable endpoint is unavailable', async () => {
    const missing = dynamoDbStore({ client, table: 'no_such_table' });
    await assert.rejects(
      missing.claim(unique(), { leaseMs: LONG }),
      (e) =>
        e instanceof StoreMisconfiguredError &&
        e.code === 'store_missing_table' &&
        /createDynamoDbTable/.test(e.message) &&
        /docs\/dynamodb\.md/.test(e.message),
    );
    const nowhere = dynamoClient('http://127.0.0.1:9');
    try {
      await assert.rejects(
        dynamoDbStore({ client: nowhere, table }).claim(unique(), { leaseMs: LONG }),
        (e) => e instanceof StoreUnavailableError && !(e instanceof StoreMisconfiguredError),
      );
    } finally {
      nowhere.destroy();
    }
  });

  it('errors by name: throttling is transient, a refused permission or login is a misconfiguration', () => {
    const named = (name: string, message = 'x') =>
      Object.assign(new Error(message), { name, $metadata: { httpStatusCode: 400 } });
    for (const name of [
      'ProvisionedThroughputExceededException',
      'ThrottlingException',
      'RequestLimitExceeded',
    ]) {
      const e = dynamoFailure('t', 'claim a key', named(name));
      assert.ok(!(e instanceof StoreMisconfiguredError) && /throttled/.test(e.message), name);
    }
    assert.equal(
      dynamoFailure('t', 'claim a key', named('AccessDeniedException')).code,
      'store_permission_denied',
    );
    assert.equal(
      dynamoFailure('t', 'claim a key', named('UnrecognizedClientException')).code,
      'store_auth_failed',
    );
    assert.equal(
      dynamoFailure('t', 'claim a key', named('ResourceNotFoundException')).code,
      'store_missing_table',
    );
    assert.equal(
      dynamoFailure(
        't',
        'claim a key',
        named('ValidationException', 'The provided key element does not match the schema'),
      ).code,
      'store_missing_table',
    );
  });

  it('an item onceonly did not write is store_foreign_value', async () => {
    const key = unique();
    await client.send(
      new PutItemCommand({ TableName: table, Item: { pk: { S: `k:${key}` }, other: { S: 'x' } } }),
    );
    await assert.rejects(
      store().claim(key, { leaseMs: LONG }),
      (e) => e instanceof StoreMisconfiguredError && e.code === 'store_foreign_value',
    );
  });

  it("reads what failed a condition from DynamoDB's answer (ALL_OLD), with no second request", async () => {
    // dynalite leaves ReturnValuesOnConditionCheckFailure out: this client adds the item as DynamoDB does.
    let reads = 0;
    const allOld = {
      async send(command: { input: Record<string, unknown> }) {
        if (command instanceof GetItemCommand) reads++;
        try {
          return await client.send(command as never);
        } catch (error) {
          if (command.input.ReturnValuesOnConditionCheckFailure === 'ALL_OLD') {
            const { Item } = await client.send(
              new GetItemCommand({
                TableName: table,
                Key: (command.input.Key ?? { pk: (command.input.Item as { pk: unknown }).pk }) as never,
                ConsistentRead: true,
              }),
            );
            Object.assign(error as object, { Item });
          }
          throw error;
        }
      },
    };
    const s = dynamoDbStore({ client: allOld, table, maxClockSkew: 50 });
    const key = unique();
    const lease = acquired(await s.claim(key, { leaseMs: LONG, fingerprint: 'a'.repeat(64) }));
    const busy = await s.claim(key, { leaseMs: LONG, fingerprint: 'b'.repeat(64) });
    assert.equal(busy.status === 'in-flight' && busy.sameFingerprint, false);
    assert.equal(await s.confirm(lease, { retentionMs: LONG }), true);
    assert.deepEqual(await s.claim(key, { leaseMs: LONG }), { status: 'completed', sameFingerprint: true });
    assert.deepEqual(await s.record(key, { retentionMs: LONG }), { duplicate: true });
    assert.equal(reads, 0, 'no GetItem of the store');
  });

  describe('operator views and purge', () => {
    let own: string;
    before(async () => {
      own = await server.table('admin');
    });
    after(async () => {
      await client.send(new DeleteTableCommand({ TableName: own }));
    });

    it('stats and oldestLeases count by state; purgeExpired deletes only ended lives', async () => {
      let now = 5_000_000;
      const s = dynamoDbStore({ client, table: own, maxClockSkew: 0, now: () => now });
      const live = acquired(await s.claim('live', { leaseMs: 10_000, retentionMs: 10_000 }));
      const stuck = acquired(await s.claim('stuck', { leaseMs: 1_000, retentionMs: 10_000 }));
      await s.release(acquired(await s.claim('failed', { leaseMs: 10_000, retentionMs: 10_000 })));
      await s.confirm(acquired(await s.claim('done', { leaseMs: 1_000 })), { retentionMs: 3_000 });
      await s.advance('entity', 1);
      now += 2_000;
      assert.deepEqual(await s.stats(), { processing: 1, takeable: 2, completed: 1 });
      const oldest = await s.oldestLeases(10);
      assert.deepEqual(
        oldest.map((v) => v.key),
        ['failed', 'stuck', 'live'],
      );
      assert.equal(stuck.attempt, 1);
      now += 2_000; // 'done' past its retention
      assert.equal(await s.purgeExpired(), 1);
      assert.equal(await s.inspect('done'), undefined);
      now += 20_000; // every life over
      assert.equal(await s.purgeExpired(), 3);
      assert.deepEqual(await s.stats(), { processing: 0, takeable: 0, completed: 0 });
      assert.equal(await s.advance('entity', 1), false, 'versions are kept');
      assert.equal(live.attempt, 1);
    });
  });
});
