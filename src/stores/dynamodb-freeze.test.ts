/**
 * The DynamoDB store behind a frozen server: dynalite reached through a TCP relay that, once frozen,
 * passes no byte either way and leaves every connection open (a SIGSTOPped server, or a network
 * that drops packets). The client has no request timeout of its own, so nothing but onceonly's
 * `storeTimeout` ends a call. Each path first shows the freeze held (a direct call stays pending),
 * then that it ended in an outcome within its bound; after the thaw the same store works.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { connect, createServer, type Socket } from 'node:net';
import { after, describe, it } from 'node:test';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Dynalite, startDynalite } from '../../test/support/dynalite.js';
import { createReceiver, hmac, once } from '../index.js';
import { dynamoDbStore } from './dynamodb.js';

const server: Dynalite = await startDynalite();
const table = await server.table('freeze');
const upstream = new URL(server.endpoint);

/** A relay to dynalite that can freeze: bytes held both ways, connections kept open. */
let frozen = false;
const held: (() => void)[] = [];
const sockets = new Set<Socket>();
const relay = createServer((client) => {
  const target = connect(Number(upstream.port), upstream.hostname);
  for (const socket of [client, target]) sockets.add(socket);
  const forward = (from: Socket, to: Socket) =>
    from.on('data', (chunk) => {
      const send = () => to.write(chunk);
      if (frozen) held.push(send);
      else send();
    });
  forward(client, target);
  forward(target, client);
  const end = () => {
    for (const socket of [client, target]) {
      sockets.delete(socket);
      socket.destroy();
    }
  };
  client.on('error', end).on('close', end);
  target.on('error', end).on('close', end);
});
await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
const port = (relay.address() as { port: number }).port;
function freeze(on: boolean) {
  frozen = on;
  if (!on) for (const send of held.splice(0)) send();
}

// No requestTimeout: a frozen server holds a request for ever unless onceonly ends the wait.
const client = new DynamoDBClient({
  endpoint: `http://127.0.0.1:${port}`,
  region: 'us-east-1',
  credentials: { accessKeyId: 'onceonly', secretAccessKey: 'onceonly' },
  maxAttempts: 1,
});
const store = dynamoDbStore({ client, table, maxClockSkew: 50 });
after(async () => {
  freeze(false);
  client.destroy();
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((resolve) => relay.close(() => resolve()));
  await server.stop();
});

const STORE_TIMEOUT = 300;
const unique = () => `freeze:${Math.random().toString(36).slice(2)}`;

/** Asserts the freeze holds: a direct store call gets no answer within 600 ms. */
async function assertFrozen() {
  const probe = store.inspect(unique()).then(
    () => 'answered',
    () => 'failed',
  );
  const seen = await Promise.race([probe, new Promise((r) => setTimeout(() => r('pending'), 600))]);
  assert.equal(seen, 'pending', 'the server is frozen: a direct call hangs');
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = Date.now();
  const value = await fn();
  return { value, ms: Date.now() - started };
}

function signed(secret: string, id: string): Request {
  const body = JSON.stringify({ id });
  const sig = createHmac('sha256', secret).update(body).digest('hex');
  return new Request('https://example.com/hooks', { method: 'POST', body, headers: { 'x-sig': sig } });
}

