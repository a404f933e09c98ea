/**
 * The Lambda adapter, invoked as Lambda invokes it: with each HTTP event shape (built after AWS's
 * documented sample events: API Gateway REST proxy, HTTP API payload 2.0, Function URL, ALB with
 * and without multi-value headers) carrying signed deliveries of several providers, and a context
 * whose remaining time runs out.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { type LambdaContext, type LambdaHttpEvent, webhook } from '../../src/adapters/lambda.js';
import { createReceiver, type DeliveryResult, type ReceiverOptions } from '../../src/index.js';
import { github, square, stripe, twilio } from '../../src/providers/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { stripeSignature } from '../support/stripe-signature.js';
import { twilioSignature } from '../support/twilio-signature.js';
import { wrapStore } from '../support/wrap-store.js';

const STRIPE_SECRET = 'whsec_lambda_test';
const GITHUB_SECRET = 'gh-lambda-secret';
const SQUARE_KEY = 'sq-lambda-signature-key';
const TWILIO_TOKEN = 'twilio-lambda-auth-token';
const DOMAIN = 'id.execute-api.us-east-1.amazonaws.com';
const URL_DOMAIN = 'abcdefg1234.lambda-url.us-west-2.on.aws';
const ALB_HOST = 'lambda-alb-123578498.us-east-1.elb.amazonaws.com';

// ---- the documented event shapes ---------------------------------------------------------------

interface Request {
  readonly method?: string;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly base64?: boolean;
}

/** An API Gateway REST proxy event, as in the developer guide's input-format sample. */
function restEvent(
  r: Request,
  { path = '/webhooks', stage = 'prod', query = {} as Record<string, string[]> } = {},
) {
  const headers: Record<string, string> = { Host: DOMAIN, 'X-Forwarded-Proto': 'https', ...r.headers };
  const hasQuery = Object.keys(query).length > 0;
  return {
    resource: path,
    path,
    httpMethod: r.method ?? 'POST',
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: hasQuery
      ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v.at(-1)]))
      : null,
    multiValueQueryStringParameters: hasQuery ? query : null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'id',
      domainName: DOMAIN,
      domainPrefix: 'id',
      extendedRequestId: 'request-id',
      httpMethod: r.method ?? 'POST',
      identity: { sourceIp: '192.0.2.1', userAgent: 'Stripe/1.0' },
      path: `/${stage}${path}`,
      protocol: 'HTTP/1.1',
      requestId: 'id=',
      requestTime: '04/Mar/2020:19:15:17 +0000',
      requestTimeEpoch: 1583349317135,
      resourceId: null,
      resourcePath: path,
      stage,
    },
    pathParameters: null,
    stageVariables: null,
    body: r.body,
    isBase64Encoded: r.base64 ?? false,
  };
}

/** An HTTP API (payload 2.0) event, or a Function URL's (the same shape on a lambda-url domain). */
function v2Event(
  r: Request & { cookies?: string[] },
  { domain = DOMAIN, rawPath = '/webhooks', rawQueryString = '' } = {},
) {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries({ host: domain, 'x-forwarded-proto': 'https', ...r.headers })) {
    headers[k.toLowerCase()] = v;
  }
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath,
    rawQueryString,
    ...(r.cookies ? { cookies: r.cookies } : {}),
    headers,
    requestContext: {
      accountId: '123456789012',
      apiId: domain.split('.')[0],
      domainName: domain,
      domainPrefix: domain.split('.')[0],
      http: {
        method: r.method ?? 'POST',
        path: rawPath,
        protocol: 'HTTP/1.1',
        sourceIp: '192.0.2.1',
        userAgent: 'agent',
      },
      requestId: 'id',
      routeKey: '$default',
      stage: '$default',
      time: '12/Mar/2020:19:03:58 +0000',
      timeEpoch: 1583348638390,
    },
    body: r.body,
    isBase64Encoded: r.base64 ?? false,
  };
}

/** An ALB target event (the Lambda guide's sample); `multi` as with multi-value headers turned on. */
function albEvent(
  r: Request,
  { path = '/webhooks', query = {} as Record<string, string[]>, multi = false, proto = 'https' } = {},
) {
  const headers: Record<string, string> = {
    host: ALB_HOST,
    'x-amzn-trace-id': 'Root=1-5c536348-3d683b8b04734faae651f476',
    'x-forwarded-for': '72.12.164.125',
    'x-forwarded-port': proto === 'https' ? '443' : '80',
    'x-forwarded-proto': proto,
    ...Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k.toLowerCase(), v])),
  };
  const base = {
    requestContext: {
      elb: {
        targetGroupArn:
          'arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/lambda-279XGJDqGZ5rsrHC2Fjr/49e9d65c45c6791a',
      },
    },
    httpMethod: r.method ?? 'POST',
    path,
    body: r.body,
    isBase64Encoded: r.base64 ?? false,
  };
  return multi
    ? {
        ...base,
        multiValueQueryStringParameters: query,
        multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      }
    : {
        ...base,
        queryStringParameters: Object.fromEntries(Object.entries(query).map(([k, v]) => [k, v.at(-1)!])),
        headers,
      };
}

