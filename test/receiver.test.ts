import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { Readable } from 'node:stream';
import { describe, it } from 'node:test';
import {
  createReceiver,
  type DeliveryResult,
  hmac,
  memoryStore,
  type Provider,
  type ReceiverOptions,
  type Store,
  toResponse,
  warningFor,
} from '../src/index.js';

const SECRET = 'test-secret-do-not-leak';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function acme(overrides: Partial<Parameters<typeof hmac>[0]> = {}) {
  return hmac<{ id: string; type: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => event.id,
    type: (event) => event.type,
    // The type comes from the signed body.
    typeSigned: true,
    ...overrides,
  });
}

function sign(body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const sig = createHmac('sha256', SECRET).update(`${timestamp}.${body}`).digest('hex');
  return {
    'x-acme-signature': `sha256=${sig}`,
    'x-acme-timestamp': String(timestamp),
    'content-type': 'application/json',
  };
}

function delivery(event: object | string, headers?: Record<string, string>): Request {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  return new Request('http://localhost/webhooks', { method: 'POST', body, headers: headers ?? sign(body) });
}

/** A store that counts every call, to prove what never reached it. */
function spyStore(inner: Store = memoryStore()) {
  const calls: string[] = [];
  const spy =
    <K extends Exclude<keyof Store, 'inbox' | 'steps'>>(name: K) =>
    (...args: Parameters<Store[K]>) => {
      calls.push(name);
      return (inner[name] as (...a: Parameters<Store[K]>) => ReturnType<Store[K]>)(...args);
    };
  const store: Store = {
    claim: spy('claim'),
    confirm: spy('confirm'),
    release: spy('release'),
    extend: spy('extend'),
    record: spy('record'),
    advance: spy('advance'),
    inspect: (...a) => inner.inspect(...a),
    close: () => inner.close(),
  };
  return { store, calls };
}

function setup(options: Partial<ReceiverOptions<Provider<any>>> = {}) {
  const { store, calls } = spyStore(options.store);
  const runs: unknown[] = [];
  const outcomes: DeliveryResult[] = [];
  const receiver = createReceiver({
    provider: acme(),
    handler: ({ event }) => {
      runs.push(event);
    },
    onOutcome: (r) => {
      outcomes.push(r);
    },
    logger: false,
    ...options,
    store,
  });
  return { receiver, store, calls, runs, outcomes };
}

async function json(response: Response) {
  return {
    status: response.status,
    outcome: response.headers.get('onceonly-outcome'),
    body: await response.json(),
  };
}

