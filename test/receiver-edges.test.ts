/**
 * The promise at its edges, at the receiver: key spaces that two endpoints cannot share by accident,
 * keys that any sender id maps onto, a body that cannot run under another unsigned type, store calls
 * with a deadline, timers past 2^31 ms, no input that makes receive() or fetch() reject, and every
 * failure logged without onOutcome.
 */
import { strict as assert } from 'node:assert';
import { createHmac, sign as ecSign, generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { wheel } from '../src/core/timers.js';
import {
  ConfigError,
  createReceiver,
  type DeliveryResult,
  type HandlerContext,
  hmac,
  type Logger,
  memoryStore,
  once,
  type Provider,
  type Store,
  StoreMisconfiguredError,
} from '../src/index.js';
import { github, sendgrid, shopify } from '../src/providers/index.js';
import { twilioSignature } from './support/twilio-signature.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function acme(secret = 'acme-secret-one', name = 'acme') {
  return hmac<{ id: string; type: string }>({
    name,
    secret,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => event.id,
    type: (event) => event.type,
  });
}

function signed(body: string, secret = 'acme-secret-one'): Request {
  const ts = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
  return new Request('http://localhost/hooks', {
    method: 'POST',
    body,
    headers: { 'x-acme-signature': `sha256=${sig}`, 'x-acme-timestamp': String(ts) },
  });
}

/** A logger that keeps its lines. */
function recorder() {
  const lines: { level: 'warn' | 'error'; message: string; detail: unknown[] }[] = [];
  const logger: Logger = {
    warn: (message, ...detail) => void lines.push({ level: 'warn', message, detail }),
    error: (message, ...detail) => void lines.push({ level: 'error', message, detail }),
  };
  return { lines, logger };
}