/** A Lambda context with `ms` left. */
function contextWith(ms = 30_000): LambdaContext & { functionName: string } {
  const end = Date.now() + ms;
  return {
    functionName: 'webhooks',
    callbackWaitsForEmptyEventLoop: true,
    getRemainingTimeInMillis: () => Math.max(0, end - Date.now()),
  };
}

// ---- signed deliveries --------------------------------------------------------------------------

let seq = 0;

/** A Stripe delivery whose body carries multi-byte UTF-8, signed over its exact bytes. */
function stripeDelivery(base64 = false): Request & { id: string; text: string } {
  const id = `evt_lambda_${++seq}`;
  const text = JSON.stringify({ id, type: 'invoice.paid', data: { object: { note: 'café ☕ 😀 "q"' } } });
  return {
    id,
    text,
    headers: {
      'Content-Type': 'application/json; charset=utf-8',
      'Stripe-Signature': stripeSignature(text, STRIPE_SECRET),
    },
    body: base64 ? Buffer.from(text).toString('base64') : text,
    base64,
  };
}

function githubDelivery(): Request & { text: string } {
  const text = JSON.stringify({ zen: 'Keep it logically awesome. ✨', hook_id: ++seq });
  return {
    text,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'ping',
      'x-github-delivery': `d-${seq}`,
      'x-hub-signature-256': `sha256=${createHmac('sha256', GITHUB_SECRET).update(text).digest('hex')}`,
    },
    body: text,
  };
}

function squareDelivery(url: string): Request {
  const text = JSON.stringify({
    merchant_id: 'M1',
    type: 'payment.updated',
    event_id: `sq-${++seq}`,
    data: {},
  });
  return {
    headers: {
      'content-type': 'application/json',
      'x-square-hmacsha256-signature': createHmac('sha256', SQUARE_KEY)
        .update(url + text)
        .digest('base64'),
    },
    body: text,
  };
}

function twilioDelivery(url: string): Request {
  const params = { MessageSid: `SM${++seq}`, MessageStatus: 'delivered', To: '+15005550006' };
  return {
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilioSignature(TWILIO_TOKEN, url, params),
    },
    body: new URLSearchParams(params).toString(),
  };
}

// ---- the receivers ------------------------------------------------------------------------------

interface Rig {
  handler: ReturnType<typeof webhook>;
  runs: { rawBody: Uint8Array; headers: Headers; attempt: number }[];
  results: DeliveryResult[];
  storeCalls: string[];
  store: ReturnType<typeof memoryStore>;
}

function rig(
  provider: ReceiverOptions<any>['provider'],
  extra: Partial<ReceiverOptions<any>> = {},
  margin?: '1s' | number,
): Rig {
  const store = memoryStore();
  const storeCalls: string[] = [];
  const runs: Rig['runs'] = [];
  const results: DeliveryResult[] = [];
  const receiver = createReceiver({
    provider,
    store: wrapStore(store, (method) => storeCalls.push(method)),
    logger: false,
    handler: ({ delivery, attempt }) => {
      runs.push({ rawBody: delivery.rawBody, headers: delivery.headers, attempt });
    },
    onOutcome: (result) => {
      results.push(result);
    },
    ...extra,
  });
  return {
    handler: webhook(receiver, margin === undefined ? {} : { margin }),
    runs,
    results,
    storeCalls,
    store,
  };
}

const invoke = (r: Rig, event: object, context: LambdaContext = contextWith()) =>
  r.handler(event as LambdaHttpEvent, context);

// ---- the tests ----------------------------------------------------------------------------------

