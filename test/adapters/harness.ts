/**
 * The end-to-end suite every framework adapter passes: a real server on a loopback port, real HTTP
 * through `fetch` (and `node:http` for a chunked body), deliveries signed by `@octokit/webhooks-methods`
 * for the generic `hmac` provider configured like GitHub. Each framework's test file supplies how
 * to start its app around a receiver and adds its own body-parser cases.
 */
import { strict as assert } from 'node:assert';
import { createHash, randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { sign } from '@octokit/webhooks-methods';
import {
  createReceiver,
  type DeliveryResult,
  hmac,
  memoryStore,
  type Receiver,
  type ReceiverOptions,
  type Store,
} from '../../src/index.js';

export const SECRET = 'adapter-test-secret-do-not-leak';
/** Small enough that the oversized cases stay fast, large enough for every ordinary delivery. */
export const MAX_BODY = 16 * 1024;
/** The handler deadline: long enough for a loaded 2-core machine, short enough for the timeout case. */
export const DEADLINE = '2s';

export type GithubLikeEvent = { id: string; action: string; padding?: string };

/** The generic HMAC provider set up the way GitHub signs: `X-Hub-Signature-256: sha256=<hex>`. */
export function githubLike() {
  return hmac<GithubLikeEvent>({
    name: 'github',
    secret: SECRET,
    signatureHeader: 'x-hub-signature-256',
    signaturePrefix: 'sha256=',
    typeHeader: 'x-github-event',
    idHeader: 'x-github-delivery',
  });
}

/** Handler behaviour is chosen by the event's `action`, so one server serves every case. */
export class Behaviour {
  readonly runs = new Map<string, number>();
  readonly attempts = new Map<string, number>();
  private readonly gates = new Map<string, { started: () => void; open: Promise<void> }>();
  private readonly failed = new Set<string>();

  /** Holds `id`'s handler until `release` is called; resolves `started` when it begins. */
  gate(id: string): { started: Promise<void>; release: () => void } {
    let started!: () => void;
    let release!: () => void;
    const startedP = new Promise<void>((resolve) => (started = resolve));
    const open = new Promise<void>((resolve) => (release = resolve));
    this.gates.set(id, { started, open });
    return { started: startedP, release };
  }

  readonly handler: NonNullable<ReceiverOptions<ReturnType<typeof githubLike>>['handler']> = async ({
    event,
    signal,
  }) => {
    this.attempts.set(event.id, (this.attempts.get(event.id) ?? 0) + 1);
    switch (event.action) {
      case 'gate': {
        const gate = this.gates.get(event.id);
        gate?.started();
        await gate?.open;
        break;
      }
      case 'throw-once':
        if (!this.failed.has(event.id)) {
          this.failed.add(event.id);
          throw new Error('payment API timed out: token=sk_live_secret');
        }
        break;
      case 'hang-once':
        if (!this.failed.has(event.id)) {
          this.failed.add(event.id);
          await new Promise((_, reject) =>
            signal.addEventListener('abort', () => reject(signal.reason), { once: true }),
          );
        }
        break;
      case 'respond':
        this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
        return new Response('accepted by the handler', {
          status: 202,
          headers: { 'content-type': 'text/plain', 'x-handler': 'own-response' },
        });
    }
    this.runs.set(event.id, (this.runs.get(event.id) ?? 0) + 1);
    return undefined;
  };
}

export interface Fixture {
  receiver: Receiver;
  store: Store;
  behaviour: Behaviour;
  outcomes: DeliveryResult[];
  options: ReceiverOptions<ReturnType<typeof githubLike>>;
}

/** A receiver (and the options that made it) over a fresh memory store. */
export function fixture(overrides: Partial<ReceiverOptions<ReturnType<typeof githubLike>>> = {}): Fixture {
  const behaviour = new Behaviour();
  const outcomes: DeliveryResult[] = [];
  const store = memoryStore();
  const options: ReceiverOptions<ReturnType<typeof githubLike>> = {
    provider: githubLike(),
    store,
    handler: behaviour.handler,
    maxBodyBytes: MAX_BODY,
    timeout: DEADLINE,
    onOutcome: (result) => {
      outcomes.push(result);
    },
    ...overrides,
  };
  return { receiver: createReceiver(options), store, behaviour, outcomes, options };
}

let counter = 0;
/** A fresh event id, unique across runs. */
export function eventId(): string {
  counter += 1;
  return `evt_${randomUUID().slice(0, 8)}_${counter}`;
}

export function bodyOf(event: GithubLikeEvent): string {
  return JSON.stringify(event);
}

/** The dedup key the GitHub-like provider uses: a digest of the signed body (its id header is unsigned). */
export function keyOf(body: string): string {
  return `github:body:${createHash('sha256').update(body).digest('hex')}`;
}

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

/** Sends a chunked body through `node:http` and reports what the server answered and whether it read it all. */
export async function deliverChunkedNode(
  url: string,
  body: string,
): Promise<{ status: number; outcome: string | undefined; headers: Record<string, unknown> }> {
  const headers = await signed(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          outcome: res.headers['onceonly-outcome'] as string | undefined,
          headers: res.headers,
        }),
      );
    });
    req.on('error', reject);
    const bytes = Buffer.from(body);
    // No Content-Length: node:http sends Transfer-Encoding: chunked.
    for (let offset = 0; offset < bytes.length; offset += 4096)
      req.write(bytes.subarray(offset, offset + 4096));
    req.end();
  });
}