describe('key spaces: two endpoints on one store never share keys by accident', () => {
  it('refuses a second endpoint of the same provider (another secret) on one store, naming the fix', () => {
    const store = memoryStore();
    createReceiver({ provider: acme('secret-a'), store, handler: () => {} });
    assert.throws(
      () => createReceiver({ provider: acme('secret-b'), store, handler: () => {} }),
      (error: unknown) =>
        error instanceof ConfigError && error.code === 'key_space_taken' && /name:/.test(error.message),
    );
  });

  it('takes a store wrapped in a Proxy that answers every property as its own backend', async () => {
    // A test double or an instrumenting wrapper: every property read returns a function, the
    // library's backend mark included. It must not be taken for a mark (it threw "Invalid value
    // used as weak map key" inside createReceiver before).
    const inner = memoryStore();
    const calls: string[] = [];
    const wrapped = new Proxy(inner, {
      get: (target, name, receiver) => {
        const value = Reflect.get(target, name, receiver);
        if (typeof value !== 'function') return () => undefined;
        return (...args: unknown[]) => {
          calls.push(String(name));
          return value.apply(target, args);
        };
      },
    }) as Store;
    const receiver = createReceiver({ provider: acme(), store: wrapped, handler: () => {}, logger: false });
    const result = await receiver.receive(await asInput(signed(JSON.stringify({ id: 'evt_p', type: 't' }))));
    assert.equal(result.outcome, 'processed');
    assert.ok(calls.includes('claim'), `the wrapped store was used: ${calls.join(', ')}`);
    // A second endpoint on the same wrapper is still refused: the wrapper is one backend.
    assert.throws(
      () => createReceiver({ provider: acme('secret-b'), store: wrapped, handler: () => {} }),
      (error: unknown) => error instanceof ConfigError && error.code === 'key_space_taken',
    );
  });

  it('runs both handlers for the same event id when each endpoint has its own name', async () => {
    const store = memoryStore();
    const ran: string[] = [];
    const billing = createReceiver({
      name: 'billing',
      provider: acme('secret-a'),
      store,
      handler: () => void ran.push('billing'),
      logger: false,
    });
    const shop = createReceiver({
      name: 'shop',
      provider: acme('secret-b'),
      store,
      handler: () => void ran.push('shop'),
      logger: false,
    });
    const body = JSON.stringify({ id: 'evt_1', type: 't' });
    const a = await billing.receive(await asInput(signed(body, 'secret-a')));
    const b = await shop.receive(await asInput(signed(body, 'secret-b')));
    assert.deepEqual([a.outcome, b.outcome], ['processed', 'processed']);
    assert.deepEqual([a.key, b.key], ['billing:evt_1', 'shop:evt_1']);
    assert.deepEqual(ran, ['billing', 'shop']);
    assert.equal(a.receiver, 'billing');
  });

  it('lets the same endpoint be created again at the same place (a module reloaded) and shares its keys', async () => {
    const store = memoryStore();
    // One route module, evaluated twice (dev-server reload): the same call site, the same secret.
    const route = () => createReceiver({ provider: acme(), store, handler: () => {}, logger: false });
    const first = route();
    const again = route();
    const body = JSON.stringify({ id: 'evt_2', type: 't' });
    assert.equal((await first.receive(await asInput(signed(body)))).outcome, 'processed');
    assert.equal((await again.receive(await asInput(signed(body)))).outcome, 'duplicate');
  });

  it('refuses two routes with one secret on one store (GitHub repo and org hooks, a Shopify app)', () => {
    const store = memoryStore();
    createReceiver({ provider: acme('shared'), store, handler: () => {} });
    assert.throws(
      () => createReceiver({ provider: acme('shared'), store, handler: () => {} }),
      (error: unknown) => error instanceof ConfigError && error.code === 'key_space_taken',
    );
  });

  it('refuses a second receiver on another store object over the same client and table', async () => {
    const { default: pg } = await import('pg');
    const { postgresStore } = await import('../src/stores/postgres.js');
    const { redisStore } = await import('../src/stores/redis.js');
    const { createClient } = await import('redis');
    const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    const client = createClient({ url: 'redis://127.0.0.1:6379' });
    try {
      createReceiver({ provider: acme('a'), store: postgresStore({ client: pool }), handler: () => {} });
      assert.throws(
        () =>
          createReceiver({ provider: acme('b'), store: postgresStore({ client: pool }), handler: () => {} }),
        /key space|already keys/,
      );
      // Another table on the same pool is another backend.
      createReceiver({
        provider: acme('b'),
        store: postgresStore({ client: pool, table: 'other_keys' }),
        handler: () => {},
      });
      createReceiver({
        provider: acme('a'),
        store: redisStore({ client, checkOfflineQueue: false }),
        handler: () => {},
      });
      assert.throws(
        () =>
          createReceiver({
            provider: acme('b'),
            store: redisStore({ client, checkOfflineQueue: false }),
            handler: () => {},
          }),
        /already keys/,
      );
    } finally {
      await pool.end();
    }
  });

  it('shares a space on purpose only when both receivers name it explicitly', async () => {
    const store = memoryStore();
    const one = createReceiver({
      name: 'resend',
      provider: acme('a'),
      store,
      handler: () => {},
      logger: false,
    });
    const two = createReceiver({
      name: 'resend',
      provider: acme('b'),
      store,
      handler: () => {},
      logger: false,
    });
    const body = JSON.stringify({ id: 'evt_3', type: 't' });
    assert.equal((await one.receive(await asInput(signed(body, 'a')))).outcome, 'processed');
    assert.equal((await two.receive(await asInput(signed(body, 'b')))).outcome, 'duplicate');
    assert.throws(
      () => createReceiver({ provider: acme('c', 'resend'), store, handler: () => {} }),
      /resend/,
    );
  });

  it('refuses a custom provider without identity twice on one store, and a bad name', () => {
    const store = memoryStore();
    const custom = (): Provider => ({
      name: 'custom',
      retentionMs: 1000,
      verify: () => ({ event: {}, dedup: 'none' }),
    });
    createReceiver({ provider: custom(), store, handler: () => {} });
    assert.throws(() => createReceiver({ provider: custom(), store, handler: () => {} }), /key_space|custom/);
    assert.throws(
      () => createReceiver({ name: 'a:b', provider: custom(), store, handler: () => {} }),
      /name/,
    );
    assert.throws(() => createReceiver({ name: '', provider: custom(), store, handler: () => {} }), /name/);
  });
});

