/**
 * The Lambda adapter against events and contexts no AWS service sends but a test invocation, a
 * misrouted trigger or a hostile caller of the function may: each ends in an answer (a malformed
 * event a clear 400 with a stable code that touches neither store nor handler), never a rejection
 * of the handler's promise, and a valid delivery is never refused or mangled by the adapter.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type LambdaContext, type LambdaHttpEvent, webhook } from '../../src/adapters/lambda.js';
import { createReceiver } from '../../src/index.js';
import { stripe } from '../../src/providers/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { stripeSignature } from '../support/stripe-signature.js';
import { wrapStore } from '../support/wrap-store.js';

const SECRET = 'whsec_lambda_hostile';
let seq = 0;

function rig(handler: () => unknown = () => {}) {
  const storeCalls: string[] = [];
  let runs = 0;
  const receiver = createReceiver({
    provider: stripe({ secret: SECRET }),
    store: wrapStore(memoryStore(), (method) => storeCalls.push(method)),
    logger: false,
    handler: () => {
      runs++;
      return handler();
    },
  });
  const lambda = webhook(receiver);
  return {
    storeCalls,
    runs: () => runs,
    invoke: (event: unknown, context?: unknown) =>
      lambda(event as LambdaHttpEvent, context as LambdaContext | undefined),
  };
}

/** A signed Stripe delivery in an HTTP API (v2) event; `extra` overrides the event's fields. */
function v2(extra: Record<string, unknown> = {}) {
  const text = JSON.stringify({ id: `evt_hostile_${++seq}`, type: 'invoice.paid' });
  return {
    version: '2.0',
    rawPath: '/webhooks',
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'stripe-signature': stripeSignature(text, SECRET) },
    requestContext: { domainName: 'id.execute-api.us-east-1.amazonaws.com', http: { method: 'POST' } },
    body: text,
    isBase64Encoded: false,
    ...extra,
  };
}

function v1(extra: Record<string, unknown> = {}) {
  const { headers, body } = v2();
  return {
    httpMethod: 'POST',
    path: '/webhooks',
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    requestContext: { domainName: 'id.execute-api.us-east-1.amazonaws.com', path: '/prod/webhooks' },
    body,
    isBase64Encoded: false,
    ...extra,
  };
}

const context = (extra: Record<string, unknown> = {}) => ({
  callbackWaitsForEmptyEventLoop: true,
  getRemainingTimeInMillis: () => 30_000,
  ...extra,
});

function refused(result: { statusCode: number; body: string }, code: string, r: ReturnType<typeof rig>) {
  assert.equal(result.statusCode, 400, result.body);
  const body = JSON.parse(result.body);
  assert.equal(body.code, code);
  assert.doesNotMatch(result.body, /\bat .*\.(ts|js):\d+/, 'no stack trace in the answer');
  assert.deepEqual(r.storeCalls, [], 'the store is not touched');
  assert.equal(r.runs(), 0, 'the handler does not run');
}

describe('lambda: malformed bodies get 400 invalid_body, before the store and the handler', () => {
  const cases: [string, Record<string, unknown>][] = [
    ['isBase64Encoded given as the string "false"', { isBase64Encoded: 'false' }],
    ['isBase64Encoded given as the string "true"', { isBase64Encoded: 'true' }],
    ['isBase64Encoded given as 1', { isBase64Encoded: 1 }],
    ['a body that is not base64 although isBase64Encoded', { isBase64Encoded: true, body: '{"id":"x"}!' }],
    ['a body that is a number', { body: 12345 }],
    ['a body that is a number, isBase64Encoded', { body: 12345, isBase64Encoded: true }],
    ['a body that is an object', { body: { id: 'evt_1' } }],
    ['a body that is an array', { body: ['a'] }],
  ];
  for (const [name, extra] of cases) {
    it(name, async () => {
      const r = rig();
      refused(await r.invoke(v2(extra), context()), 'invalid_body', r);
      const rest = await r.invoke(v1(extra), context());
      refused(rest, 'invalid_body', r);
    });
  }

  it('a body null or absent is an empty body (refused by its signature), and base64 with line breaks is decoded', async () => {
    const r = rig();
    assert.equal((await r.invoke(v2({ body: null }), context())).statusCode, 401);
    assert.equal((await r.invoke(v2({ body: undefined }), context())).statusCode, 401);
    const event = v2();
    const wrapped = Buffer.from(event.body)
      .toString('base64')
      .replace(/(.{16})/g, '$1\r\n');
    const ok = await r.invoke({ ...event, body: wrapped, isBase64Encoded: true }, context());
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(r.runs(), 1);
  });
});

