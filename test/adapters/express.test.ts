import { strict as assert } from 'node:assert';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import express5 from 'express';
import { webhook } from '../../src/adapters/express.js';
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

// `express4` is express@4 installed under an alias; it has the same API as far as these tests go.
const express4 = createRequire(import.meta.url)('express4') as typeof express5;

for (const [label, express] of [
  ['Express 5', express5],
  ['Express 4', express4],
] as const) {
  const app = (build: (app: ReturnType<typeof express>) => void) => {
    const a = express();
    a.set('env', 'test'); // keeps Express's default error handler from printing stacks in the test log
    build(a);
    return listen(a);
  };

  const startApp = (receiver: Receiver) =>
    app((a) => {
      a.post('/webhooks', webhook(receiver));
      a.use(express.json());
    });
  outcomeSuite(label, () => localOutcomes(startApp));
  largeBodySuite(label, startApp);
  adapterSuite(label, (receiver: Receiver) =>
    app((a) => {
      a.post('/webhooks', webhook(receiver));
      a.use(express.json());
    }),
  );
  // GET and POST routed to the webhook, as its docs say for a provider with a GET handshake.
  handshakeSuite(label, (receiver: Receiver) =>
    app((a) => {
      a.all('/webhooks', webhook(receiver));
      a.use(express.json());
    }),
  );

  describe(`${label}: other body parsers`, () => {
    let f: Fixture;
    const servers: Server[] = [];
    before(() => {
      f = fixture();
    });
    after(async () => {
      for (const s of servers) await s.close();
    });
    const serve = async (build: (a: ReturnType<typeof express>) => void) => {
      const s = await app(build);
      servers.push(s);
      return s;
    };

    it('answers 500 body_already_parsed naming the fix when express.json() ran before the route, whatever error handler the app has', async () => {
      const errors: unknown[] = [];
      const s = await serve((a) => {
        a.use(express.json());
        a.post('/webhooks', webhook(f.receiver));
        a.use((error: any, _req: any, res: any, _next: any) => {
          errors.push(error);
          res.status(599).end();
        });
      });
      const id = eventId();
      const res = await deliver(s.url, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /above app\.use\(express\.json\(\)\)/, {
        id,
        ran: f.behaviour.attempts.get(id),
        outcomes: f.outcomes,
      });
      assert.deepEqual(errors, [], "no error reached the app's handler: the core answered");
    });

    it("answers the same with Express's default error handling", async () => {
      const s = await serve((a) => {
        a.use(express.json());
        a.post('/webhooks', webhook(f.receiver));
      });
      const id = eventId();
      const res = await deliver(s.url, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /above app\.use\(express\.json\(\)\)/, {
        id,
        ran: f.behaviour.attempts.get(id),
        outcomes: f.outcomes,
      });
    });

    it('uses the raw bytes express.raw() kept in front of the route', async () => {
      const s = await serve((a) => {
        a.post('/webhooks', express.raw({ type: '*/*' }), webhook(f.receiver));
        a.use(express.json());
      });
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      assert.equal((await deliver(s.url, body)).outcome, 'processed');
      assert.equal((await deliver(s.url, body)).outcome, 'duplicate');
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it('uses req.rawBody kept by a global express.json({ verify }) and enforces maxBodyBytes on it', async () => {
      const s = await serve((a) => {
        a.use(
          express.json({
            verify: (req, _res, buf) => {
              (req as unknown as { rawBody?: Buffer }).rawBody = buf;
            },
          }),
        );
        a.post('/webhooks', webhook(f.receiver));
      });
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      assert.equal((await deliver(s.url, body)).outcome, 'processed');
      const big = await deliver(s.url, bodyOf({ id: eventId(), action: 'ok', padding: 'z'.repeat(20_000) }));
      assert.equal(big.status, 413);
      assert.equal(big.outcome, 'too-large');
    });

    it('takes receiver options instead of a receiver', async () => {
      const s = await serve((a) => {
        a.post('/webhooks', webhook(f.options));
      });
      const id = eventId();
      const res = await deliver(s.url, bodyOf({ id, action: 'ok' }));
      assert.equal(res.outcome, 'processed');
      assert.equal(f.behaviour.runs.get(id), 1);
    });

    it('answers 405 rejected with Allow: POST when mounted with app.use and called with GET', async () => {
      const s = await serve((a) => {
        a.use('/webhooks', webhook(f.receiver));
      });
      const res = await fetch(s.url);
      assert.equal(res.status, 405);
      assert.equal(res.headers.get('allow'), 'POST');
      assert.equal(res.headers.get('onceonly-outcome'), 'rejected');
    });
  });
}