describe('keys: every sender id maps to one valid, distinct key', () => {
  it('keeps plain ids readable and hashes long, unprintable and surrogate ids losslessly', async () => {
    const store = memoryStore();
    const results: DeliveryResult[] = [];
    const receiver = createReceiver({
      provider: acme(),
      store,
      handler: () => {},
      onOutcome: (r) => void results.push(r),
      logger: false,
      maxBodyBytes: 4 * 1024 * 1024,
    });
    const ids = [
      'evt_plain',
      'evt_\ud800',
      'evt_\udbff',
      'evt_\u0000x',
      'e'.repeat(1024 * 1024),
      '~evt',
      'evt with space',
    ];
    for (const id of ids) {
      const r = await receiver.receive(await asInput(signed(JSON.stringify({ id, type: 't' }))));
      assert.equal(r.outcome, 'processed', `processed ${JSON.stringify(id.slice(0, 20))}`);
    }
    const keys = results.map((r) => r.key ?? '');
    assert.equal(keys[0], 'acme:evt_plain');
    for (const key of keys.slice(1)) assert.match(key, /^acme:~sha256:[A-Za-z0-9_-]{43}$/);
    assert.equal(new Set(keys).size, ids.length, 'distinct ids, distinct keys');
    const again = await receiver.receive(
      await asInput(signed(JSON.stringify({ id: 'evt_\ud800', type: 't' }))),
    );
    assert.equal(again.outcome, 'duplicate', 'the same odd id maps to the same key');
  });

  it('once() takes any string as its key', async () => {
    const store = memoryStore();
    const runs: string[] = [];
    for (const key of ['k\u0000', 'k\ud800', 'k\udbff', 'x'.repeat(100_000)]) {
      const r = await once(store, key, () => void runs.push(key), { logger: false });
      assert.equal(r.outcome, 'processed');
      assert.equal(
        (await once(store, key, () => void runs.push(key), { logger: false })).outcome,
        'duplicate',
      );
    }
    assert.equal(runs.length, 4);
  });
});

describe('an ignored delivery cannot be replayed under another type', () => {
  const SECRET = 'gh-secret';
  function gh(body: string, event: string): Request {
    const sig = createHmac('sha256', SECRET).update(body).digest('hex');
    return new Request('http://localhost/gh', {
      method: 'POST',
      body,
      headers: {
        'x-hub-signature-256': `sha256=${sig}`,
        'x-github-event': event,
        'x-github-delivery': crypto.randomUUID(),
        'content-type': 'application/json',
      },
    });
  }

  it('GitHub: a body ignored as `issues` and resent as `push` is a conflict, and push never runs', async () => {
    const ran: string[] = [];
    const receiver = createReceiver({
      provider: github({ secret: SECRET }),
      store: memoryStore(),
      on: { push: () => void ran.push('push') },
      logger: false,
    });
    const body = JSON.stringify({ action: 'opened', number: 7 });
    assert.equal((await receiver.fetch(gh(body, 'issues'))).headers.get('onceonly-outcome'), 'ignored');
    const replay = await receiver.fetch(gh(body, 'push'));
    assert.equal(replay.status, 200, 'acknowledged: the sender is not made to retry it');
    assert.equal(replay.headers.get('onceonly-outcome'), 'conflict');
    assert.equal((await replay.json()).code, 'type_mismatch');
    assert.deepEqual(ran, []);
    // The provider's own redelivery of the ignored one stays harmless.
    assert.equal((await receiver.fetch(gh(body, 'issues'))).status, 200);
  });

  it('GitHub: a body that failed as `push` and was released cannot be taken over as `release`', async () => {
    const ran: string[] = [];
    const receiver = createReceiver({
      provider: github({ secret: SECRET }),
      store: memoryStore(),
      on: {
        push: () => {
          ran.push('push');
          throw new Error('down');
        },
        release: () => void ran.push('release'),
      },
      logger: false,
    });
    const body = JSON.stringify({ ref: 'refs/heads/main', after: 'abc' });
    assert.equal((await receiver.fetch(gh(body, 'push'))).status, 500);
    const replay = await receiver.fetch(gh(body, 'release'));
    assert.equal(replay.headers.get('onceonly-outcome'), 'conflict');
    assert.deepEqual(ran, ['push']);
    assert.equal((await receiver.fetch(gh(body, 'push'))).status, 500, 'the real retry still gets in');
    assert.deepEqual(ran, ['push', 'push']);
  });

  it('Shopify: an ignored orders/create body resent as orders/paid does not run orders/paid', async () => {
    const secret = 'shpss_test_secret';
    const ran: string[] = [];
    const receiver = createReceiver({
      provider: shopify({ secret }),
      store: memoryStore(),
      on: { 'orders/paid': () => void ran.push('paid') },
      logger: false,
    });
    const body = JSON.stringify({ id: 820982911946154500, total_price: '10.00' });
    const send = (topic: string) =>
      receiver.fetch(
        new Request('http://localhost/shop', {
          method: 'POST',
          body,
          headers: {
            'x-shopify-hmac-sha256': createHmac('sha256', secret).update(body).digest('base64'),
            'x-shopify-topic': topic,
            'x-shopify-webhook-id': crypto.randomUUID(),
          },
        }),
      );
    assert.equal((await send('orders/create')).headers.get('onceonly-outcome'), 'ignored');
    assert.equal((await send('orders/paid')).headers.get('onceonly-outcome'), 'conflict');
    assert.deepEqual(ran, []);
  });
});