export interface Server {
  /** The webhook route's full URL. */
  url: string;
  close(): Promise<void>;
}

/**
 * The shared behaviours. `start` runs the framework with the adapter on a loopback port, port 0, and
 * returns the webhook URL.
 */
export function adapterSuite(name: string, start: (receiver: Receiver) => Promise<Server>): void {
  describe(`${name}: end to end over real HTTP`, () => {
    let server: Server;
    let f: Fixture;

    before(async () => {
      f = fixture();
      server = await start(f.receiver);
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
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it('answers a repeated delivery 200 duplicate without running the handler again', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      await deliver(server.url, body);
      const res = await deliver(server.url, body);
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'duplicate');
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it('answers a concurrent copy 409 in-flight with Retry-After while the first still runs', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'gate' });
      const gate = f.behaviour.gate(id);
      const first = deliver(server.url, body);
      await gate.started;
      const second = await deliver(server.url, body);
      gate.release();
      const done = await first;
      assert.equal(second.status, 409);
      assert.equal(second.outcome, 'in-flight');
      const retryAfter = Number(second.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
      assert.equal(done.status, 200);
      assert.equal(done.outcome, 'processed');
      assert.equal((await deliver(server.url, body)).outcome, 'duplicate');
      assert.equal(f.behaviour.runs.get(id), 1);
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
      assert.equal(await f.store.inspect(keyOf(body)), undefined, 'the claim was released');
      const retry = await deliver(server.url, body);
      assert.equal(retry.status, 200);
      assert.equal(retry.outcome, 'processed');
      assert.equal(f.behaviour.attempts.get(id), 2);
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it('answers 500 when the handler passes its deadline, releases the claim, and the retry is processed', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'hang-once' });
      const failed = await deliver(server.url, body);
      assert.equal(failed.status, 500);
      assert.equal(failed.outcome, 'failed');
      assert.equal(failed.json?.code, 'handler_timeout');
      assert.equal(await f.store.inspect(keyOf(body)), undefined, 'the claim was released');
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
      assert.equal(f.behaviour.attempts.get(id), undefined);
    });

    it('answers 413 too-large for a body over maxBodyBytes sent with Content-Length', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok', padding: 'x'.repeat(MAX_BODY * 4) });
      const res = await deliver(server.url, body);
      assert.equal(res.status, 413);
      assert.equal(res.outcome, 'too-large');
      assert.equal(res.json?.code, 'body_too_large');
      assert.equal(f.behaviour.attempts.get(id), undefined);
      assert.equal((await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }))).status, 200);
    });

    it('answers 413 too-large for a chunked body (no Content-Length) that passes maxBodyBytes', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok', padding: 'x'.repeat(MAX_BODY * 4) });
      const res = await deliverChunkedNode(server.url, body);
      assert.equal(res.status, 413);
      assert.equal(res.outcome, 'too-large');
      assert.equal(f.behaviour.attempts.get(id), undefined);
      const streamed = await deliverChunked(server.url, body);
      assert.equal(streamed.status, 413);
      assert.equal(streamed.outcome, 'too-large');
    });

    it('processes a chunked body under the limit from its exact bytes', async () => {
      const id = eventId();
      const res = await deliverChunked(server.url, bodyOf({ id, action: 'ok', padding: 'y'.repeat(9000) }));
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it("passes the handler's own response through with the outcome header added", async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'respond' }));
      assert.equal(res.status, 202);
      assert.equal(res.text, 'accepted by the handler');
      assert.equal(res.headers.get('x-handler'), 'own-response');
      assert.equal(res.outcome, 'processed');
    });

    it('reports every delivery to onOutcome', async () => {
      const before = f.outcomes.length;
      await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }));
      assert.equal(f.outcomes.length, before + 1);
      assert.equal(f.outcomes.at(-1)?.outcome, 'processed');
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
