import { strict as assert } from 'node:assert';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import Fastify5, { type FastifyInstance } from 'fastify';
import { webhook } from '../../src/adapters/fastify.js';
import type { Receiver } from '../../src/index.js';
import {
  adapterSuite,
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

// `fastify4` is fastify@4 installed under an alias: the plugin is declared and tested for both majors.
const Fastify4 = createRequire(import.meta.url)('fastify4') as typeof Fastify5;

for (const [label, Fastify] of [
  ['Fastify 5', Fastify5],
  ['Fastify 4', Fastify4],
] as const) {
  async function start(build: (app: FastifyInstance) => Promise<void> | void): Promise<Server> {
    const app = Fastify();
    await build(app);
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    return { url: `${address}/webhooks`, close: () => app.close() };
  }

  const startApp = (receiver: Receiver) =>
    start((app) => {
      app.register(webhook(receiver), { prefix: '/webhooks' });
    });
  adapterSuite(label, startApp);
  outcomeSuite(label, () => localOutcomes(startApp));
  largeBodySuite(label, startApp);
  // The plugin's route takes GET as well as POST.
  handshakeSuite(label, startApp);

  describe(`${label}: the app keeps its own body parsers`, () => {
    let f: Fixture;
    let server: Server;
    before(async () => {
      f = fixture();
      server = await start(async (app) => {
        // A global JSON parser of the app's own, registered before the plugin: the webhook scope must not use it.
        app.removeContentTypeParser('application/json');
        app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, text, done) => {
          done(null, { parsedByApp: JSON.parse(text as string) });
        });
        app.post('/api', async (request) => ({ echoed: request.body }));
        await app.register(webhook(f.options, { path: '/webhooks' }));
      });
    });
    after(() => server.close());

    it('verifies the exact bytes while the app route still gets its parsed JSON', async () => {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      const first = await deliver(server.url, body);
      assert.equal(first.status, 200);
      assert.equal(first.outcome, 'processed');
      assert.equal((await deliver(server.url, body)).outcome, 'duplicate');
      const other = await fetch(server.url.replace('/webhooks', '/api'), {
        method: 'POST',
        body: JSON.stringify({ a: 1 }),
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await other.json(), { echoed: { parsedByApp: { a: 1 } } });
    });

    it('receives bodies of any content type, and none at all, from their bytes', async () => {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }), {
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(res.outcome, 'processed');
      const empty = await fetch(server.url, { method: 'POST' });
      assert.equal(empty.status, 400);
      assert.equal(empty.headers.get('onceonly-outcome'), 'rejected');
    });
  });

  describe(`${label}: an app hook that sets a reply serializer`, () => {
    it('the outcome JSON is sent as it is, not serialized again (bytes skip the serializer, text would not)', async () => {
      const f = fixture();
      const server = await start(async (app) => {
        app.addHook('onRequest', async (_request, reply) => {
          reply.serializer((payload: unknown) => JSON.stringify(payload));
        });
        await app.register(webhook(f.receiver), { prefix: '/webhooks' });
      });
      try {
        const res = await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }));
        assert.equal(res.status, 200);
        assert.equal(res.json?.outcome, 'processed');
        // Neither the app's serializer nor Fastify's charset touch the outcome JSON.
        assert.equal(res.headers.get('content-type'), 'application/json');
      } finally {
        await server.close();
      }
    });
  });

  describe(`${label}: an onSend hook that throws on the outcome`, () => {
    it("the app's error handler answers with its own JSON, as Fastify serializes it", async () => {
      const f = fixture();
      const server = await start(async (app) => {
        app.setErrorHandler(async (_error, _request, reply) => {
          reply.code(503);
          return { error: 'audit_failed' };
        });
        let thrown = false;
        app.addHook('onSend', async (_request, _reply, payload) => {
          const text = Buffer.isBuffer(payload) ? payload.toString() : String(payload);
          if (!thrown && text.includes('"outcome"')) {
            thrown = true;
            throw new Error('the audit log is down');
          }
          return payload;
        });
        await app.register(webhook(f.receiver), { prefix: '/webhooks' });
      });
      try {
        const res = await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }));
        assert.equal(res.status, 503);
        assert.deepEqual(res.json, { error: 'audit_failed' });
        // Fastify's own JSON path: it adds the charset.
        assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      } finally {
        await server.close();
      }
    });
  });

  describe(`${label}: a hook that read the payload before the route`, () => {
    it('refuses with 500 body_already_parsed naming the fix, never a signature mismatch', async () => {
      const f = fixture();
      const server = await start(async (app) => {
        app.addHook('preParsing', async (_request, _reply, payload) => {
          for await (const _ of payload);
          return payload;
        });
        await app.register(webhook(f.receiver), { prefix: '/webhooks' });
      });
      try {
        const id = eventId();
        const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
        assert.equal(res.status, 500);
        assert.equal(res.json?.code, 'body_already_parsed');
        assert.match(res.json?.message ?? '', /^onceonly: .*register the webhook plugin before/);
        assert.equal(f.behaviour.attempts.get(id), undefined);
      } finally {
        await server.close();
      }
    });
  });
}