describe('no input makes receive() or fetch() reject', () => {
  function sendgridBatch(payload: string) {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
    const ts = String(Math.floor(Date.now() / 1000));
    const headers = {
      'x-twilio-email-event-webhook-signature': ecSign(
        'sha256',
        Buffer.from(ts + payload),
        privateKey,
      ).toString('base64'),
      'x-twilio-email-event-webhook-timestamp': ts,
      'content-type': 'application/json',
    };
    return {
      provider: sendgrid({ publicKey: publicKey.export({ type: 'spki', format: 'der' }).toString('base64') }),
      headers,
    };
  }

  it('a signed SendGrid batch nested 200,000 deep is refused 400, through receive() and fetch()', async () => {
    const depth = 200_000;
    const payload = `[{"sg_event_id":"a","event":"delivered","n":${'['.repeat(depth)}${']'.repeat(depth)}}]`;
    const { provider, headers } = sendgridBatch(payload);
    const receiver = createReceiver({
      provider,
      store: memoryStore(),
      handler: () => {},
      logger: false,
      maxBodyBytes: 1e6,
    });
    const result = await receiver.receive({ rawBody: payload, headers });
    assert.equal(result.outcome, 'rejected');
    assert.equal(result.status, 400);
    assert.equal(result.code, 'invalid_body');
    const again = createReceiver({
      name: 'sendgrid-2',
      provider,
      store: memoryStore(),
      handler: () => {},
      logger: false,
      maxBodyBytes: 1e6,
    });
    const res = await again.fetch(
      new Request('http://localhost/sg', { method: 'POST', body: payload, headers }),
    );
    assert.equal(res.status, 400);
  });

  it('a provider that throws a configuration error on delivery gives a 500 outcome, logged, not a rejection', async () => {
    const { lines, logger } = recorder();
    const provider: Provider = {
      name: 'needs-url',
      retentionMs: 1000,
      verify: () => {
        throw new ConfigError('invalid_option', 'onceonly: set url');
      },
    };
    const receiver = createReceiver({ provider, store: memoryStore(), handler: () => {}, logger });
    const res = await receiver.fetch(new Request('http://localhost/x', { method: 'POST', body: '{}' }));
    assert.equal(res.status, 500);
    assert.equal((await res.json()).code, 'invalid_option');
    assert.equal(lines[0]?.level, 'error');
  });

  it('an error nobody expected (a throwing handler context getter, say) still ends in an outcome', async () => {
    const provider: Provider = {
      name: 'weird',
      retentionMs: 1000,
      verify: () => ({
        event: {},
        dedup: 'id',
        get id(): string {
          throw new Error('a getter that throws');
        },
      }),
    };
    const receiver = createReceiver({ provider, store: memoryStore(), handler: () => {}, logger: false });
    const result = await receiver.receive({ rawBody: '{}', headers: {} });
    assert.equal(result.status, 500);
    assert.equal(result.code, 'internal_error');
  });
});

describe('refused bodies are really cancelled', () => {
  function trickle(chunks: number, size: number) {
    const state = { cancelled: false as boolean | unknown, pulled: 0 };
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        state.pulled++;
        if (state.pulled > chunks) controller.close();
        else controller.enqueue(new Uint8Array(size));
      },
      cancel(reason) {
        state.cancelled = reason ?? true;
      },
    });
    return { stream, state };
  }

  it('a body over maxBodyBytes without a Content-Length cancels its stream (413)', async () => {
    const { stream, state } = trickle(100, 1024);
    const receiver = createReceiver({
      provider: acme(),
      store: memoryStore(),
      handler: () => {},
      maxBodyBytes: 4096,
    });
    const result = await receiver.receive({ rawBody: stream, headers: {} });
    assert.equal(result.status, 413);
    assert.notEqual(state.cancelled, false, 'the source was told to stop');
    assert.ok(state.pulled < 20, `reading stopped near the limit (pulled ${state.pulled})`);
  });

  it('a body slower than bodyTimeout cancels its stream (408)', async () => {
    const state = { cancelled: false };
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new Uint8Array(10));
      },
      cancel() {
        state.cancelled = true;
      },
    });
    const receiver = createReceiver({
      provider: acme(),
      store: memoryStore(),
      handler: () => {},
      bodyTimeout: '100ms',
    });
    const result = await receiver.receive({ rawBody: stream, headers: {} });
    assert.equal(result.status, 408);
    assert.equal(state.cancelled, true);
  });
});