describe('receiver: outcomes', () => {
  it('processes a valid delivery once and answers 200 processed', async () => {
    const { receiver, runs, outcomes } = setup();
    const res = await receiver.fetch(delivery({ id: 'evt_1', type: 'thing.created' }));
    assert.deepEqual(await json(res), { status: 200, outcome: 'processed', body: { outcome: 'processed' } });
    assert.equal(res.headers.get('onceonly-attempt'), null, 'a first attempt carries no attempt header');
    assert.equal(runs.length, 1);
    assert.equal(outcomes[0]?.key, 'acme:evt_1');
    assert.equal(outcomes[0]?.attempt, 1);
    assert.equal(outcomes[0]?.type, 'thing.created');
  });

  it('answers a repeated delivery with 200 duplicate without running the handler', async () => {
    const { receiver, runs } = setup();
    const event = { id: 'evt_2', type: 't' };
    await receiver.fetch(delivery(event));
    const res = await receiver.fetch(delivery(event));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'duplicate');
    assert.equal(runs.length, 1);
  });

  it('answers a concurrent duplicate with 409 and Retry-After while the first still runs', async () => {
    let finish!: () => void;
    const { receiver } = setup({ handler: () => new Promise<void>((resolve) => (finish = resolve)) });
    const event = { id: 'evt_3', type: 't' };
    const first = receiver.fetch(delivery(event));
    await sleep(10);
    const second = await receiver.fetch(delivery(event));
    assert.equal(second.status, 409);
    assert.equal(second.headers.get('onceonly-outcome'), 'in-flight');
    const retryAfter = Number(second.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    finish();
    assert.equal((await first).status, 200);
  });

  it("acknowledges an in-flight duplicate with 200 when onInFlight is 'acknowledge'", async () => {
    let finish!: () => void;
    const { receiver } = setup({
      onInFlight: 'acknowledge',
      handler: () => new Promise<void>((resolve) => (finish = resolve)),
    });
    const event = { id: 'evt_4', type: 't' };
    const first = receiver.fetch(delivery(event));
    await sleep(10);
    const second = await receiver.fetch(delivery(event));
    assert.equal(second.status, 200);
    assert.equal(second.headers.get('onceonly-outcome'), 'in-flight');
    finish();
    await first;
  });

  it('answers 500 when the handler throws, releases the claim, and the retry succeeds', async () => {
    let fail = true;
    const { receiver, calls, outcomes } = setup({
      handler: () => {
        if (fail) throw new Error('database is down: password=hunter2');
      },
    });
    const event = { id: 'evt_5', type: 't' };
    const res = await receiver.fetch(delivery(event));
    const body = await res.text();
    assert.equal(res.status, 500);
    assert.equal(res.headers.get('onceonly-outcome'), 'failed');
    assert.doesNotMatch(
      body,
      /hunter2|database is down|at .*\.ts/,
      'handler errors never reach the response',
    );
    assert.equal(JSON.parse(body).code, 'handler_failed');
    assert.ok(calls.includes('release'));
    assert.ok(outcomes[0]?.error instanceof Error, 'the error reaches onOutcome');
    fail = false;
    const retry = await receiver.fetch(delivery(event));
    assert.equal(retry.status, 200);
    assert.equal(retry.headers.get('onceonly-outcome'), 'processed');
  });

  it('answers 500 when the handler passes its deadline, aborting its signal and releasing the claim', async () => {
    let aborted = false;
    const { receiver, store } = setup({
      timeout: '50ms',
      handler: ({ signal }) =>
        new Promise((_, reject) =>
          signal.addEventListener('abort', () => {
            aborted = true;
            reject(signal.reason);
          }),
        ),
    });
    const res = await receiver.fetch(delivery({ id: 'evt_6', type: 't' }));
    assert.equal(res.status, 500);
    assert.equal((await res.json()).code, 'handler_timeout');
    assert.ok(aborted);
    assert.equal((await store.inspect('acme:evt_6'))?.state, 'released', 'released for the retry');
  });

  it('answers 200 lease-lost when another delivery took over during a slow handler', async () => {
    let now = 1_000_000;
    const base = memoryStore({ now: () => now });
    let calls = 0;
    let receiver!: ReturnType<typeof createReceiver>;
    const results: DeliveryResult[] = [];
    receiver = createReceiver({
      provider: acme(),
      store: base,
      lease: '1m',
      onOutcome: (r) => {
        results.push(r);
      },
      handler: async ({ attempt }) => {
        calls++;
        if (attempt === 1) {
          now += 5 * 60_000; // the first run outlives its lease
          const takeover = await receiver.fetch(delivery({ id: 'evt_7', type: 't' }));
          assert.equal(takeover.headers.get('onceonly-outcome'), 'processed');
          assert.equal(
            takeover.headers.get('onceonly-attempt'),
            '2',
            'a takeover is visible to the provider log',
          );
        }
      },
    });
    const res = await receiver.fetch(delivery({ id: 'evt_7', type: 't' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'lease-lost');
    assert.equal(calls, 2);
    assert.deepEqual(
      results.map((r) => [r.outcome, r.attempt]),
      [
        ['processed', 2],
        ['lease-lost', 1],
      ],
    );
  });

  it('answers 422 conflict for the same id with another body, without running the handler', async () => {
    const { receiver, runs, outcomes } = setup();
    await receiver.fetch(delivery({ id: 'evt_8', type: 't', amount: 1 }));
    const res = await receiver.fetch(delivery({ id: 'evt_8', type: 't', amount: 1000 }));
    assert.equal(res.status, 422);
    assert.equal(res.headers.get('onceonly-outcome'), 'conflict');
    assert.equal((await res.json()).code, 'fingerprint_mismatch');
    assert.equal(runs.length, 1);
    assert.equal(outcomes[1]?.outcome, 'conflict');
  });

  it('logs a conflict with console.warn, with or without onOutcome, never with the body or secret', async (t) => {
    const warn = t.mock.method(console, 'warn', () => {});
    const quiet = createReceiver({ provider: acme(), store: memoryStore(), handler: () => {} });
    await quiet.fetch(delivery({ id: 'evt_warn', type: 't', amount: 1 }));
    assert.equal(warn.mock.callCount(), 0, 'a processed delivery is not worth a warning');
    await quiet.fetch(delivery({ id: 'evt_warn', type: 't', amount: 2 }));
    assert.equal(warn.mock.callCount(), 1);
    const line = String(warn.mock.calls[0]!.arguments[0]);
    assert.match(
      line,
      /^onceonly: conflict for acme:evt_warn: the key was already seen with another fingerprint/,
    );
    assert.doesNotMatch(line, /amount|whsec|sha256=|test-secret/, 'no body or secret in the line');
    const observed = createReceiver({
      provider: acme(),
      store: memoryStore(),
      handler: () => {},
      onOutcome: () => {},
    });
    await observed.fetch(delivery({ id: 'evt_warn2', type: 't', amount: 1 }));
    await observed.fetch(delivery({ id: 'evt_warn2', type: 't', amount: 2 }));
    assert.equal(warn.mock.callCount(), 2, 'onOutcome does not silence the log');
  });

  it('warningFor names lease-lost, conflict and degraded outcomes, and nothing else', () => {
    const base = { provider: 'acme', key: 'acme:evt_1', attempt: 1, id: 'evt_1' } as const;
    const result = (extra: object) => ({ ...base, degraded: undefined, code: undefined, ...extra }) as never;
    assert.match(
      warningFor(result({ outcome: 'lease-lost' })) ?? '',
      /^onceonly: lease-lost for acme:evt_1 \(attempt 1\)/,
    );
    assert.match(
      warningFor(result({ outcome: 'processed', degraded: 'confirm-failed' })) ?? '',
      /degraded \(confirm-failed\)/,
    );
    assert.equal(warningFor(result({ outcome: 'processed' })), undefined);
    assert.equal(warningFor(result({ outcome: 'duplicate' })), undefined);
    assert.equal(warningFor(result({ outcome: 'rejected', code: 'invalid_signature' })), undefined);
  });

  it("acknowledges a conflict with 200 when onConflict is 'acknowledge'", async () => {
    const { receiver } = setup({ onConflict: 'acknowledge' });
    await receiver.fetch(delivery({ id: 'evt_9', type: 't', v: 1 }));
    const res = await receiver.fetch(delivery({ id: 'evt_9', type: 't', v: 2 }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'conflict');
  });

  const broken: Store = {
    ...memoryStore(),
    claim: () =>
      Promise.reject(
        Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }),
      ),
  };

  it('fails closed by default: 503 with Retry-After, handler not run', async () => {
    const { receiver, runs, outcomes } = setup({ store: broken });
    const res = await receiver.fetch(delivery({ id: 'evt_10', type: 't' }));
    const body = await res.text();
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('onceonly-outcome'), 'store-unavailable');
    assert.equal(res.headers.get('retry-after'), '5');
    assert.doesNotMatch(body, /ECONNREFUSED|6379/);
    assert.equal(runs.length, 0);
    assert.equal(outcomes[0]?.outcome, 'store-unavailable');
  });

  it('fails open on request: runs the handler and marks the outcome degraded everywhere', async () => {
    const { receiver, runs, outcomes } = setup({ store: broken, onStoreError: 'open' });
    const res = await receiver.fetch(delivery({ id: 'evt_11', type: 't' }));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
    assert.equal(runs.length, 1);
    assert.equal(outcomes[0]?.degraded, 'store-unavailable');
  });

  it('fails open and still answers 500 when the unguarded handler throws', async () => {
    const { receiver } = setup({
      store: broken,
      onStoreError: 'open',
      handler: () => {
        throw new Error('x');
      },
    });
    const res = await receiver.fetch(delivery({ id: 'evt_12', type: 't' }));
    assert.equal(res.status, 500);
    assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
  });

  it('reports a confirm that kept failing as processed and degraded', async () => {
    const inner = memoryStore();
    const { receiver, outcomes } = setup({
      store: { ...inner, confirm: () => Promise.reject(new Error('timeout')) },
    });
    const res = await receiver.fetch(delivery({ id: 'evt_13', type: 't' }));
    assert.equal(res.status, 200, 'the work is done: a 5xx would make the provider run it again');
    assert.equal(res.headers.get('onceonly-degraded'), 'confirm-failed');
    assert.equal(outcomes[0]?.degraded, 'confirm-failed');
  });

  const unkeyedProvider: Provider<unknown> = {
    name: 'plain',
    retentionMs: 60_000,
    verify: ({ rawBody }) => ({ event: rawBody, dedup: 'none' }),
  };

  it('runs an unkeyed delivery without dedup by default', async () => {
    const { receiver, runs, calls } = setup({ provider: unkeyedProvider });
    const res = await receiver.fetch(delivery('hello', {}));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'unkeyed');
    assert.equal(runs.length, 1);
    assert.deepEqual(calls, [], 'nothing to key on, so nothing stored');
  });

  it("refuses an unkeyed delivery with 422 when onUnkeyed is 'reject'", async () => {
    const { receiver, runs } = setup({ provider: unkeyedProvider, onUnkeyed: 'reject' });
    const res = await receiver.fetch(delivery('hello', {}));
    assert.equal(res.status, 422);
    assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
    assert.equal((await res.json()).code, 'unkeyed');
    assert.equal(runs.length, 0);
  });

  it('acknowledges an event type with no handler in `on` as ignored, without the store', async () => {
    const seen: string[] = [];
    const { receiver, calls } = setup({
      handler: undefined,
      on: { 'thing.created': ({ id }) => void seen.push(id!) },
    });
    const ignored = await receiver.fetch(delivery({ id: 'evt_14', type: 'thing.deleted' }));
    assert.equal(ignored.status, 200);
    assert.equal(ignored.headers.get('onceonly-outcome'), 'ignored');
    assert.deepEqual(calls, []);
    await receiver.fetch(delivery({ id: 'evt_15', type: 'thing.created' }));
    assert.deepEqual(seen, ['evt_15']);
  });

  it("passes the handler's own response through with the outcome headers", async () => {
    const { receiver } = setup({
      handler: () => new Response('custom', { status: 202, headers: { 'x-app': '1' } }),
    });
    const res = await receiver.fetch(delivery({ id: 'evt_16', type: 't' }));
    assert.equal(res.status, 202);
    assert.equal(await res.text(), 'custom');
    assert.equal(res.headers.get('x-app'), '1');
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
  });

  it('keys deliveries without a signed id on a digest of the body, so a fresh id header is still a duplicate', async () => {
    const { receiver, runs } = setup({
      provider: acme({ id: undefined, idHeader: 'x-acme-delivery' }),
    });
    const body = JSON.stringify({ id: 'x', type: 't' });
    const first = await receiver.fetch(delivery(body, { ...sign(body), 'x-acme-delivery': 'd-1' }));
    const replay = await receiver.fetch(delivery(body, { ...sign(body), 'x-acme-delivery': 'd-2-minted' }));
    assert.equal(first.headers.get('onceonly-outcome'), 'processed');
    assert.equal(replay.headers.get('onceonly-outcome'), 'duplicate');
    assert.equal(runs.length, 1);
  });

  it('calls onOutcome for every delivery and survives an onOutcome that throws', async () => {
    const { receiver } = setup({
      onOutcome: () => {
        throw new Error('observer bug');
      },
    });
    const res = await receiver.fetch(delivery({ id: 'evt_17', type: 't' }));
    assert.equal(res.status, 200);
  });

  it('receive() takes Node-style headers and returns the result without HTTP', async () => {
    const { receiver } = setup();
    const body = JSON.stringify({ id: 'evt_18', type: 't' });
    const headers = Object.fromEntries(Object.entries(sign(body)).map(([k, v]) => [k, [v]]));
    const result = await receiver.receive({ rawBody: Buffer.from(body), headers });
    assert.equal(result.outcome, 'processed');
    assert.equal(result.status, 200);
    assert.equal(result.key, 'acme:evt_18');
    const again = await receiver.receive({ rawBody: body, headers: new Headers(sign(body)) });
    assert.equal(again.outcome, 'duplicate');
  });

  it('reads Node-style header objects case-insensitively and hands the handler a web Headers', async () => {
    let seen: Headers | undefined;
    const { receiver } = setup({
      handler: ({ delivery }) => {
        seen = delivery.headers;
      },
    });
    const body = JSON.stringify({ id: 'evt_case', type: 't' });
    const headers = Object.fromEntries(
      Object.entries(sign(body)).map(([k, v]) => [k.toUpperCase(), ` ${v} `]),
    );
    const result = await receiver.receive({ rawBody: body, headers: { ...headers, 'X-Extra': ['a', 'b'] } });
    assert.equal(result.outcome, 'processed');
    assert.ok(seen instanceof Headers);
    assert.equal(seen.get('x-extra'), 'a, b');
  });

  it('measures tolerance against a supplied receivedAt for queued processing', async () => {
    const { receiver } = setup();
    const body = JSON.stringify({ id: 'evt_19', type: 't' });
    const then = Math.floor(Date.now() / 1000) - 3600;
    const late = await receiver.receive({ rawBody: body, headers: sign(body, then) });
    assert.equal(late.code, 'timestamp_too_old');
    const queued = await receiver.receive({
      rawBody: body,
      headers: sign(body, then),
      receivedAt: new Date(then * 1000 + 2_000),
    });
    assert.equal(queued.outcome, 'processed');
  });
});