describe('lambda: malformed headers and cookies get 400 malformed_header', () => {
  it('a v2 cookies field that is a string, or holds a number', async () => {
    for (const cookies of ['a=1', [1], { a: 1 }]) {
      const r = rig();
      refused(await r.invoke(v2({ cookies }), context()), 'malformed_header', r);
    }
  });

  it('multi-value headers whose values are not lists of text', async () => {
    for (const bad of ['t=1,v1=00', [5], { a: 'b' }, 7]) {
      const r = rig();
      const event = v1();
      (event.multiValueHeaders as Record<string, unknown>)['x-extra'] = bad;
      refused(await r.invoke(event, context()), 'malformed_header', r);
    }
  });

  it('single-value headers whose value is not text', async () => {
    for (const bad of [5, ['a'], { a: 'b' }, true]) {
      const r = rig();
      const event = v2();
      refused(
        await r.invoke({ ...event, headers: { ...event.headers, 'x-extra': bad } }, context()),
        'malformed_header',
        r,
      );
    }
  });

  it('headers that are not an object', async () => {
    for (const headers of ['stripe-signature: x', 5, ['a', 'b']]) {
      const r = rig();
      refused(await r.invoke(v2({ headers }), context()), 'malformed_header', r);
    }
  });

  it('null header values are left out, and names in any case are one header (the first Content-Type wins)', async () => {
    const r = rig();
    const event = v2();
    const headers = {
      'X-Null': null,
      'Stripe-Signature': event.headers['stripe-signature'],
      'CONTENT-TYPE': 'application/json',
      'content-Type': 'text/plain',
    };
    const ok = await r.invoke({ ...event, headers }, context());
    assert.equal(ok.statusCode, 200, ok.body);
  });
});

describe('lambda: odd contexts never make the handler reject', () => {
  const contexts: [string, () => unknown][] = [
    ['a frozen context', () => Object.freeze(context())],
    [
      'callbackWaitsForEmptyEventLoop a getter only',
      () => ({
        getRemainingTimeInMillis: () => 30_000,
        get callbackWaitsForEmptyEventLoop() {
          return true;
        },
      }),
    ],
    ['getRemainingTimeInMillis not a function', () => context({ getRemainingTimeInMillis: 5_000 })],
    [
      'getRemainingTimeInMillis that throws',
      () =>
        context({
          getRemainingTimeInMillis: () => {
            throw new Error('no clock');
          },
        }),
    ],
    ['getRemainingTimeInMillis that answers text', () => context({ getRemainingTimeInMillis: () => '5000' })],
    [
      'getRemainingTimeInMillis that answers NaN',
      () => context({ getRemainingTimeInMillis: () => Number.NaN }),
    ],
    ['remaining time past 2^31 ms', () => context({ getRemainingTimeInMillis: () => 2 ** 40 })],
    ['remaining time Infinity', () => context({ getRemainingTimeInMillis: () => Number.POSITIVE_INFINITY })],
    ['no context at all', () => undefined],
    ['a context that is a string', () => 'context'],
  ];
  for (const [name, make] of contexts) {
    it(`${name}: processed`, async () => {
      const r = rig();
      const result = await r.invoke(v2(), make());
      assert.equal(result.statusCode, 200, result.body);
      assert.equal(r.runs(), 1);
    });
  }

  it('no time left (0 or negative): the handler is cut at once, answered 500 failed, the claim released', async () => {
    for (const left of [0, -5_000]) {
      const r = rig(() => new Promise(() => {}));
      const started = Date.now();
      const result = await r.invoke(v2(), context({ getRemainingTimeInMillis: () => left }));
      assert.ok(Date.now() - started < 2_000, 'answered at once');
      assert.equal(result.statusCode, 500, result.body);
      assert.equal(JSON.parse(result.body).code, 'handler_timeout');
      assert.ok(r.storeCalls.includes('release'), 'the claim released');
    }
  });
});

describe('lambda: events that are no HTTP event', () => {
  it('throw a TypeError naming what the handler takes, quoting at most a few short key names', async () => {
    const r = rig();
    for (const event of [null, undefined, 'x', 5, [], { Records: [] }]) {
      await assert.rejects(r.invoke(event, context()), TypeError);
    }
    const long = { [`${'k'.repeat(10_000)}\u001b[31m`]: 1, a: 2, b: 3 };
    await assert.rejects(r.invoke(long, context()), (error: Error) => {
      assert.ok(error.message.length < 600, `a message of ${error.message.length} characters`);
      assert.ok(!error.message.includes('\u001b'), 'no terminal escape in a log line');
      return true;
    });
    assert.deepEqual(r.storeCalls, []);
  });
});

describe('lambda: the URL of an odd event', () => {
  it('a lone surrogate or a non-text value in the query, a domain or path that is no text: answered, not thrown', async () => {
    const odd = [
      { multiValueQueryStringParameters: { a: ['\ud800'], '\udfff': ['b'] } },
      { queryStringParameters: { a: '\ud800x', b: 5 }, multiValueQueryStringParameters: null },
      { multiValueQueryStringParameters: { a: 'not-a-list', b: [{}] } },
      { requestContext: { domainName: { x: 1 }, path: 5 }, path: ['x'] },
    ];
    for (const extra of odd) {
      const r = rig();
      const result = await r.invoke(v1(extra), context());
      assert.equal(result.statusCode, 200, `${JSON.stringify(extra)}: ${result.body}`);
    }
    const r = rig();
    const result = await r.invoke(
      v2({
        rawQueryString: 5,
        requestContext: { domainName: 7, http: { method: 'POST' } },
      }),
      context(),
    );
    assert.equal(result.statusCode, 200, result.body);
  });
});