describe('durations past 2^31 - 1 ms', () => {
  it('a 30-day timeout does not fail a 50 ms job (once and the receiver, also fail-open)', async () => {
    const store = memoryStore();
    const r = await once(store, 'long', () => sleep(50).then(() => 'ok'), { timeout: '30d', logger: false });
    assert.equal(r.outcome, 'processed');
    const receiver = createReceiver({
      provider: acme(),
      store: { ...memoryStore(), claim: () => Promise.reject(new Error('down')) },
      onStoreError: 'open',
      timeout: '30d',
      handler: () => sleep(50),
      logger: false,
    });
    const result = await receiver.fetch(signed(JSON.stringify({ id: 'evt_long', type: 't' })));
    assert.equal(result.headers.get('onceonly-outcome'), 'processed');
  });

  it('a 90-day lease is not extended in a loop', async () => {
    const inner = memoryStore();
    let extends_ = 0;
    const store: Store = {
      ...inner,
      extend: (l, o) => {
        extends_++;
        return inner.extend(l, o);
      },
    };
    const r = await once(store, 'ninety', () => sleep(200), { lease: '90d', timeout: '1h', logger: false });
    assert.equal(r.outcome, 'processed');
    assert.equal(extends_, 0, 'the first beat is 24.8 days away');
  });
});

describe("the handler's context is a plain object to the handler", () => {
  async function contextOf(): Promise<{ ctx: HandlerContext<unknown> }> {
    let seen: HandlerContext<unknown> | undefined;
    const receiver = createReceiver({
      provider: acme('secret-ctx'),
      name: 'ctx-shape',
      store: memoryStore(),
      logger: false,
      handler: (ctx) => {
        seen = ctx;
      },
    });
    const result = await receiver.receive(
      await asInput(signed(JSON.stringify({ id: `evt_ctx_${Math.random()}`, type: 't' }), 'secret-ctx')),
    );
    assert.equal(result.outcome, 'processed');
    return { ctx: seen! };
  }

  it('signal and delivery.headers are own enumerable properties: a spread, Object.keys, a Proxy and Object.create see them', async () => {
    const { ctx } = await contextOf();
    assert.ok({ ...ctx }.signal instanceof AbortSignal, 'a spread keeps signal');
    assert.ok({ ...ctx.delivery }.headers instanceof Headers, 'a spread keeps headers');
    assert.ok(Object.keys(ctx).includes('signal'));
    assert.ok(Object.keys(ctx.delivery).includes('headers'));
    assert.ok(new Proxy(ctx, {}).signal instanceof AbortSignal, 'through a Proxy');
    assert.ok(
      (Object.create(ctx) as HandlerContext<unknown>).signal instanceof AbortSignal,
      'through a child',
    );
    assert.ok(
      (Object.create(ctx.delivery) as HandlerContext<unknown>['delivery']).headers instanceof Headers,
      'a child of delivery',
    );
    assert.deepEqual(
      Object.keys(JSON.parse(JSON.stringify({ ...ctx, signal: undefined, delivery: undefined }))).sort(),
      ['attempt', 'event', 'id', 'key', 'lease', 'type'],
      'nothing else shows',
    );
  });

  it("once()'s work context too", async () => {
    let seen: { signal: AbortSignal } | undefined;
    await once(memoryStore(), 'ctx-shape', (ctx) => {
      seen = ctx;
    });
    assert.ok({ ...seen! }.signal instanceof AbortSignal);
    assert.ok((Object.create(seen!) as { signal: AbortSignal }).signal instanceof AbortSignal);
    assert.ok(Object.keys(seen!).includes('signal'));
  });
});

