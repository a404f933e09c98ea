import { strict as assert } from 'node:assert';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { bodyParser } from '@koa/bodyparser';
import { Router } from '@koa/router';
import Koa3 from 'koa';
import { webhook } from '../../src/adapters/koa.js';
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
  listen,
  localOutcomes,
  outcomeSuite,
  type Server,
} from './harness.js';

// `koa2` is koa@2 installed under an alias.
const Koa2 = createRequire(import.meta.url)('koa2') as typeof Koa3;

for (const [label, Koa] of [
  ['Koa 3', Koa3],
  ['Koa 2', Koa2],
] as const) {
  const serve = async (build: (app: Koa3) => void): Promise<Server> => {
    const app = new Koa();
    app.silent = true;
    build(app);
    return listen(app.callback());
  };

  const startApp = (receiver: Receiver) =>
    serve((app) => {
      app.use(webhook(receiver, { path: '/webhooks' }) as Koa3.Middleware);
      app.use(bodyParser() as Koa3.Middleware);
    });
  outcomeSuite(label, () => localOutcomes(startApp));
  largeBodySuite(label, startApp);
  adapterSuite(label, (receiver) =>
    serve((app) => {
      app.use(webhook(receiver, { path: '/webhooks' }) as Koa3.Middleware);
      app.use(bodyParser() as Koa3.Middleware);
    }),
  );
  // The middleware takes every method on its path: a GET reaches the provider's handshake.
  handshakeSuite(label, startApp);

  describe(`${label}: other body parsers`, () => {
    let f: Fixture;
    const servers: Server[] = [];
    before(() => {
      f = fixture();
    });
    after(async () => {
      for (const s of servers) await s.close();
    });

    it('answers 500 body_already_parsed, naming the line to move, when bodyParser() ran first', async () => {
      const errors: unknown[] = [];
      const s = await serve((app) => {
        app.on('error', (error) => errors.push(error));
        app.use(bodyParser() as Koa3.Middleware);
        app.use(webhook(f.receiver, { path: '/webhooks' }) as Koa3.Middleware);
      });
      servers.push(s);
      const id = eventId();
      const res = await deliver(s.url, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /above app\.use\(bodyParser\(\)\)/, {
        id,
        ran: f.behaviour.attempts.get(id),
        outcomes: f.outcomes,
      });
      assert.deepEqual(errors, [], "nothing reached Koa's error handling: the core answered");
    });

    it('mounts on one path through @koa/router, above the parser the router applies to that path', async () => {
      const s = await serve((app) => {
        const router = new Router();
        router.post('/webhooks', webhook(f.options) as never);
        router.post('/api', bodyParser() as never, (ctx) => {
          ctx.body = { echoed: (ctx.request as { body?: unknown }).body };
        });
        app.use(router.routes() as Koa3.Middleware);
      });
      servers.push(s);
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      assert.equal((await deliver(s.url, body)).outcome, 'processed');
      assert.equal((await deliver(s.url, body)).outcome, 'duplicate');
      const other = await fetch(s.url.replace('/webhooks', '/api'), {
        method: 'POST',
        body: JSON.stringify({ a: 1 }),
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await other.json(), { echoed: { a: 1 } });
    });

    it('leaves the app body parser working for other routes when the webhook sits above it', async () => {
      const s = await serve((app) => {
        app.use(webhook(f.options, { path: '/webhooks' }) as Koa3.Middleware);
        app.use(bodyParser() as Koa3.Middleware);
        app.use((ctx) => {
          ctx.body = { echoed: (ctx.request as { body?: unknown }).body };
        });
      });
      servers.push(s);
      const id = eventId();
      assert.equal((await deliver(s.url, bodyOf({ id, action: 'ok' }))).outcome, 'processed');
      const other = await fetch(s.url.replace('/webhooks', '/api'), {
        method: 'POST',
        body: JSON.stringify({ a: 1 }),
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await other.json(), { echoed: { a: 1 } });
      const get = await fetch(s.url);
      assert.equal(get.status, 405);
      assert.equal(get.headers.get('allow'), 'POST');
    });
  });
}
