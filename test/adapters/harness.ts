/**
 * The end-to-end suite every framework adapter passes: a real server on a loopback port, real HTTP
 * through `fetch` (and `node:http` for a chunked body), deliveries signed by `@octokit/webhooks-methods`
 * for the generic `hmac` provider configured like GitHub. Each framework's test file supplies how
 * to start its app around a receiver and adds its own body-parser cases.
 */
import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { sign } from '@octokit/webhooks-methods';
import type { Receiver } from '../../src/index.js';
import {
  bodyOf,
  eventId,
  type Fixture,
  fixture,
  handshakeFixture,
  keyOf,
  LARGE_BODY,
  MAX_BODY,
  SECRET,
  VERIFY_TOKEN,
} from './behaviour.js';
import { BODY_TIMEOUT_MS, type OutcomeFixture, outcomeFixture, stripeDelivery } from './outcomes.js';

export * from './behaviour.js';

/** Headers of a delivery signed by the real Octokit signer. */
export async function signed(body: string, secret = SECRET): Promise<Record<string, string>> {
  return {
    'content-type': 'application/json',
    'x-github-event': 'push',
    'x-github-delivery': randomUUID(),
    'x-hub-signature-256': await sign(secret, body),
  };
}

export interface Answer {
  status: number;
  outcome: string | null;
  headers: Headers;
  text: string;
  json: { outcome?: string; code?: string; message?: string } | undefined;
}

async function answer(res: Response): Promise<Answer> {
  const text = await res.text();
  let json: Answer['json'];
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return {
    status: res.status,
    outcome: res.headers.get('onceonly-outcome'),
    headers: res.headers,
    text,
    json,
  };
}

/** POSTs a signed delivery with `fetch`. */
export async function deliver(
  url: string,
  body: string,
  options: { secret?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers = { ...(await signed(body, options.secret)), ...options.headers };
  return answer(await fetch(url, { method: 'POST', body, headers }));
}

/** POSTs a signed delivery as a streamed body: no Content-Length, chunked transfer encoding. */
export async function deliverChunked(url: string, body: string): Promise<Answer> {
  const headers = await signed(body);
  const bytes = new TextEncoder().encode(body);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let offset = 0; offset < bytes.length; offset += 4096) {
        controller.enqueue(bytes.subarray(offset, offset + 4096));
      }
      controller.close();
    },
  });
  const res = await fetch(url, {
    method: 'POST',
    body: stream,
    headers,
    duplex: 'half',
  } as RequestInit & { duplex: 'half' });
  return answer(res);
}

/**
 * Sends a body through `node:http`, chunked (no Content-Length) or with its length declared, and
 * reports what the server answered. A server that refuses early may close while the body is still
 * going out: an error after the answer arrived is that, not a failure.
 */
export async function deliverChunkedNode(
  url: string,
  body: string,
  options: { declared?: boolean } = {},
): Promise<{ status: number; outcome: string | undefined; headers: Record<string, unknown>; text: string }> {
  const headers: Record<string, string | number> = await signed(body);
  const bytes = Buffer.from(body);
  if (options.declared) headers['content-length'] = bytes.length;
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          outcome: res.headers['onceonly-outcome'] as string | undefined,
          headers: res.headers,
          text,
        }),
      );
    });
    req.on('error', (error) => {
      if (!answered) setTimeout(() => (answered ? undefined : reject(error)), 1_000);
    });
    // Without a declared length node:http sends Transfer-Encoding: chunked.
    for (let offset = 0; offset < bytes.length; offset += 4096)
      req.write(bytes.subarray(offset, offset + 4096));
    req.end();
  });
}

/**
 * The answer when another body parser consumed the body first: the core's own 500
 * `body_already_parsed` (outcome `rejected`, the message naming `fix`), the handler never run, and
 * `onOutcome` told (when the fixture lives in this process), whatever the framework's error handling.
 */
export function assertParsedFirst(
  res: Answer,
  fix: RegExp,
  seen: { id: string; ran: number | undefined; outcomes?: readonly { code: string | undefined }[] },
): void {
  assert.equal(res.status, 500);
  assert.equal(res.outcome, 'rejected');
  assert.equal(res.json?.code, 'body_already_parsed');
  assert.match(
    res.json?.message ?? '',
    /^onceonly: the request body was already read by another body parser/,
  );
  assert.match(res.json?.message ?? '', fix);
  assert.equal(seen.ran, undefined, 'the handler never ran');
  if (seen.outcomes) assert.equal(seen.outcomes.at(-1)?.code, 'body_already_parsed', 'onOutcome saw it');
}