describe('lambda: API Gateway REST (v1) proxy events', () => {
  it('a Stripe delivery with a text body: processed once with its exact UTF-8 bytes, then a duplicate', async () => {
    const r = rig(stripe({ secret: STRIPE_SECRET }));
    const d = stripeDelivery();
    const context = contextWith();
    const first = await invoke(r, restEvent(d), context);
    assert.equal(first.statusCode, 200);
    assert.equal(first.isBase64Encoded, false);
    assert.deepEqual(first.multiValueHeaders?.['onceonly-outcome'], ['processed']);
    assert.equal(first.headers, undefined, 'the answer is in the request shape: multi-value headers');
    assert.deepEqual(JSON.parse(first.body), { outcome: 'processed' });
    assert.equal(context.callbackWaitsForEmptyEventLoop, false);
    assert.equal(r.runs.length, 1);
    assert.deepEqual(Buffer.from(r.runs[0]!.rawBody), Buffer.from(d.text, 'utf8'));

    const again = await invoke(r, restEvent(d));
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.multiValueHeaders?.['onceonly-outcome'], ['duplicate']);
    assert.equal(r.runs.length, 1, 'the handler ran once');
  });

  it('a Twilio callback is verified against https://<domain>/<stage>/<path>?<query> from requestContext', async () => {
    const r = rig(twilio({ secret: TWILIO_TOKEN }));
    const url = `https://${DOMAIN}/prod/twilio/status?tenant=acme%20co`;
    const event = restEvent(twilioDelivery(url), { path: '/twilio/status', query: { tenant: ['acme co'] } });
    const result = await invoke(r, event);
    assert.equal(result.statusCode, 200, result.body);
    assert.deepEqual(result.multiValueHeaders?.['onceonly-outcome'], ['processed']);
    assert.equal(r.runs.length, 1);
  });

  it('repeated headers reach the handler joined as Node joins them (", ", cookies "; ", a single Content-Type)', async () => {
    const r = rig(stripe({ secret: STRIPE_SECRET }));
    const d = stripeDelivery();
    const event = restEvent(d);
    Object.assign(event.multiValueHeaders, {
      'X-Custom': ['a', 'b'],
      Cookie: ['c1=1', 'c2=2'],
      'content-type': ['text/plain'],
    });
    const result = await invoke(r, event);
    assert.equal(result.statusCode, 200, result.body);
    const headers = r.runs[0]!.headers;
    assert.equal(headers.get('x-custom'), 'a, b');
    assert.equal(headers.get('cookie'), 'c1=1; c2=2');
    assert.equal(
      headers.get('content-type'),
      'application/json; charset=utf-8',
      'the first Content-Type wins',
    );
  });
});

describe('lambda: HTTP API (v2) and Function URL events', () => {
  it('a Stripe delivery with a base64 body: decoded to the exact bytes, processed, then a duplicate', async () => {
    const r = rig(stripe({ secret: STRIPE_SECRET }));
    const d = stripeDelivery(true);
    const first = await invoke(r, v2Event(d));
    assert.deepEqual(Object.keys(first).sort(), ['body', 'headers', 'isBase64Encoded', 'statusCode']);
    assert.equal(first.statusCode, 200);
    assert.equal(first.headers?.['onceonly-outcome'], 'processed');
    assert.equal(first.isBase64Encoded, false);
    assert.deepEqual(Buffer.from(r.runs[0]!.rawBody), Buffer.from(d.text, 'utf8'));
    const again = await invoke(r, v2Event(d));
    assert.equal(again.headers?.['onceonly-outcome'], 'duplicate');
    assert.equal(r.runs.length, 1);
  });

  it('a GitHub delivery through a Function URL, its cookies put back in the cookie header', async () => {
    const r = rig(github({ secret: GITHUB_SECRET }));
    const d = githubDelivery();
    const result = await invoke(
      r,
      v2Event({ ...d, cookies: ['a=1', 'b=2'] }, { domain: URL_DOMAIN, rawPath: '/' }),
    );
    assert.equal(result.statusCode, 200, result.body);
    assert.equal(result.headers?.['onceonly-outcome'], 'processed');
    assert.equal(r.runs[0]!.headers.get('cookie'), 'a=1; b=2');
    assert.equal(r.runs[0]!.headers.get('x-github-event'), 'ping');
  });

  it('a Square delivery is verified against https://<domainName><rawPath>?<rawQueryString>', async () => {
    const r = rig(square({ secret: SQUARE_KEY }));
    const url = `https://${URL_DOMAIN}/hooks/square?shop=a%2Fb&x=1`;
    const event = v2Event(squareDelivery(url), {
      domain: URL_DOMAIN,
      rawPath: '/hooks/square',
      rawQueryString: 'shop=a%2Fb&x=1',
    });
    const result = await invoke(r, event);
    assert.equal(result.statusCode, 200, result.body);
    assert.equal(r.runs.length, 1);
  });

  it("the handler's own Response: status, headers, every Set-Cookie in cookies, a binary body as base64", async () => {
    const bytes = new Uint8Array([0xff, 0x00, 0xfe, 0x41]);
    const r = rig(stripe({ secret: STRIPE_SECRET }), {
      handler: () => {
        const headers = new Headers({ 'x-app': 'yes', 'content-type': 'application/octet-stream' });
        headers.append('set-cookie', 's=1; Path=/');
        headers.append('set-cookie', 't=2; Path=/');
        return new Response(bytes, { status: 201, headers });
      },
    });
    const v2 = await invoke(r, v2Event(stripeDelivery()));
    assert.equal(v2.statusCode, 201);
    assert.equal(v2.headers?.['x-app'], 'yes');
    assert.equal(v2.headers?.['onceonly-outcome'], 'processed');
    assert.deepEqual(v2.cookies, ['s=1; Path=/', 't=2; Path=/']);
    assert.equal(v2.isBase64Encoded, true);
    assert.deepEqual(Buffer.from(v2.body, 'base64'), Buffer.from(bytes));
    const v1 = await invoke(r, restEvent(stripeDelivery()));
    assert.deepEqual(v1.multiValueHeaders?.['set-cookie'], ['s=1; Path=/', 't=2; Path=/']);
  });

  it('a GET that is no handshake: 405 with Allow: POST, nothing read or stored', async () => {
    const r = rig(stripe({ secret: STRIPE_SECRET }));
    const result = await invoke(r, v2Event({ method: 'GET', headers: {}, body: '' }));
    assert.equal(result.statusCode, 405);
    assert.equal(result.headers?.allow, 'POST');
    assert.deepEqual(r.storeCalls, []);
  });
});