describe('storeTimeout: a store call that never answers is a store error', () => {
  const hanging = () => new Promise<never>(() => {});

  it('fail-closed: a claim that hangs answers 503 store_timeout within the deadline', async () => {
    const store: Store = { ...memoryStore(), claim: hanging };
    const receiver = createReceiver({
      provider: acme(),
      store,
      handler: () => {},
      storeTimeout: '200ms',
      logger: false,
    });
    const started = Date.now();
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_h1', type: 't' })));
    const took = Date.now() - started;
    assert.equal(res.status, 503);
    assert.equal((await res.json()).code, 'store_timeout');
    assert.ok(took >= 190 && took < 1_500, `answered after ${took} ms`);
  });

  it('the memory store (every call answered before it returns) gets no deadline; one with a method swapped in does', async (t) => {
    // Arrange: count the deadlines armed on the shared timer wheel.
    const add = t.mock.method(wheel, 'add');
    const plain = createReceiver({
      provider: acme(),
      store: memoryStore(),
      handler: () => {},
      logger: false,
    });
    // Act
    const first = await plain.receive(await asInput(signed(JSON.stringify({ id: 'evt_i1', type: 't' }))));
    // Assert: claim and confirm ran with no timer.
    assert.equal(first.outcome, 'processed');
    assert.equal(add.mock.callCount(), 0, 'no deadline for the memory store');

    // A memory store whose claim was replaced (a test double that hangs) is not answered inline.
    const patched = memoryStore();
    patched.claim = hanging;
    const receiver = createReceiver({
      provider: acme('secret-patched'),
      name: 'patched',
      store: patched,
      handler: () => {},
      storeTimeout: '200ms',
      logger: false,
    });
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_i2', type: 't' }), 'secret-patched'));
    assert.equal(res.status, 503);
    assert.equal((await res.json()).code, 'store_timeout');
    assert.ok(add.mock.callCount() >= 1, 'the swapped-in claim got its deadline');
  });

  it('decides the deadline at each call: a memory store whose confirm is swapped while the handler runs gets it', async () => {
    // Arrange: the store's confirm goes away mid-delivery, as a test double or an outage injector does.
    const store = memoryStore();
    const receiver = createReceiver({
      provider: acme('secret-swap'),
      name: 'swap',
      store,
      storeTimeout: '200ms',
      logger: false,
      handler: async () => {
        store.confirm = hanging;
      },
    });
    // Act
    const started = Date.now();
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_sw', type: 't' }), 'secret-swap'));
    // Assert: answered within the deadline, degraded, not hung.
    assert.equal(res.headers.get('onceonly-degraded'), 'confirm-failed');
    assert.ok(Date.now() - started < 2_000, `answered after ${Date.now() - started} ms`);
  });

  it('fail-open: a claim that hangs runs the handler degraded', async () => {
    const store: Store = { ...memoryStore(), claim: hanging };
    let ran = 0;
    const receiver = createReceiver({
      provider: acme(),
      store,
      onStoreError: 'open',
      handler: () => void ran++,
      storeTimeout: '200ms',
      logger: false,
    });
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_h2', type: 't' })));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
    assert.equal(ran, 1);
  });

  it('a finished handler whose confirm hangs answers processed, confirm-failed, within the deadline', async () => {
    const store: Store = { ...memoryStore(), confirm: hanging };
    const receiver = createReceiver({
      provider: acme(),
      store,
      handler: () => {},
      storeTimeout: '200ms',
      logger: false,
    });
    const started = Date.now();
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_h3', type: 't' })));
    const took = Date.now() - started;
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-degraded'), 'confirm-failed');
    assert.ok(took < 1_000, `answered after ${took} ms`);
  });

  it('refuses a storeTimeout as long as the lease', () => {
    assert.throws(
      () =>
        createReceiver({
          provider: acme(),
          store: memoryStore(),
          handler: () => {},
          lease: '1s',
          storeTimeout: '1s',
        }),
      /storeTimeout/,
    );
  });
});

