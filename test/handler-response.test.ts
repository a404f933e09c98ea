/**
 * A handler may answer with its own `Response`. Every adapter reads it whole before answering (at
 * most 1 MiB, within the handler's timeout, at most 5 s); one that cannot be read is answered with
 * the outcome's own reply, and the receiver's logger hears why. The shared adapter suite sends the
 * three that cannot be sent through every framework; this file checks the rest on `fetch()` and
 * `onceonly/node`: the warning, the time allowed, a body over 1 MiB, a null-body status, and a
 * `fetch()` Response passed on (its bytes decoded, so without their `Content-Encoding`).
 */
import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { webhook } from '../src/adapters/node.js';
import {
  createReceiver,
  type DeliveryResult,
  type Duration,
  hmac,
  memoryStore,
  type Receiver,
  toResponse,
} from '../src/index.js';
import { SECRET, signed } from './adapters/harness.js';

const provider = hmac<{ id: string; answer: string }>({
  name: 'github',
  secret: SECRET,
  signatureHeader: 'x-hub-signature-256',
  signaturePrefix: 'sha256=',
});

let upstream: Server;
let upstreamUrl: string;
before(async () => {
  // What a handler proxies: a gzip-encoded answer, as a service behind it might send.
  upstream = createServer((req, res) => {
    if (req.url === '/unknown-coding') {
      // A coding fetch() does not decode: the bytes come through as they were sent.
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'x-custom' });
      res.end('still encoded');
      return;
    }
    res.writeHead(201, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'x-upstream': 'yes' });
    res.end(gzipSync('from upstream'));
  });
  upstream.listen(0, '127.0.0.1');
  await once(upstream, 'listening');
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/`;
});
after(() => upstream.close());

/** A receiver whose handler answers with the Response named by the event's `answer`. */
function setup(timeout: Duration = '2s') {
  const warnings: string[] = [];
  const outcomes: DeliveryResult[] = [];
  const receiver = createReceiver({
    provider,
    store: memoryStore(),
    timeout,
    logger: { warn: (message: string) => warnings.push(message), error: () => {} },
    onOutcome: (result) => {
      outcomes.push(result);
    },
    handler: async ({ event }) => {
      switch (event.answer) {
        case 'endless':
          return new Response(new ReadableStream({ pull: () => new Promise(() => {}) }));
        case 'large':
          return new Response(new Uint8Array(1_048_577));
        case 'error':
          return Response.error();
        case 'no-content':
          return new Response(null, { status: 204, headers: { 'x-handler': 'yes' } });
        case 'proxied':
          return fetch(upstreamUrl);
        case 'proxied-unknown':
          return fetch(`${upstreamUrl}unknown-coding`);
        case 'strings':
          return new Response(
            new ReadableStream({
              start: (controller) => {
                controller.enqueue('not bytes');
                controller.close();
              },
            }),
          );
      }
      return undefined;
    },
  });
  return { receiver, warnings, outcomes };
}

let n = 0;
async function request(answer: string): Promise<Request> {
  const body = JSON.stringify({ id: `evt_${++n}`, answer });
  return new Request('http://localhost/webhooks', { method: 'POST', body, headers: await signed(body) });
}

/** The delivery named by `answer`, sent over real HTTP to the receiver behind onceonly/node. */
async function throughNode(receiver: Receiver, answer: string): Promise<Response> {
  const server = createServer(webhook(receiver)).listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const req = await request(answer);
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`, {
      method: 'POST',
      body: await req.text(),
      headers: req.headers,
    });
    // Read before the server closes.
    return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
  } finally {
    server.close();
  }
}

describe("the handler's own Response", () => {
  it('one that never ends is given the handler timeout (at most 5 s), then the outcome answers and the logger says why', async () => {
    const { receiver, warnings, outcomes } = setup('600ms');
    const started = Date.now();
    const res = await receiver.fetch(await request('endless'));
    const took = Date.now() - started;
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { outcome: 'processed' });
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.ok(took >= 550 && took < 5_000, `answered after ${took} ms`);
    assert.equal(outcomes[0]?.outcome, 'processed');
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      /^onceonly: github processed event .*: the handler's own Response could not be sent \(its body was not read in 600 ms\); answered with the outcome instead$/,
    );
  });

  it('one over 1 MiB is answered with the outcome', async () => {
    const { receiver, warnings } = setup();
    const res = await receiver.fetch(await request('large'));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { outcome: 'processed' });
    assert.match(warnings[0] ?? '', /its body is over 1 MiB/);
  });

  it('one whose stream gives something other than bytes is answered with the outcome', async () => {
    const { receiver, warnings } = setup();
    const res = await receiver.fetch(await request('strings'));
    assert.deepEqual(await res.json(), { outcome: 'processed' });
    assert.match(warnings[0] ?? '', /something other than bytes/);
  });

  it('Response.error() (status 0) is answered with the outcome, through fetch() and onceonly/node', async () => {
    const { receiver, warnings } = setup();
    const res = await receiver.fetch(await request('error'));
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { outcome: 'processed' });
    assert.match(warnings[0] ?? '', /its status 0 cannot be answered/);
    const answer = await throughNode(receiver, 'error');
    assert.equal(answer.status, 200);
    assert.deepEqual(await answer.json(), { outcome: 'processed' });
  });

  it('a 204 passes through, with no body and the outcome header', async () => {
    const { receiver, warnings } = setup();
    const res = await receiver.fetch(await request('no-content'));
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('x-handler'), 'yes');
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.equal(await res.text(), '');
    assert.deepEqual(warnings, []);
  });

  it('passes a fetch() Response on without the Content-Encoding of the bytes fetch() decoded (fetch() and onceonly/node)', async () => {
    const { receiver, warnings } = setup();
    const web = await receiver.fetch(await request('proxied'));
    assert.equal(web.status, 201);
    assert.equal(web.headers.get('content-encoding'), null);
    assert.equal(web.headers.get('x-upstream'), 'yes');
    assert.equal(await web.text(), 'from upstream');

    const res = await throughNode(receiver, 'proxied');
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-encoding'), null);
    assert.equal(res.headers.get('onceonly-outcome'), 'processed');
    assert.equal(await res.text(), 'from upstream');
    assert.deepEqual(warnings, []);
  });

  it('keeps the Content-Encoding of a fetch() Response in a coding fetch() did not decode', async () => {
    const { receiver } = setup();
    const res = await receiver.fetch(await request('proxied-unknown'));
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-encoding'), 'x-custom');
    assert.equal(await res.text(), 'still encoded');
  });

  it('toResponse answers the outcome for a Response whose body was read already', async () => {
    const used = new Response('read already', { status: 202 });
    await used.text();
    const res = toResponse({
      outcome: 'processed',
      status: 200,
      degraded: undefined,
      code: undefined,
      provider: 'github',
      key: 'github:k',
      id: 'evt_x',
      type: undefined,
      attempt: 1,
      error: undefined,
      response: used,
      retryAfter: undefined,
      durationMs: 1,
    } as DeliveryResult);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { outcome: 'processed' });
  });
});