describe('lambda: ALB target events', () => {
  it('single-value headers: a Square delivery verified against x-forwarded-proto://host/path, answered with statusDescription', async () => {
    const r = rig(square({ secret: SQUARE_KEY }));
    const url = `https://${ALB_HOST}/webhooks/square`;
    const first = await invoke(r, albEvent(squareDelivery(url), { path: '/webhooks/square' }));
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.statusDescription, '200 OK');
    assert.equal(first.headers?.['onceonly-outcome'], 'processed');
    assert.equal(first.multiValueHeaders, undefined);
    assert.equal(first.isBase64Encoded, false);
  });

  it('multi-value headers: a Twilio callback (query as sent, plain http), answered in multiValueHeaders', async () => {
    const r = rig(twilio({ secret: TWILIO_TOKEN }));
    const url = `http://${ALB_HOST}/twilio?tenant=acme%20co&tag=a&tag=b`;
    const d = twilioDelivery(url);
    const event = albEvent(d, {
      path: '/twilio',
      multi: true,
      proto: 'http',
      query: { tenant: ['acme%20co'], tag: ['a', 'b'] },
    });
    const first = await invoke(r, event);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.statusDescription, '200 OK');
    assert.deepEqual(first.multiValueHeaders?.['onceonly-outcome'], ['processed']);
    assert.equal(first.headers, undefined);
    const again = await invoke(r, event);
    assert.deepEqual(again.multiValueHeaders?.['onceonly-outcome'], ['duplicate']);
    assert.equal(r.runs.length, 1);
  });

  it('a GitHub delivery with a base64 body (binary target group)', async () => {
    const r = rig(github({ secret: GITHUB_SECRET }));
    const d = githubDelivery();
    const result = await invoke(
      r,
      albEvent({ ...d, body: Buffer.from(d.text).toString('base64'), base64: true }),
    );
    assert.equal(result.statusCode, 200, result.body);
    assert.deepEqual(Buffer.from(r.runs[0]!.rawBody), Buffer.from(d.text));
  });
});