describe('receiver: bad input never reaches the store or the handler', () => {
  const good = JSON.stringify({ id: 'evt_bad', type: 't' });
  const cases: [string, () => Request, number, string][] = [
    ['no headers', () => new Request('http://x/', { method: 'POST', body: good }), 400, 'missing_header'],
    [
      'garbled signature header',
      () => delivery(good, { ...sign(good), 'x-acme-signature': 'sha256=zz!!' }),
      400,
      'malformed_header',
    ],
    [
      'signature without its prefix',
      () => delivery(good, { ...sign(good), 'x-acme-signature': 'abcdef' }),
      400,
      'malformed_header',
    ],
    [
      'wrong signature',
      () => delivery(good, { ...sign(good), 'x-acme-signature': `sha256=${'0'.repeat(64)}` }),
      401,
      'invalid_signature',
    ],
    [
      'tampered body',
      () => delivery(good.replace('evt_bad', 'evt_evil'), sign(good)),
      401,
      'invalid_signature',
    ],
    [
      'timestamp not a number',
      () => delivery(good, { ...sign(good), 'x-acme-timestamp': 'yesterday' }),
      400,
      'malformed_header',
    ],
    [
      'stale timestamp',
      () => delivery(good, sign(good, Math.floor(Date.now() / 1000) - 600)),
      401,
      'timestamp_too_old',
    ],
    [
      'future timestamp',
      () => delivery(good, sign(good, Math.floor(Date.now() / 1000) + 600)),
      401,
      'timestamp_too_new',
    ],
    ['empty body', () => delivery('', sign('')), 400, 'invalid_body'],
    ['non-JSON body, correctly signed', () => delivery('not json', sign('not json')), 400, 'invalid_body'],
    ['a JSON array, correctly signed', () => delivery('[1,2]', sign('[1,2]')), 400, 'invalid_body'],
    [
      'invalid UTF-8, correctly signed',
      () => {
        const bytes = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
        const ts = Math.floor(Date.now() / 1000);
        const sig = createHmac('sha256', SECRET).update(`${ts}.`).update(bytes).digest('hex');
        return new Request('http://x/', {
          method: 'POST',
          body: bytes,
          headers: { 'x-acme-signature': `sha256=${sig}`, 'x-acme-timestamp': String(ts) },
        });
      },
      400,
      'invalid_body',
    ],
    ['no event id, correctly signed', () => delivery(JSON.stringify({ type: 't' })), 400, 'missing_event_id'],
    ['GET instead of POST', () => new Request('http://x/', { method: 'GET' }), 405, 'method_not_allowed'],
  ];

  for (const [name, request, status, code] of cases) {
    it(`${name} → ${status} ${code}`, async () => {
      const { receiver, calls, runs, outcomes } = setup();
      const req = request();
      const signature = req.headers.get('x-acme-signature');
      const res = await receiver.fetch(req);
      const text = await res.text();
      assert.equal(res.status, status);
      assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
      assert.equal(JSON.parse(text).code, code);
      assert.match(JSON.parse(text).message, /^onceonly: /);
      assert.deepEqual(calls, [], 'no store access');
      assert.equal(runs.length, 0, 'no handler run');
      assert.ok(!text.includes(SECRET), 'no secret');
      if (signature) assert.ok(!text.includes(signature.replace('sha256=', '')), 'no signature echoed');
      assert.doesNotMatch(text, /\n\s+at |\.ts:\d+/, 'no stack');
      assert.equal(outcomes[0]?.code, code);
    });
  }

  it('refuses a body over maxBodyBytes with a Content-Length before reading it: 413', async () => {
    const { receiver, calls, runs } = setup({ maxBodyBytes: 1024 });
    const big = JSON.stringify({ id: 'evt_big', type: 't', pad: 'x'.repeat(5000) });
    const res = await receiver.fetch(delivery(big));
    assert.equal(res.status, 413);
    assert.equal(res.headers.get('onceonly-outcome'), 'too-large');
    assert.equal((await res.json()).code, 'body_too_large');
    assert.deepEqual(calls, []);
    assert.equal(runs.length, 0);
  });

  it('refuses a chunked body once it passes maxBodyBytes, without reading the rest: 413', async () => {
    const { receiver, calls } = setup({ maxBodyBytes: 1024 });
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        if (pulled > 1000) controller.close();
        else controller.enqueue(new Uint8Array(512));
      },
    });
    const body = JSON.stringify({ id: 'evt_chunked', type: 't' });
    const req = new Request('http://x/', {
      method: 'POST',
      body: stream,
      headers: sign(body),
      duplex: 'half',
    } as RequestInit);
    const res = await receiver.fetch(req);
    assert.equal(res.status, 413);
    assert.ok(pulled < 10, `stopped reading after ${pulled} chunks`);
    assert.deepEqual(calls, []);
  });

  it('refuses an oversized rawBody given to receive(): 413', async () => {
    const { receiver, calls } = setup({ maxBodyBytes: 10 });
    const result = await receiver.receive({ rawBody: 'x'.repeat(11), headers: {} });
    assert.equal(result.outcome, 'too-large');
    assert.equal(result.status, 413);
    assert.deepEqual(calls, []);
  });

  it('receive() given an object-mode stream (chunks that are not bytes) ends in an outcome, never an uncaught exception or a hang', async () => {
    const { receiver, calls } = setup();
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => void uncaught.push(error);
    process.prependListener('uncaughtException', onUncaught);
    try {
      const result = await receiver.receive({
        rawBody: Readable.from([[1, 2, 3], [4]]) as unknown as Readable,
        headers: sign('{}'),
      });
      assert.equal(result.status, 400);
      assert.equal(result.outcome, 'rejected');
    } finally {
      process.off('uncaughtException', onUncaught);
    }
    assert.deepEqual(uncaught, []);
    assert.deepEqual(calls, []);
  });

  it("receive() takes a stream whose 'close' comes right after its last push, before its 'end', as complete", async () => {
    const { receiver } = setup();
    const body = JSON.stringify({ id: 'evt_close_first', type: 't' });
    const stream = new Readable({ read() {} });
    const result = receiver.receive({ rawBody: stream, headers: sign(body) });
    stream.push(Buffer.from(body));
    setImmediate(() => {
      // The order Node's HTTP/2 compatibility layer uses: end of data, then close at once.
      stream.push(null);
      stream.emit('close');
    });
    assert.equal((await result).outcome, 'processed');
  });

  it('receive() reads a Node stream body with the same bound, leaving an oversized one unread', async () => {
    const { receiver, calls } = setup({ maxBodyBytes: 1024 });
    const body = JSON.stringify({ id: 'evt_stream', type: 't' });
    const ok = await receiver.receive({
      rawBody: Readable.from([Buffer.from(body.slice(0, 5)), Buffer.from(body.slice(5))]),
      headers: sign(body),
    });
    assert.equal(ok.outcome, 'processed');
    let produced = 0;
    const endless = new Readable({
      read() {
        produced++;
        this.push(Buffer.alloc(512));
      },
    });
    const big = await receiver.receive({ rawBody: endless, headers: sign(body) });
    assert.equal(big.outcome, 'too-large');
    // No further than the limit plus the stream's own read-ahead buffer (its highWaterMark).
    assert.ok(
      produced * 512 <= 1024 + endless.readableHighWaterMark + 512,
      `read ${produced} chunks of 512 bytes`,
    );
    assert.equal(endless.destroyed, false, 'left for the server to answer 413 on, not destroyed');
    const declared = await receiver.receive({
      rawBody: Readable.from([Buffer.alloc(10)]),
      headers: { ...sign(body), 'content-length': '5000' },
    });
    assert.equal(declared.outcome, 'too-large');
    assert.deepEqual(calls, ['claim', 'confirm']);
  });

  it('answers 408 to a body trickled slower than bodyTimeout, without claiming', async () => {
    const { receiver, calls } = setup({ bodyTimeout: '200ms' });
    const body = JSON.stringify({ id: 'evt_slow', type: 't' });
    let sent = 0;
    const trickle = new ReadableStream<Uint8Array>({
      async pull(controller) {
        await sleep(50);
        if (sent < body.length) controller.enqueue(new TextEncoder().encode(body[sent++]));
        else controller.close();
      },
    });
    const started = Date.now();
    const res = await receiver.fetch(
      new Request('http://x/', {
        method: 'POST',
        body: trickle,
        headers: sign(body),
        duplex: 'half',
      } as RequestInit),
    );
    assert.equal(res.status, 408);
    assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
    assert.equal((await res.json()).code, 'body_timeout');
    assert.ok(Date.now() - started < 1_000);
    assert.deepEqual(calls, []);
    const node = await receiver.receive({
      rawBody: new Readable({ read() {} }), // never sends a byte
      headers: sign(body),
    });
    assert.equal(node.status, 408);
  });

  it('refuses a header value Headers cannot hold as malformed, not a crash', async () => {
    const { receiver, calls } = setup();
    const result = await receiver.receive({ rawBody: '{}', headers: { 'x-acme-signature': 'a\u0000b' } });
    assert.equal(result.status, 400);
    assert.equal(result.code, 'malformed_header');
    assert.deepEqual(calls, []);
  });
});