describe('logger: every failure is visible without onOutcome', () => {
  it('logs failed (error, with the cause), conflict, degraded and lease-lost (warn) once each, even with onOutcome', async () => {
    const { lines, logger } = recorder();
    let fail = true;
    const outcomes: string[] = [];
    const receiver = createReceiver({
      provider: acme('whsec_shh'),
      store: memoryStore(),
      handler: () => {
        if (fail) throw new Error('the database said no');
      },
      logger,
      onOutcome: (r) => void outcomes.push(r.outcome),
    });
    const body = JSON.stringify({ id: 'evt_l1', type: 't', card: '4242' });
    await receiver.fetch(signed(body, 'whsec_shh'));
    assert.equal(lines.length, 1);
    assert.equal(lines[0]?.level, 'error');
    assert.match(
      lines[0]!.message,
      /failed for acme:evt_l1 \(attempt 1\): handler_failed: Error: the database said no/,
    );
    fail = false;
    await receiver.fetch(signed(body, 'whsec_shh'));
    assert.equal(lines.length, 1, 'processed is not logged');
    await receiver.fetch(signed(JSON.stringify({ id: 'evt_l1', type: 't', card: '0000' }), 'whsec_shh'));
    assert.equal(lines[1]?.level, 'warn');
    assert.match(lines[1]!.message, /conflict for acme:evt_l1/);
    for (const line of lines)
      assert.doesNotMatch(line.message, /4242|0000|whsec_shh|sha256=/, 'no body, secret or signature');
    assert.deepEqual(outcomes, ['failed', 'processed', 'conflict']);
  });

  it('logs a store outage as an error and a misconfiguration with its own code', async () => {
    const { lines, logger } = recorder();
    const down: Store = { ...memoryStore(), claim: () => Promise.reject(new Error('connect ECONNREFUSED')) };
    const broken: Store = {
      ...memoryStore(),
      claim: () =>
        Promise.reject(
          new StoreMisconfiguredError(
            'store_missing_table',
            'onceonly: table "x" is missing; run the migration',
          ),
        ),
    };
    const a = createReceiver({ provider: acme(), store: down, handler: () => {}, logger });
    const b = createReceiver({ provider: acme(), store: broken, handler: () => {}, logger });
    const body = JSON.stringify({ id: 'evt_s', type: 't' });
    await a.fetch(signed(body));
    const res = await b.fetch(signed(body));
    assert.equal(res.status, 503);
    assert.equal((await res.json()).code, 'store_missing_table');
    assert.deepEqual(
      lines.map((l) => l.level),
      ['error', 'error'],
    );
    assert.match(lines[0]!.message, /store unavailable for acme:evt_s: .*ECONNREFUSED/);
    assert.match(
      lines[1]!.message,
      /store misconfigured for acme:evt_s: .*table "x" is missing; run the migration/,
    );
  });

  it('goes to the console by default and nowhere with logger: false', async (t) => {
    const error = t.mock.method(console, 'error', () => {});
    const failing = () => {
      throw new Error('x');
    };
    const body = JSON.stringify({ id: 'evt_c', type: 't' });
    await createReceiver({ provider: acme(), store: memoryStore(), handler: failing }).fetch(signed(body));
    assert.equal(error.mock.callCount(), 1);
    await createReceiver({ provider: acme(), store: memoryStore(), handler: failing, logger: false }).fetch(
      signed(body),
    );
    assert.equal(error.mock.callCount(), 1);
  });

  it('once() logs a failed run and a degraded one', async () => {
    const { lines, logger } = recorder();
    await once(memoryStore(), 'job:1', () => Promise.reject(new Error('nope')), { logger });
    const store: Store = { ...memoryStore(), confirm: () => Promise.reject(new Error('ECONNRESET')) };
    await once(store, 'job:2', () => 1, { logger, lease: '1s' });
    assert.deepEqual(
      lines.map((l) => l.level),
      ['error', 'warn'],
    );
    assert.match(lines[0]!.message, /once\("job:1"\) failed on attempt 1: Error: nope/);
    assert.match(lines[1]!.message, /degraded \(confirm-failed\): Error: ECONNRESET/);
  });
});

async function asInput(request: Request) {
  return { rawBody: new Uint8Array(await request.arrayBuffer()), headers: request.headers, url: request.url };
}

