import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { dynamoClient, startDynalite } from '../../test/support/dynalite.js';
import { checkHealth } from '../core/health.js';
import { StoreMisconfiguredError, type StoreUnavailableError } from '../errors.js';
import { createReceiver, hmac } from '../index.js';
import { runInboxConformance } from '../testing/index.js';
import { inboxIndexCheck } from './dynamodb/admin.js';
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

const entry = (key: string, body: Uint8Array, receiver = 'dyn-inbox-test') => ({
  key,
  receiver,
  fingerprint: 'f'.repeat(64),
  body,
  headers: [['content-type', 'application/octet-stream']] as [string, string][],
  receivedAt: new Date(),
});
const unique = () => `dyn-inbox:${Math.random().toString(36).slice(2)}`;

describe('dynamoDbStore inbox', () => {
  it('refuses a delivery its item cannot hold (store_full, 503), and keeps one at the bound', async () => {
    const over = new Uint8Array(DYNAMODB_INBOX_MAX_BYTES + 1);
    await assert.rejects(store.inbox!.accept(entry(unique(), over)), (error: StoreUnavailableError) => {
      assert.equal(error.code, 'store_full');
      assert.equal(error.status, 503);
      assert.match(error.message, /400 KB/);
      return true;
    });
    const fits = new Uint8Array(DYNAMODB_INBOX_MAX_BYTES - 2_000).fill(7);
    const key = unique();
    assert.equal((await store.inbox!.accept(entry(key, fits))).status, 'accepted');
    assert.equal((await store.inbox!.get(key))?.delivery?.body.length, fits.length);
  });

  it('take without a receiver finds due entries of every receiver (a bounded Scan)', async () => {
    const a = unique();
    const b = unique();
    await store.inbox!.accept(entry(a, new Uint8Array([1]), `${a}-r`));
    await store.inbox!.accept(entry(b, new Uint8Array([2]), `${b}-r`));
    const jobs = await store.inbox!.take({ limit: 1_000, leaseMs: 60_000 });
    const keys = jobs.map((j) => j.key);
    assert.ok(keys.includes(a) && keys.includes(b), 'both taken');
    assert.deepEqual(await store.inbox!.take({ limit: 1_000, leaseMs: 60_000 }), [], 'all leased now');
  });

  it('a table without the inbox index is a misconfiguration that names the index', async () => {
    const bare = `onceonly_bare_${Math.random().toString(36).slice(2, 8)}`;
    await client.send(
      new CreateTableCommand({
        TableName: bare,
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    const inbox = dynamoDbStore({ client, table: bare }).inbox!;
    await assert.rejects(inbox.take({ limit: 1, leaseMs: 1_000, receiver: 'r' }), (error: Error) => {
      assert.ok(error instanceof StoreMisconfiguredError);
      assert.match(error.message, /index "inbox"/);
      return true;
    });
  });

  it('health with the inbox in use checks its index: a table without it, or not projecting key, fails naming what to create', async () => {
    const health = (t: string, inbox: boolean) =>
      checkHealth(dynamoDbStore({ client, table: t, checkTtl: false }), {
        timeoutMs: 5_000,
        maxClockSkewMs: 1_000,
        inbox,
      });
    const check = (report: Awaited<ReturnType<typeof health>>) =>
      report.checks.find((c) => c.name === 'inbox-index');
    // The table createDynamoDbTable makes: the index is there, as the inbox queries it.
    const good = await health(table, true);
    assert.deepEqual(
      good.checks.map((c) => [c.name, c.ok]),
      [
        ['reachable', true],
        ['table', true],
        ['inbox-index', true],
      ],
    );
    assert.match(check(good)!.detail!, /^inbox ACTIVE \(iq S, idue N, projecting key\)$/);

    const made = async (name: string, index?: 'keys-only') => {
      const t = `onceonly_${name}_${Math.random().toString(36).slice(2, 8)}`;
      await client.send(
        new CreateTableCommand({
          TableName: t,
          AttributeDefinitions: [
            { AttributeName: 'pk', AttributeType: 'S' },
            ...(index ? [{ AttributeName: 'iq', AttributeType: 'S' as const }] : []),
            ...(index ? [{ AttributeName: 'idue', AttributeType: 'N' as const }] : []),
          ],
          KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
          ...(index
            ? {
                GlobalSecondaryIndexes: [
                  {
                    IndexName: 'inbox',
                    KeySchema: [
                      { AttributeName: 'iq', KeyType: 'HASH' as const },
                      { AttributeName: 'idue', KeyType: 'RANGE' as const },
                    ],
                    Projection: { ProjectionType: 'KEYS_ONLY' as const },
                  },
                ],
              }
            : {}),
          BillingMode: 'PAY_PER_REQUEST',
        }),
      );
      return t;
    };
    const bare = await made('noindex');
    // The fault is real: the table has no index at all.
    const described = await client.send(new DescribeTableCommand({ TableName: bare }));
    assert.equal(described.Table?.GlobalSecondaryIndexes, undefined);
    // Claims alone need no index: without the inbox the table is healthy and the index not looked at.
    const claimsOnly = await health(bare, false);
    assert.equal(claimsOnly.ok, true);
    assert.equal(check(claimsOnly), undefined);
    const missing = await health(bare, true);
    assert.equal(missing.ok, false);
    assert.equal(check(missing)?.ok, false);
    assert.match(check(missing)!.detail!, new RegExp(`^${bare} has no global secondary index inbox: `));
    assert.match(
      check(missing)!.detail!,
      /UpdateTable .*Create inbox \(partition key iq S, sort key idue N, projection INCLUDE key\)/,
    );
    assert.match(check(missing)!.detail!, /docs\/dynamodb\.md/);

    const keysOnly = await health(await made('keysonly', 'keys-only'), true);
    assert.equal(keysOnly.ok, false);
    assert.match(check(keysOnly)!.detail!, /index inbox projects KEYS_ONLY without the attribute key/);

    // A receiver in inbox mode asks for it: its readiness fails on the table without the index.
    const receiver = createReceiver({
      provider: hmac<{ id: string }>({
        name: 'noindex',
        secret: 's',
        signatureHeader: 'x-sig',
        id: (e) => e.id,
      }),
      store: dynamoDbStore({ client, table: bare, checkTtl: false }),
      inbox: true,
      handler: () => {},
    });
    const ready = await receiver.health();
    assert.equal(ready.ok, false);
    assert.equal(ready.checks.find((c) => c.name === 'inbox-index')?.ok, false);
  });

  it('the inbox-index check on a described index: backfilling fails until ACTIVE, another key schema fails', () => {
    // dynalite makes every index ACTIVE at once: these states are DynamoDB's, as DescribeTable gives them.
    const types = [
      { AttributeName: 'pk', AttributeType: 'S' },
      { AttributeName: 'iq', AttributeType: 'S' },
      { AttributeName: 'idue', AttributeType: 'N' },
    ];
    const index = (status: string, sort = 'idue') => ({
      IndexName: 'inbox',
      IndexStatus: status,
      KeySchema: [
        { AttributeName: 'iq', KeyType: 'HASH' },
        { AttributeName: sort, KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: ['key'] },
    });
    assert.equal(inboxIndexCheck('t1', [index('ACTIVE')], types).ok, true);
    assert.equal(inboxIndexCheck('t1', [index('UPDATING')], types).ok, true);
    const creating = inboxIndexCheck('t1', [index('CREATING')], types);
    assert.equal(creating.ok, false);
    assert.match(creating.detail!, /CREATING \(backfilling\): the inbox's take fails until it is ACTIVE/);
    const other = inboxIndexCheck('t1', [index('ACTIVE', 'pk')], types);
    assert.equal(other.ok, false);
    assert.match(
      other.detail!,
      /index inbox has key schema iq S HASH, pk S RANGE: the inbox needs partition key iq \(S\) and sort key idue \(N\)/,
    );
  });

  it('a receiver in inbox mode on this store: 202 accepted, runDue runs it once, a redelivery is a duplicate', async () => {
    const runs: string[] = [];
    const secret = 'dyn-inbox-secret';
    const space = `acme${Math.random().toString(36).slice(2, 8)}`;
    const receiver = createReceiver({
      provider: hmac<{ id: string }>({ name: space, secret, signatureHeader: 'x-sig', id: (e) => e.id }),
      store,
      inbox: { backoff: () => 20 },
      handler: ({ id }) => void runs.push(id!),
    });
    const send = () => {
      const body = JSON.stringify({ id: 'evt_1' });
      const sig = createHmac('sha256', secret).update(body).digest('hex');
      return receiver.fetch(
        new Request('https://example.com/hooks', { method: 'POST', body, headers: { 'x-sig': sig } }),
      );
    };
    assert.equal((await send()).status, 202);
    assert.deepEqual(runs, []);
    assert.equal(await receiver.runDue(), 1);
    assert.deepEqual(runs, ['evt_1']);
    assert.equal((await send()).headers.get('onceonly-outcome'), 'duplicate');
    assert.equal(await receiver.runDue(), 0);
    assert.deepEqual(runs, ['evt_1'], 'ran once');
  });
});