describe('receiver: configuration', () => {
  it('refuses missing parts at construction with a clear error', () => {
    assert.throws(
      () => createReceiver({ provider: acme(), store: memoryStore() } as never),
      /handler or an `on` map/,
    );
    assert.throws(
      () => createReceiver({ store: memoryStore(), handler: () => {} } as never),
      /needs a provider/,
    );
    assert.throws(() => createReceiver({ provider: acme(), handler: () => {} } as never), /needs a store/);
    assert.throws(
      () =>
        createReceiver({
          provider: acme(),
          store: memoryStore(),
          handler: () => {},
          timeout: 'soon' as never,
        }),
      /timeout/,
    );
    assert.throws(
      () => createReceiver({ provider: acme(), store: memoryStore(), handler: () => {}, maxBodyBytes: 0 }),
      /maxBodyBytes/,
    );
  });

  it('refuses a provider with no secret at construction', () => {
    assert.throws(
      () => acme({ secret: '' }),
      (err: Error & { code?: string }) => err.code === 'invalid_secret',
    );
    assert.throws(() => acme({ secret: [] }), /needs a secret/);
  });

  it('accepts any one of several rotated secrets', async () => {
    const { receiver } = setup({ provider: acme({ secret: ['old-secret', SECRET] }) });
    const res = await receiver.fetch(delivery({ id: 'evt_rot', type: 't' }));
    assert.equal(res.status, 200);
  });

  it('uses the default lease of 4 × timeout and the provider retention', async () => {
    const store = memoryStore();
    let leaseMs = 0;
    const observed = createReceiver({
      provider: acme({ retention: '2h' }),
      store,
      timeout: '10s',
      handler: ({ lease }) => {
        leaseMs = lease!.expiresAt.getTime() - Date.now();
      },
    });
    await observed.fetch(delivery({ id: 'evt_def', type: 't' }));
    assert.ok(leaseMs > 39_000 && leaseMs <= 40_000, `lease ${leaseMs}`);
    const view = await store.inspect('acme:evt_def');
    const retention = view!.expiresAt.getTime() - Date.now();
    assert.ok(retention > 2 * 3600_000 - 5_000 && retention <= 2 * 3600_000, `retention ${retention}`);
  });

  it("lets the receiver's retention and lease override the provider's default", async () => {
    const store = memoryStore();
    let leaseMs = 0;
    const receiver = createReceiver({
      provider: acme({ retention: '2h' }),
      store,
      retention: '9d',
      lease: '90s',
      handler: ({ lease }) => {
        leaseMs = lease!.expiresAt.getTime() - Date.now();
      },
    });
    await receiver.fetch(delivery({ id: 'evt_override', type: 't' }));
    assert.ok(leaseMs > 85_000 && leaseMs <= 90_000, `lease ${leaseMs}`);
    const view = await store.inspect('acme:evt_override');
    const retention = view!.expiresAt.getTime() - Date.now();
    assert.ok(retention > 9 * 86_400_000 - 5_000 && retention <= 9 * 86_400_000, `retention ${retention}`);
  });
});

