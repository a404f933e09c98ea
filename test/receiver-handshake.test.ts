/**
 * Verification handshakes through the receiver: the provider's `handshake` hook is consulted before
 * the method check and before verification, its answer becomes the response with the outcome
 * `handshake`, and neither the store nor the handler is touched.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  createReceiver,
  type DeliveryResult,
  hmac,
  memoryStore,
  type Store,
  VerificationError,
} from '../src/index.js';
import type { HandshakeRequest } from '../src/providers/types.js';

const SECRET = 'handshake-test-secret';

/** A store that fails the test if anything touches it. */
function untouchable(): Store {
  const store = memoryStore();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value === 'function' && prop !== 'close') {
        return () => {
          throw new Error(`the store was touched: ${String(prop)}`);
        };
      }
      return value;
    },
  });
}

function setup(handshake?: Parameters<typeof hmac>[0]['handshake']) {
  const outcomes: DeliveryResult[] = [];
  const calls: HandshakeRequest[] = [];
  let ran = 0;
  const receiver = createReceiver({
    provider: hmac({
      name: 'acme',
      secret: SECRET,
      signatureHeader: 'x-acme-signature',
      ...(handshake
        ? {
            handshake: (request: HandshakeRequest, tools: { authenticate(input: unknown): unknown }) => {
              calls.push(request);
              return handshake(request, tools as never);
            },
          }
        : {}),
    }),
    store: untouchable(),
    handler: () => {
      ran += 1;
    },
    onOutcome: (r) => {
      outcomes.push(r);
    },
    logger: false,
  });
  return { receiver, outcomes, calls, ran: () => ran };
}

/** A GET challenge (`?challenge=..&token=..`) and a signed POST `{"handshake":"<c>"}` echo. */
const challenge: Parameters<typeof hmac>[0]['handshake'] = async (request, { authenticate }) => {
  if (request.method === 'GET') {
    const q = new URL(request.url ?? '/', 'http://x').searchParams;
    if (!q.has('challenge')) return undefined;
    if (q.get('token') !== 'ours') throw new VerificationError('invalid_token', 'onceonly: not our token');
    return { body: q.get('challenge') ?? '' };
  }
  const text = Buffer.from(request.rawBody).toString('utf8');
  if (!text.includes('"handshake"')) return undefined;
  await authenticate(request);
  return { status: 201, body: { echoed: JSON.parse(text).handshake }, headers: { 'x-extra': 'yes' } };
};

const sign = (body: string) => createHmac('sha256', SECRET).update(body).digest('hex');

describe('verification handshakes', () => {
  it('routes a GET through fetch() to the handshake: its answer, outcome handshake, store and handler untouched', async () => {
    const { receiver, outcomes, calls, ran } = setup(challenge);
    const res = await receiver.fetch(new Request('https://example.com/hooks?challenge=abc123&token=ours'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'handshake');
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(await res.text(), 'abc123');
    assert.deepEqual(
      outcomes.map((o) => [o.outcome, o.status, o.key]),
      [['handshake', 200, undefined]],
    );
    assert.equal(ran(), 0);
    assert.equal(calls[0]?.method, 'GET');
    assert.equal(calls[0]?.rawBody.byteLength, 0);
    assert.equal(calls[0]?.url, 'https://example.com/hooks?challenge=abc123&token=ours');
  });

  it('takes the method in receive(), never reading a GET body', async () => {
    const { receiver } = setup(challenge);
    const body: AsyncIterable<Uint8Array> = {
      [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(new Error('a GET body was read')) }),
    };
    const result = await receiver.receive({
      rawBody: body,
      headers: {},
      url: 'https://example.com/hooks?challenge=x&token=ours',
      method: 'get',
    });
    assert.equal(result.outcome, 'handshake');
    assert.equal(await result.response?.text(), 'x');
  });

  it('refuses a handshake the hook rejects with its code, echoing nothing', async () => {
    const { receiver, outcomes } = setup(challenge);
    const res = await receiver.fetch(new Request('https://example.com/hooks?challenge=abc123&token=theirs'));
    assert.equal(res.status, 401);
    assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
    const text = await res.text();
    assert.equal(JSON.parse(text).code, 'invalid_token');
    assert.doesNotMatch(text, /abc123/);
    assert.equal(outcomes.at(-1)?.outcome, 'rejected');
  });

  it('answers 405 with Allow: POST when the hook does not take a GET, through fetch() and receive()', async () => {
    const { receiver } = setup(challenge);
    const res = await receiver.fetch(new Request('https://example.com/hooks'));
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    const result = await receiver.receive({ rawBody: new Uint8Array(0), headers: {}, method: 'PUT' });
    assert.equal(result.status, 405);
    assert.equal(result.code, 'method_not_allowed');
  });

  it('consults the hook for a POST before verification: a signed handshake gets its status, JSON body and headers', async () => {
    const { receiver, ran } = setup(challenge);
    const body = '{"handshake":"h-1"}';
    const res = await receiver.fetch(
      new Request('https://example.com/hooks', {
        method: 'POST',
        body,
        headers: { 'x-acme-signature': sign(body) },
      }),
    );
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('onceonly-outcome'), 'handshake');
    assert.equal(res.headers.get('x-extra'), 'yes');
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { echoed: 'h-1' });
    assert.equal(ran(), 0);
    // Unsigned, the hook's own authenticate refuses it.
    const forged = await receiver.fetch(
      new Request('https://example.com/hooks', {
        method: 'POST',
        body,
        headers: { 'x-acme-signature': sign('x') },
      }),
    );
    assert.equal(forged.status, 401);
    assert.equal(forged.headers.get('onceonly-outcome'), 'rejected');
  });

  it('lets every other POST go on to verification and the handler', async () => {
    const outcomes: DeliveryResult[] = [];
    let ran = 0;
    const receiver = createReceiver({
      provider: hmac({
        name: 'acme2',
        secret: SECRET,
        signatureHeader: 'x-acme-signature',
        handshake: challenge,
      }),
      store: memoryStore(),
      handler: () => {
        ran += 1;
      },
      onOutcome: (r) => {
        outcomes.push(r);
      },
      logger: false,
    });
    const body = '{"id":"e1"}';
    const res = await receiver.fetch(
      new Request('https://example.com/hooks', {
        method: 'POST',
        body,
        headers: { 'x-acme-signature': sign(body) },
      }),
    );
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.equal(ran, 1);
  });

  it('without a handshake hook, a GET is 405 before anything is read, as before', async () => {
    const { receiver, outcomes } = setup();
    const res = await receiver.fetch(new Request('https://example.com/hooks?challenge=abc&token=ours'));
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    assert.equal(outcomes.at(-1)?.code, 'method_not_allowed');
  });

  it('turns a hook that throws something unexpected into a clean rejection, never a rejected promise', async () => {
    const { receiver } = setup(() => {
      throw new TypeError('boom');
    });
    const res = await receiver.fetch(new Request('https://example.com/hooks'));
    assert.equal(res.status, 400);
    assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
  });
});