describe('dynamoDbStore behind a frozen server', () => {
  it('once(): the claim ends in store_timeout within storeTimeout, the work never runs; after the thaw it runs', async () => {
    const key = unique();
    let runs = 0;
    freeze(true);
    try {
      await assertFrozen();
      const { value, ms } = await timed(() =>
        once(store, key, () => void runs++, { storeTimeout: STORE_TIMEOUT, logger: false }).then(
          () => undefined,
          (error: { code?: string }) => error.code,
        ),
      );
      assert.equal(value, 'store_timeout');
      assert.ok(ms < STORE_TIMEOUT + 700, `ended in ${ms} ms`);
      assert.equal(runs, 0);
    } finally {
      freeze(false);
    }
    const result = await once(store, key, () => void runs++, { storeTimeout: 5_000, logger: false });
    assert.equal(result.outcome, 'processed');
    assert.equal(runs, 1);
  });

  it('a receiver: 503 store_timeout within its bound, the handler never runs; a freeze after the handler: answered, degraded', async () => {
    const secret = 'freeze-secret';
    let runs = 0;
    let freezeInHandler = false;
    const receiver = createReceiver({
      provider: hmac<{ id: string }>({ name: 'freeze', secret, signatureHeader: 'x-sig', id: (e) => e.id }),
      store,
      storeTimeout: STORE_TIMEOUT,
      lease: '2s',
      logger: false,
      handler: () => {
        runs++;
        if (freezeInHandler) freeze(true);
      },
    });
    freeze(true);
    try {
      await assertFrozen();
      const { value, ms } = await timed(() => receiver.fetch(signed(secret, unique())));
      assert.equal(value.status, 503);
      assert.equal((await value.json()).code, 'store_timeout');
      assert.ok(ms < STORE_TIMEOUT + 700, `answered in ${ms} ms`);
      assert.equal(runs, 0);
      const health = await timed(() => receiver.health({ timeout: STORE_TIMEOUT }));
      assert.equal(health.value.ok, false);
      assert.ok(health.ms < STORE_TIMEOUT + 700, `health in ${health.ms} ms`);
    } finally {
      freeze(false);
    }
    // Frozen between the claim and the confirm: the answer still comes, within the lease.
    freezeInHandler = true;
    try {
      const { value, ms } = await timed(() => receiver.fetch(signed(secret, unique())));
      assert.equal(runs, 1);
      assert.equal(value.headers.get('onceonly-outcome'), 'processed');
      assert.equal(value.headers.get('onceonly-degraded'), 'confirm-failed');
      assert.ok(ms < 2_000 + 700, `answered in ${ms} ms`);
    } finally {
      freeze(false);
    }
  });

  it('an inbox receiver: accept answers 503 within its bound, runDue ends; after the thaw both work', async () => {
    const secret = 'freeze-inbox-secret';
    const runs: string[] = [];
    const receiver = createReceiver({
      provider: hmac<{ id: string }>({
        name: 'freezeinbox',
        secret,
        signatureHeader: 'x-sig',
        id: (e) => e.id,
      }),
      store,
      storeTimeout: STORE_TIMEOUT,
      inbox: { backoff: () => 20 },
      logger: false,
      handler: ({ id }) => void runs.push(id!),
    });
    const id = unique();
    freeze(true);
    try {
      await assertFrozen();
      const accepted = await timed(() => receiver.fetch(signed(secret, id)));
      assert.equal(accepted.value.status, 503);
      assert.ok(accepted.ms < STORE_TIMEOUT + 700, `answered in ${accepted.ms} ms`);
      const ran = await timed(() =>
        receiver.runDue().then(
          (n) => n,
          (error: { code?: string }) => error.code,
        ),
      );
      assert.ok(ran.ms < STORE_TIMEOUT * 2 + 1_000, `runDue ended in ${ran.ms} ms`);
      assert.deepEqual(runs, []);
    } finally {
      freeze(false);
    }
    // The held accept may land at the thaw (as on a server that was stopped, not lost): the
    // redelivery is then a duplicate; either way the entry runs once.
    const again = await receiver.fetch(signed(secret, id));
    assert.ok(
      again.status === 202 || again.headers.get('onceonly-outcome') === 'duplicate',
      `${again.status} ${again.headers.get('onceonly-outcome')}`,
    );
    let ran = 0;
    for (let i = 0; i < 20 && ran === 0; i++) ran += await receiver.runDue();
    assert.equal(ran, 1);
    assert.deepEqual(runs, [id]);
  });
});