describe('receiver: a delivery that carries several events (batch providers such as SendGrid)', () => {
  // A provider whose body is a JSON array of { id, type } events, each keyed on its own id.
  const batchy: Provider<{ id: string; type: string; n?: number }> = {
    name: 'batchy',
    retentionMs: 60_000,
    verify({ rawBody }) {
      const events = JSON.parse(new TextDecoder().decode(rawBody)) as { id: string; type: string }[];
      return {
        event: events[0]!,
        id: events[0]!.id,
        dedup: 'id',
        batch: events.map((e) => ({ id: e.id, type: e.type, event: e })),
      };
    },
  };
  const send = (receiver: ReturnType<typeof createReceiver>, events: object[]) =>
    receiver.receive({ rawBody: JSON.stringify(events), headers: {} });

  it('stops at the first event the store cannot take, answers 503, and leaves the rest for the retry', async () => {
    const { store, runs } = { store: memoryStore(), runs: [] as string[] };
    let down = false;
    const flaky: Store = {
      ...store,
      claim: (k, o) => (down ? Promise.reject(new Error('ECONNRESET')) : store.claim(k, o)),
    };
    const receiver = createReceiver({
      provider: batchy,
      store: flaky,
      handler: ({ id }) => void runs.push(id!),
      onOutcome: () => {},
    });
    assert.equal((await send(receiver, [{ id: 'a', type: 't' }])).outcome, 'processed');
    down = true;
    const res = await send(receiver, [
      { id: 'b', type: 't' },
      { id: 'c', type: 't' },
    ]);
    assert.equal(res.status, 503);
    assert.equal(res.outcome, 'store-unavailable');
    assert.ok(res.retryAfter !== undefined);
    assert.deepEqual(
      res.batch?.map((r) => r.id),
      ['b'],
      'c was not tried',
    );
    down = false;
    assert.equal(
      (
        await send(receiver, [
          { id: 'b', type: 't' },
          { id: 'c', type: 't' },
        ])
      ).outcome,
      'processed',
    );
    assert.deepEqual(runs, ['a', 'b', 'c']);
  });

  it('answers 409 with Retry-After while one event of the batch is in flight elsewhere, running the others', async () => {
    const store = memoryStore();
    const runs: string[] = [];
    const receiver = createReceiver({
      provider: batchy,
      store,
      handler: ({ id }) => void runs.push(id!),
      onOutcome: () => {},
    });
    await store.claim('batchy:held', { leaseMs: 30_000 });
    const res = await send(receiver, [
      { id: 'free', type: 't' },
      { id: 'held', type: 't' },
    ]);
    assert.equal(res.status, 409);
    assert.equal(res.outcome, 'in-flight');
    assert.ok((res.retryAfter ?? 0) >= 1);
    assert.deepEqual(runs, ['free']);
    assert.equal(toResponse(res).headers.get('retry-after'), String(res.retryAfter));
  });

  it('answers 422 conflict when an event id comes back with other content, without running it again', async () => {
    const runs: string[] = [];
    const receiver = createReceiver({
      provider: batchy,
      store: memoryStore(),
      handler: ({ id }) => void runs.push(id!),
      onOutcome: () => {},
    });
    await send(receiver, [{ id: 'x', type: 't', n: 1 }]);
    const res = await send(receiver, [
      { id: 'x', type: 't', n: 2 },
      { id: 'y', type: 't' },
    ]);
    assert.equal(res.status, 422);
    assert.equal(res.outcome, 'conflict');
    assert.equal(res.code, 'fingerprint_mismatch');
    assert.deepEqual(runs, ['x', 'y']);
  });
});