/**
 * Starts a signed POST, sends only `send` bytes of its body (with `declared` as Content-Length, or
 * chunked without one) and, unless `finish`, never finishes it. Resolves with the answer; fails when none comes within
 * 5 s, which is what an adapter that waits to buffer the whole body would do.
 */
export async function sendPart(
  url: string,
  part: { declared?: number; send: number; finish?: boolean },
): Promise<{ status: number; outcome: string | undefined }> {
  const headers: Record<string, string | number> = await signed('{"partial":true}');
  if (part.declared !== undefined) headers['content-length'] = part.declared;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      res.resume();
      clearTimeout(timer);
      resolve({
        status: res.statusCode ?? 0,
        outcome: res.headers['onceonly-outcome'] as string | undefined,
      });
      req.destroy();
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no answer within 5 s after ${part.send} bytes: the body is being buffered`));
    }, 5_000);
    // The server may close the connection as it answers: that is not a failure of the test.
    req.on('error', () => {});
    const chunk = Buffer.alloc(1024, 'x');
    for (let sent = 0; sent < part.send; sent += chunk.length) req.write(chunk);
    if (part.finish) req.end();
  });
}

export interface Server {
  /** The webhook route's full URL. */
  url: string;
  close(): Promise<void>;
  /** How the suite reaches the handler and store: given when they live in another process (Next.js). */
  controls?: Controls;
}

/** What the suite observes and steers behind the server. */
export interface Controls {
  /** Holds `id`'s handler once it starts; `started` resolves when it began, `release` lets it finish. */
  gate(id: string): Promise<{ started: Promise<void>; release: () => Promise<void> }>;
  runs(id: string): Promise<number | undefined>;
  attempts(id: string): Promise<number | undefined>;
  inspect(key: string): Promise<unknown>;
  /** Every outcome reported to `onOutcome` so far. */
  outcomes(): Promise<string[]>;
}

/** Controls over a fixture in this process. */
export function localControls(f: Fixture): Controls {
  return {
    async gate(id) {
      const gate = f.behaviour.gate(id);
      return { started: gate.started, release: async () => gate.release() };
    },
    runs: async (id) => f.behaviour.runs.get(id),
    attempts: async (id) => f.behaviour.attempts.get(id),
    inspect: (key) => f.store.inspect(key),
    outcomes: async () => f.outcomes.map((o) => o.outcome),
  };
}

/**
 * The shared behaviours. `start` runs the framework with the adapter on a loopback port, port 0, and
 * returns the webhook URL.
 */
export interface SuiteOptions {
  /**
   * The framework's own body parser reads the body before the adapter, bounded by this limit (Nest
   * with `rawBody: true`: 100 kB). The early-refusal cases then send bodies past that limit and
   * accept the framework's 413; the other 413 cases (bodies under it) still get the core's.
   */
  parserLimit?: number;
  /**
   * That parser answers its 413 only once the client has sent the whole body, which it drains
   * without keeping (body-parser, under Nest on Express): the early-refusal cases then finish
   * sending and expect the 413 after it.
   */
  parserDrains?: boolean;
}

export function adapterSuite(
  name: string,
  start: (receiver: Receiver) => Promise<Server>,
  options: SuiteOptions = {},
): void {
  describe(`${name}: end to end over real HTTP`, () => {
    let server: Server;
    let c: Controls;

    before(async () => {
      const f = fixture();
      server = await start(f.receiver);
      c = server.controls ?? localControls(f);
    });
    after(async () => {
      await server?.close();
    });

    it('processes a valid signed delivery once and answers 200 processed', async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
      assert.deepEqual(res.json, { outcome: 'processed' });
      assert.equal(await c.runs(id), 1);
    });

    it('answers a repeated delivery 200 duplicate without running the handler again', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      await deliver(server.url, body);
      const res = await deliver(server.url, body);
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'duplicate');
      assert.equal(await c.runs(id), 1);
    });

    it('answers a concurrent copy 409 in-flight with Retry-After while the first still runs', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'gate' });
      const gate = await c.gate(id);
      const first = deliver(server.url, body);
      await gate.started;
      const second = await deliver(server.url, body);
      await gate.release();
      const done = await first;
      assert.equal(second.status, 409);
      assert.equal(second.outcome, 'in-flight');
      const retryAfter = Number(second.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(done.status, 200);
      assert.equal(done.outcome, 'processed');
      assert.equal((await deliver(server.url, body)).outcome, 'duplicate');
      assert.equal(await c.runs(id), 1);
    });

    it('answers 500 when the handler throws, releases the claim, and the retry is processed', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'throw-once' });
      const failed = await deliver(server.url, body);
      assert.equal(failed.status, 500);
      assert.equal(failed.outcome, 'failed');
      assert.equal(failed.json?.code, 'handler_failed');
      assert.doesNotMatch(
        failed.text,
        /sk_live_secret|payment API/,
        'handler errors never reach the response',
      );
      assert.equal(
        ((await c.inspect(keyOf(body))) as { state?: string } | undefined)?.state,
        'released',
        'the claim was released, its attempt kept for the retry',
      );
      const retry = await deliver(server.url, body);
      assert.equal(retry.status, 200);
      assert.equal(retry.outcome, 'processed');
      assert.equal(await c.attempts(id), 2);
      assert.equal(await c.runs(id), 1);
    });

    it('answers 500 when the handler passes its deadline, releases the claim, and the retry is processed', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'hang-once' });
      const failed = await deliver(server.url, body);
      assert.equal(failed.status, 500);
      assert.equal(failed.outcome, 'failed');
      assert.equal(failed.json?.code, 'handler_timeout');
      assert.equal(
        ((await c.inspect(keyOf(body))) as { state?: string } | undefined)?.state,
        'released',
        'the claim was released, its attempt kept for the retry',
      );
      const retry = await deliver(server.url, body);
      assert.equal(retry.status, 200);
      assert.equal(retry.outcome, 'processed');
    });

    it('rejects a delivery signed with the wrong secret with 401 and never runs the handler', async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }), { secret: 'a-guess' });
      assert.equal(res.status, 401);
      assert.equal(res.outcome, 'rejected');
      assert.equal(res.json?.code, 'invalid_signature');
      assert.doesNotMatch(res.text, /sha256=|adapter-test-secret/, 'no signature or secret is echoed');
      assert.equal(await c.attempts(id), undefined);
    });

    it('answers 413 too-large for a body over maxBodyBytes sent with Content-Length', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok', padding: 'x'.repeat(MAX_BODY * 4) });
      const res = await deliverChunkedNode(server.url, body, { declared: true });
      assert.equal(res.status, 413);
      assert.equal(res.outcome, 'too-large');
      assert.equal(JSON.parse(res.text).code, 'body_too_large');
      assert.equal(await c.attempts(id), undefined);
      assert.equal((await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }))).status, 200);
    });

    it('answers 413 too-large for a chunked body (no Content-Length) that passes maxBodyBytes', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok', padding: 'x'.repeat(MAX_BODY * 4) });
      const res = await deliverChunkedNode(server.url, body);
      assert.equal(res.status, 413);
      assert.equal(res.outcome, 'too-large');
      assert.equal(await c.attempts(id), undefined);
      // (Not through fetch with a streamed body: a server that answers early and closes makes undici
      // fail the request with EPIPE before it hands over the 413.)
    });

    // "413 before buffering more": the answer arrives while the client has sent only part of the body.
    const limit = options.parserLimit ?? MAX_BODY;
    const fromCore = options.parserLimit === undefined;
    const drains = options.parserDrains === true;
    it(
      drains
        ? 'answers 413 to a declared Content-Length over the limit once the drained body is sent'
        : 'answers 413 to a declared Content-Length over the limit after 1 KiB of the body, never waiting for the rest',
      async () => {
        const declared = 4 * limit;
        const res = await sendPart(server.url, { declared, send: drains ? declared : 1024, finish: drains });
        assert.equal(res.status, 413);
        if (fromCore) assert.equal(res.outcome, 'too-large');
      },
    );

    it(
      drains
        ? 'answers 413 to a chunked body over the limit once the drained body is sent'
        : 'answers 413 once a chunked body passes the limit, while the client is still sending',
      async () => {
        const res = await sendPart(server.url, { send: limit + 16 * 1024, finish: drains });
        assert.equal(res.status, 413);
        if (fromCore) assert.equal(res.outcome, 'too-large');
      },
    );

    it('processes a chunked body under the limit from its exact bytes', async () => {
      const id = eventId();
      const res = await deliverChunked(server.url, bodyOf({ id, action: 'ok', padding: 'y'.repeat(9000) }));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
      assert.equal(await c.runs(id), 1);
    });

    it("passes the handler's own response through with the outcome header added", async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'respond' }));
      assert.equal(res.status, 202);
      assert.equal(res.text, 'accepted by the handler');
      assert.equal(res.headers.get('x-handler'), 'own-response');
      assert.deepEqual(res.headers.getSetCookie(), ['a=1; Path=/', 'b=2; Path=/']);
      assert.equal(res.outcome, 'processed');
    });

    it("answers the outcome when the handler's own Response cannot be sent (read already, failing, never ending): the event stays processed", async () => {
      for (const action of ['respond-used', 'respond-broken', 'respond-endless']) {
        const id = eventId();
        const body = bodyOf({ id, action });
        const res = await deliver(server.url, body);
        assert.equal(res.status, 200, action);
        assert.equal(res.outcome, 'processed', action);
        assert.deepEqual(res.json, { outcome: 'processed' }, action);
        assert.doesNotMatch(res.text, /secret|upstream|partial/, action);
        assert.equal(await c.runs(id), 1, action);
        assert.equal((await deliver(server.url, body)).outcome, 'duplicate', action);
      }
    });

    it('finishes and confirms the event when the provider hangs up while the handler runs', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'gate' });
      const gate = await c.gate(id);
      const hangUp = new AbortController();
      const first = fetch(server.url, {
        method: 'POST',
        body,
        headers: await signed(body),
        signal: hangUp.signal,
      });
      await gate.started;
      hangUp.abort();
      await assert.rejects(first);
      await gate.release();
      const deadline = Date.now() + 10_000;
      while ((await c.runs(id)) !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assert.equal(await c.runs(id), 1);
      // Confirmed, not left in flight: the provider's retry is a duplicate.
      let retry = await deliver(server.url, body);
      while (retry.outcome === 'in-flight' && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        retry = await deliver(server.url, body);
      }
      assert.equal(retry.outcome, 'duplicate');
      assert.equal(await c.runs(id), 1);
    });

    it('reports every delivery to onOutcome', async () => {
      const before = (await c.outcomes()).length;
      await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }));
      const after = await c.outcomes();
      assert.equal(after.length, before + 1);
      assert.equal(after.at(-1), 'processed');
    });
  });
}

/**
 * Verification handshakes through the adapter: a GET reaches the provider's handshake with its query
 * string (Meta's `hub.challenge`), a POST handshake gets its response headers (Asana's
 * `X-Hook-Secret`), and neither touches the store or the handler. `start` must route GET and POST
 * to the webhook (as the adapter's docs say to, for such a provider).
 */
/**
 * A 900 KiB signed delivery through the framework reaches the receiver whole, whatever the
 * framework's own body limits, when the receiver keeps the default `maxBodyBytes` (1 MiB).
 */
export function largeBodySuite(name: string, start: (receiver: Receiver) => Promise<Server>): void {
  describe(`${name}: a large body within maxBodyBytes`, () => {
    it('processes a 900 KiB signed delivery (default maxBodyBytes, 1 MiB) from its exact bytes', async () => {
      const f = fixture({ maxBodyBytes: undefined });
      const server = await start(f.receiver);
      try {
        const id = eventId();
        const event = { id, action: 'ok', padding: '' };
        event.padding = 'p'.repeat(LARGE_BODY - bodyOf(event).length);
        const body = bodyOf(event);
        assert.equal(Buffer.byteLength(body), LARGE_BODY);
        const res = await deliverChunkedNode(server.url, body, { declared: true });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.outcome, 'processed');
        const controls = server.controls ?? localControls(f);
        assert.equal(await controls.runs(id), 1);
        assert.equal(
          await controls.inspect(keyOf(body)).then((r) => (r as { state?: string })?.state),
          'completed',
        );
      } finally {
        await server.close();
      }
    });
  });
}

export function handshakeSuite(name: string, start: (receiver: Receiver) => Promise<Server>): void {
  describe(`${name}: verification handshakes reach the provider`, () => {
    let server: Server;
    let f: Fixture | undefined;
    before(async () => {
      f = handshakeFixture();
      server = await start(f.receiver);
      // A fixture in another process (Next.js) is observed through its answers only.
      if (server.controls) f = undefined;
    });
    after(async () => {
      await server?.close();
    });
    const challengeUrl = (token: string) =>
      `${server.url}?hub.mode=subscribe&hub.verify_token=${token}&hub.challenge=1158201444`;

    it('answers a GET challenge from its query string: 200 handshake with the challenge as text, nothing stored or run', async () => {
      const seen = f?.outcomes.length ?? 0;
      const res = await fetch(challengeUrl(VERIFY_TOKEN));
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('onceonly-outcome'), 'handshake');
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      assert.equal(await res.text(), '1158201444');
      if (f) {
        assert.deepEqual(
          f.outcomes.slice(seen).map((o) => o.outcome),
          ['handshake'],
        );
        assert.equal(f.behaviour.attempts.size, 0, 'no handler ran');
      }
    });

    it('refuses a GET challenge with another token: 401 invalid_token, the challenge not echoed', async () => {
      const res = await fetch(challengeUrl('a-guess'));
      assert.equal(res.status, 401);
      assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
      const text = await res.text();
      assert.equal(JSON.parse(text).code, 'invalid_token');
      assert.doesNotMatch(text, /1158201444/);
    });

    it('answers a GET that is no handshake 405 with Allow: POST', async () => {
      const res = await fetch(server.url);
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
      await res.arrayBuffer();
    });

    it('answers a POST handshake with its own response headers, running no handler', async () => {
      const res = await fetch(server.url, {
        method: 'POST',
        body: '',
        headers: { 'x-hook-secret': 'b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81' },
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('onceonly-outcome'), 'handshake');
      assert.equal(
        res.headers.get('x-hook-secret'),
        'b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81',
      );
      await res.arrayBuffer();
      if (f) assert.equal(f.behaviour.attempts.size, 0, 'no handler ran');
    });

    it('still processes a signed delivery on the same route', async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
    });
  });
}

/** Serves a Node request listener on 127.0.0.1, port 0. */
export async function listen(
  listener: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void,
  path = '/webhooks',
): Promise<Server> {
  const { createServer } = await import('node:http');
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as import('node:net').AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Two routes over the Stripe outcome receivers (fail-closed and fail-open), and their stores. */
export interface OutcomeServers {
  closed: string;
  open: string;
  /** Switches both stores off (every call throws) or on. */
  setDown(down: boolean): Promise<void>;
  /** Claims `key` in the fail-closed store with a short lease and never confirms it: a crashed run. */
  plant(key: string, leaseMs: number): Promise<void>;
  close(): Promise<void>;
}

/** Starts the two outcome routes with a framework's `start`, in this process. */
export async function localOutcomes(start: (receiver: Receiver) => Promise<Server>): Promise<OutcomeServers> {
  const closed: OutcomeFixture = outcomeFixture('closed');
  const open: OutcomeFixture = outcomeFixture('open');
  const [a, b] = [await start(closed.receiver), await start(open.receiver)];
  return {
    closed: a.url,
    open: b.url,
    async setDown(down) {
      closed.store.down = down;
      open.store.down = down;
    },
    async plant(key, leaseMs) {
      await closed.store.claim(key, { leaseMs });
    },
    async close() {
      await a.close();
      await b.close();
    },
  };
}

async function post(url: string, d: { body: string; headers: Record<string, string> }): Promise<Answer> {
  return answer(await fetch(url, { method: 'POST', body: d.body, headers: d.headers }));
}

/**
 * Every outcome of the core's table through the adapter, with a provider keyed on its signed id
 * (Stripe, signed by the `stripe` package): status, outcome headers and body exactly as the core's.
 */
export function outcomeSuite(
  name: string,
  start: () => Promise<OutcomeServers>,
  options: SuiteOptions = {},
): void {
  describe(`${name}: every outcome as the core maps it (Stripe-signed)`, () => {
    let s: OutcomeServers;
    before(async () => {
      s = await start();
    });
    after(async () => {
      await s?.close();
    });
    const id = () => `evt_${eventId()}`;

    it('processes an event, then answers its re-signed retry as a duplicate, keyed on the signed id', async () => {
      const event = { id: id(), type: 'invoice.paid', note: 'café – 😀' };
      const first = await post(s.closed, stripeDelivery(event));
      assert.equal(first.status, 200);
      assert.equal(first.outcome, 'processed');
      assert.deepEqual(first.json, { outcome: 'processed' });
      const retry = await post(s.closed, stripeDelivery(event));
      assert.equal(retry.status, 200);
      assert.equal(retry.outcome, 'duplicate');
      assert.deepEqual(retry.json, { outcome: 'duplicate' });
    });

    it('answers 422 conflict for the same event id with another body, without running a handler', async () => {
      const event = { id: id(), type: 'invoice.paid' };
      assert.equal((await post(s.closed, stripeDelivery(event))).outcome, 'processed');
      const forged = await post(s.closed, stripeDelivery({ ...event, note: 'changed' }));
      assert.equal(forged.status, 422);
      assert.equal(forged.outcome, 'conflict');
      assert.deepEqual(forged.json, {
        outcome: 'conflict',
        code: 'fingerprint_mismatch',
        message: 'this event id was already seen with a different body',
      });
    });

    it('acknowledges an event type with no handler as 200 ignored', async () => {
      const res = await post(s.closed, stripeDelivery({ id: id(), type: 'customer.created' }));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'ignored');
      assert.deepEqual(res.json, { outcome: 'ignored' });
    });

    it('fails closed with 503 store-unavailable and Retry-After while the store is down, then processes the retry', async () => {
      const event = { id: id(), type: 'invoice.paid' };
      await s.setDown(true);
      try {
        const res = await post(s.closed, stripeDelivery(event));
        assert.equal(res.status, 503);
        assert.equal(res.outcome, 'store-unavailable');
        assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After');
        assert.equal(res.json?.code, 'store_unavailable');
      } finally {
        await s.setDown(false);
      }
      assert.equal((await post(s.closed, stripeDelivery(event))).outcome, 'processed');
    });

    it('fails open when configured: 200 processed, marked Onceonly-Degraded', async () => {
      await s.setDown(true);
      try {
        const res = await post(s.open, stripeDelivery({ id: id(), type: 'invoice.paid' }));
        assert.equal(res.status, 200);
        assert.equal(res.outcome, 'processed');
        assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
      } finally {
        await s.setDown(false);
      }
    });

    it('marks the takeover of a crashed run with Onceonly-Attempt: 2', async () => {
      const event = { id: id(), type: 'invoice.paid' };
      await s.plant(`stripe:${event.id}`, 150);
      const during = await post(s.closed, stripeDelivery(event));
      assert.equal(during.status, 409);
      assert.equal(during.outcome, 'in-flight');
      assert.ok(Number(during.headers.get('retry-after')) >= 1);
      await new Promise((resolve) => setTimeout(resolve, 400));
      const res = await post(s.closed, stripeDelivery(event));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
      assert.equal(res.headers.get('onceonly-attempt'), '2');
    });

    if (options.parserLimit === undefined) {
      it('answers 408 body_timeout to a body trickled slower than bodyTimeout, without claiming', async () => {
        const event = { id: id(), type: 'invoice.paid' };
        const d = stripeDelivery(event);
        const res = await new Promise<{ status: number; outcome: string | undefined }>((resolve, reject) => {
          const req = httpRequest(
            s.closed,
            { method: 'POST', headers: { ...d.headers, 'content-length': d.body.length } },
            (r) => {
              r.resume();
              resolve({
                status: r.statusCode ?? 0,
                outcome: r.headers['onceonly-outcome'] as string | undefined,
              });
              req.destroy();
            },
          );
          req.on('error', () => {});
          setTimeout(() => reject(new Error('no answer to a trickled body')), BODY_TIMEOUT_MS + 5_000);
          req.write(d.body.slice(0, 10));
        });
        assert.equal(res.status, 408);
        assert.equal(res.outcome, 'rejected');
        // Nothing was claimed: the whole delivery now goes through.
        assert.equal((await post(s.closed, d)).outcome, 'processed');
      });
    }
  });
}