describe('lambda: refusals', () => {
  const shapes = {
    'REST (v1)': restEvent,
    'HTTP API (v2)': (d: Request) => v2Event(d),
    'Function URL': (d: Request) => v2Event(d, { domain: URL_DOMAIN }),
    ALB: (d: Request) => albEvent(d),
    'ALB multi-value': (d: Request) => albEvent(d, { multi: true }),
  };
  for (const [shape, make] of Object.entries(shapes)) {
    it(`${shape}: a tampered body is refused with 401 before any store access`, async () => {
      const r = rig(stripe({ secret: STRIPE_SECRET }));
      const d = stripeDelivery();
      const result = await invoke(r, make({ ...d, body: d.body.replace('invoice.paid', 'invoice.void') }));
      assert.equal(result.statusCode, 401);
      assert.equal(JSON.parse(result.body).code, 'invalid_signature');
      assert.deepEqual(r.storeCalls, []);
      assert.equal(r.runs.length, 0);
    });
  }

  it('a body over maxBodyBytes: 413 (base64 by the size it decodes to, text by its length), nothing stored', async () => {
    const r = rig(github({ secret: GITHUB_SECRET }), { maxBodyBytes: 100 });
    const at = (n: number, base64: boolean) => ({
      headers: { 'x-github-event': 'ping', 'x-hub-signature-256': 'sha256=00' },
      body: base64 ? Buffer.alloc(n, 0x61).toString('base64') : 'a'.repeat(n),
      base64,
    });
    for (const base64 of [true, false]) {
      const over = await invoke(r, v2Event(at(101, base64)));
      assert.equal(over.statusCode, 413, `base64 ${base64}`);
      assert.equal(over.headers?.['onceonly-outcome'], 'too-large');
      assert.equal(over.headers?.connection, undefined, 'no Connection header: the gateway owns it');
      // At the limit: read, and refused only by its (bad) signature.
      const fits = await invoke(r, v2Event(at(100, base64)));
      assert.equal(fits.statusCode, 401, `base64 ${base64}`);
    }
    // Text that is over the limit only once encoded (2 bytes per é): the core's own bound.
    const wide = await invoke(r, restEvent({ headers: at(0, false).headers, body: 'é'.repeat(51) }));
    assert.equal(wide.statusCode, 413);
    assert.deepEqual(r.storeCalls, []);
    assert.ok(r.results.filter((x) => x.outcome === 'too-large').length === 3);
  });

  it('an event that is no HTTP event (an SQS batch sent to the webhook) throws, naming what it takes', async () => {
    const r = rig(github({ secret: GITHUB_SECRET }));
    await assert.rejects(
      invoke(r, { Records: [] }),
      /API Gateway \(REST or HTTP API\), Function URL or ALB events/,
    );
  });
});

describe("lambda: the invocation's remaining time caps the handler's deadline", () => {
  it('3 s left, a handler that hangs: failed before the invocation ends, the claim released, a retry gets in', async () => {
    let hang = true;
    const attempts: number[] = [];
    const r = rig(stripe({ secret: STRIPE_SECRET }), {
      timeout: '30s',
      handler: ({ attempt }) => {
        attempts.push(attempt);
        return hang ? new Promise(() => {}) : undefined; // ignores its signal
      },
    });
    const d = stripeDelivery();
    const started = Date.now();
    const first = await invoke(r, v2Event(d), contextWith(3_000));
    const took = Date.now() - started;
    assert.equal(first.statusCode, 500);
    assert.equal(first.headers?.['onceonly-outcome'], 'failed');
    assert.ok(
      took >= 1_900 && took < 2_900,
      `answered in ${took} ms: before the 3 s, after the 2 s deadline`,
    );
    assert.equal(r.results.at(-1)?.code, 'handler_timeout');
    const view = await r.store.inspect(r.results.at(-1)!.key!);
    assert.equal(view?.state, 'released');

    hang = false;
    const retry = await invoke(r, v2Event(d), contextWith(10_000));
    assert.equal(retry.statusCode, 200);
    assert.equal(retry.headers?.['onceonly-outcome'], 'processed');
    assert.equal(retry.headers?.['onceonly-attempt'], '2');
    assert.deepEqual(attempts, [1, 2]);
  });

  it("the receiver's own timeout still applies when it is shorter", async () => {
    const r = rig(stripe({ secret: STRIPE_SECRET }), { timeout: 200, handler: () => new Promise(() => {}) });
    const started = Date.now();
    const result = await invoke(r, v2Event(stripeDelivery()), contextWith(60_000));
    assert.equal(result.statusCode, 500);
    assert.ok(Date.now() - started < 1_500);
  });
});

describe("receive()'s per-delivery timeout, which the adapter passes", () => {
  it('caps the deadline of that delivery only, and a value that is no duration is refused as a misuse', async () => {
    const receiver = createReceiver({
      provider: stripe({ secret: STRIPE_SECRET }),
      store: memoryStore(),
      logger: false,
      handler: ({ signal }) => new Promise((resolve) => signal.addEventListener('abort', resolve)),
    });
    const d = stripeDelivery();
    const input = { rawBody: d.text, headers: { 'stripe-signature': d.headers['Stripe-Signature']! } };
    const started = Date.now();
    const capped = await receiver.receive({ ...input, timeout: '150ms' });
    assert.equal(capped.outcome, 'failed');
    assert.equal(capped.code, 'handler_timeout');
    assert.ok(Date.now() - started < 1_000);
    await assert.rejects(receiver.receive({ ...input, timeout: -1 }), { code: 'invalid_duration' });
  });
});