describe('replays cannot mint fresh keys, and the memory store never forgets a completed key to make room', () => {
  it('1,000 re-encodings of one Twilio callback make one key; a completed Stripe event on the same small store stays a duplicate', async () => {
    const { stripe, twilio } = await import('../src/providers/index.js');
    const token = 'twilio-auth-token-0123456789abcdef';
    const url = 'https://example.com/twilio/status';
    const whsec = 'whsec_test_secret';
    const store = memoryStore({ maxEntries: 50 });
    const outcomes: string[] = [];
    const smsRuns: string[] = [];
    let charges = 0;
    const sms = createReceiver({
      provider: twilio({ secret: token, url }),
      store,
      handler: () => void smsRuns.push('sms'),
      onOutcome: (r) => void outcomes.push(r.outcome),
      logger: false,
    });
    const payments = createReceiver({
      provider: stripe({ secret: whsec }),
      store,
      handler: () => void charges++,
      logger: false,
    });
    const stripeEvent = JSON.stringify({
      id: 'evt_paid',
      object: 'event',
      type: 'invoice.paid',
      data: { object: {} },
    });
    const stripeDelivery = () => {
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', whsec).update(`${t}.${stripeEvent}`).digest('hex');
      return payments.receive({ rawBody: stripeEvent, headers: { 'stripe-signature': `t=${t},v1=${v1}` } });
    };
    assert.equal((await stripeDelivery()).outcome, 'processed');

    const params = { MessageSid: 'SM123', MessageStatus: 'delivered', To: '+15550001' };
    const headers = {
      'x-twilio-signature': twilioSignature(token, url, params),
      'content-type': 'application/x-www-form-urlencoded',
    };
    const encodings = (i: number) => {
      const sid = `SM${[...'123'].map((c, j) => ((i >> j) & 1 ? `%${c.charCodeAt(0).toString(16)}` : c)).join('')}`;
      const pairs = [`MessageSid=${sid}`, 'MessageStatus=delivered', `To=${i & 8 ? '%2B' : '%2b'}15550001`];
      if (i & 16) pairs.push('MessageStatus=delivered');
      const shift = i % pairs.length;
      return [...pairs.slice(shift), ...pairs.slice(0, shift)].join('&');
    };
    const bodies = new Set<string>();
    for (let i = 0; i < 1_000; i++) {
      const body = encodings(i);
      bodies.add(body);
      const result = await sms.receive({ rawBody: body, headers, url });
      assert.notEqual(result.status, 401, `encoding ${i} verifies`);
    }
    assert.ok(bodies.size >= 50, `the encodings differ (${bodies.size})`);
    assert.deepEqual(smsRuns, ['sms'], 'the callback ran once');
    assert.ok(store.size <= 2, `one key per event, not per encoding (${store.size} entries)`);
    assert.ok(outcomes.every((o) => o === 'processed' || o === 'duplicate' || o === 'conflict'));
    assert.equal(
      (await stripeDelivery()).outcome,
      'duplicate',
      'the completed Stripe event was not forgotten',
    );
    assert.equal(charges, 1);
  });

  it('a full memory store answers 503 store_full (reported) instead of forgetting a completed key', async () => {
    const { lines, logger } = recorder();
    const store = memoryStore({ maxEntries: 3 });
    let runs = 0;
    const receiver = createReceiver({ provider: acme(), store, handler: () => void runs++, logger });
    for (const id of ['a', 'b', 'c']) {
      assert.equal((await receiver.fetch(signed(JSON.stringify({ id, type: 't' })))).status, 200);
    }
    const full = await receiver.fetch(signed(JSON.stringify({ id: 'd', type: 't' })));
    assert.equal(full.status, 503);
    assert.equal((await full.json()).code, 'store_full');
    assert.match(lines.at(-1)?.message ?? '', /store unavailable for acme:d: .*full/);
    const again = await receiver.fetch(signed(JSON.stringify({ id: 'a', type: 't' })));
    assert.equal(again.headers.get('onceonly-outcome'), 'duplicate', 'the completed key is still remembered');
    assert.equal(runs, 3);
  });
});

describe('review fixes: a late claim, a misconfigured store under fail-open', () => {
  it('a claim that lands after storeTimeout is given up at once: the retry runs at attempt 2, not in-flight for the whole lease', async () => {
    const inner = memoryStore();
    let slow = true;
    const store: Store = {
      ...inner,
      claim: async (...a) => {
        if (slow) await sleep(400); // a store that answers, but after the deadline
        return inner.claim(...a);
      },
    };
    const receiver = createReceiver({
      provider: acme(),
      store,
      handler: () => {},
      storeTimeout: '150ms',
      logger: false,
    });
    const body = JSON.stringify({ id: 'evt_late', type: 't' });
    const first = await receiver.fetch(signed(body));
    assert.equal(first.status, 503, 'the claim timed out');
    await sleep(500); // it lands now, and is released
    assert.equal((await inner.inspect('acme:evt_late'))?.state, 'released', 'the late lease was given up');
    slow = false;
    const retry = await receiver.fetch(signed(body));
    assert.equal(retry.headers.get('onceonly-outcome'), 'processed');
    assert.equal(retry.headers.get('onceonly-attempt'), '2');
  });

  it('a misconfigured store fails closed even under onStoreError: open, logged as an error', async () => {
    const { lines, logger } = recorder();
    let runs = 0;
    const store: Store = {
      ...memoryStore(),
      claim: () => Promise.reject(new StoreMisconfiguredError('store_missing_table', 'onceonly: no table')),
    };
    const receiver = createReceiver({
      provider: acme(),
      store,
      onStoreError: 'open',
      handler: () => void runs++,
      logger,
    });
    const res = await receiver.fetch(signed(JSON.stringify({ id: 'evt_mis', type: 't' })));
    assert.equal(res.status, 503);
    assert.equal(runs, 0, 'nothing ran without dedup');
    assert.equal(lines[0]?.level, 'error');
  });
});
