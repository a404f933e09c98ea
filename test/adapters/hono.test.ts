import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { webhook } from '../../src/adapters/hono.js';
import type { Receiver } from '../../src/index.js';
import {
  adapterSuite,
  assertParsedFirst,
  bodyOf,
  deliver,
  eventId,
  type Fixture,
  fixture,
  handshakeSuite,
  largeBodySuite,
  localOutcomes,
  outcomeSuite,
  type Server,
} from './harness.js';

function start(build: (app: Hono) => void): Promise<Server> {
  const app = new Hono();
  build(app);
  return new Promise((resolve) => {
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 }, (info) => {
      resolve({
        url: `http://127.0.0.1:${info.port}/webhooks`,
        close: () =>
          new Promise<void>((done) => {
            (server as import('node:http').Server).closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

const startApp = (receiver: Receiver) =>
  start((app) => {
    app.post('/webhooks', webhook(receiver));
  });
adapterSuite('Hono on @hono/node-server', startApp);
outcomeSuite('Hono on @hono/node-server', () => localOutcomes(startApp));
largeBodySuite('Hono on @hono/node-server', startApp);
handshakeSuite('Hono on @hono/node-server', (receiver) =>
  start((app) => {
    app.on(['GET', 'POST'], '/webhooks', webhook(receiver));
  }),
);

describe('Hono: a middleware that reads the body first', () => {
  let f: Fixture;
  const servers: Server[] = [];
  before(() => {
    f = fixture();
  });
  after(async () => {
    for (const s of servers) await s.close();
  });

  it('answers 500 body_already_parsed, naming the fix, when a global middleware ran c.req.json()', async () => {
    const s = await start((app) => {
      app.use(async (c, next) => {
        if (c.req.header('content-type') === 'application/json')
          c.set('parsed' as never, (await c.req.json()) as never);
        await next();
      });
      app.post('/webhooks', webhook(f.receiver));
    });
    servers.push(s);
    const id = eventId();
    const res = await deliver(s.url, bodyOf({ id, action: 'ok' }));
    assertParsedFirst(res, /above the middleware that reads the body/, {
      id,
      ran: f.behaviour.attempts.get(id),
      outcomes: f.outcomes,
    });
  });

  it('uses the exact bytes a global middleware read with c.req.arrayBuffer()', async () => {
    const s = await start((app) => {
      app.use(async (c, next) => {
        await c.req.arrayBuffer();
        await next();
      });
      app.post('/webhooks', webhook(f.options));
    });
    servers.push(s);
    const id = eventId();
    const body = bodyOf({ id, action: 'ok' });
    assert.equal((await deliver(s.url, body)).outcome, 'processed');
    assert.equal((await deliver(s.url, body)).outcome, 'duplicate');
    const big = await deliver(s.url, bodyOf({ id: eventId(), action: 'ok', padding: 'q'.repeat(20_000) }));
    assert.equal(big.status, 413);
    assert.equal(f.behaviour.runs.get(id), 1);
  });
});

describe('Hono: the web-standard core (Bun, Deno, Workers) through app.fetch', () => {
  it('receives a Request with no Node server in between', async () => {
    const f = fixture();
    const app = new Hono();
    app.post('/webhooks', webhook(f.receiver));
    const id = eventId();
    const body = bodyOf({ id, action: 'ok' });
    const { signed } = await import('./harness.js');
    const request = () =>
      signed(body).then(
        (headers) => new Request('http://worker.example/webhooks', { method: 'POST', body, headers }),
      );
    const first = await app.fetch(await request());
    const second = await app.fetch(await request());
    assert.equal(first.headers.get('onceonly-outcome'), 'processed');
    assert.equal(second.headers.get('onceonly-outcome'), 'duplicate');
    assert.equal(f.behaviour.runs.get(id), 1);
  });
});
