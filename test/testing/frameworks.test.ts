/**
 * docs/testing.md's patterns, each on the real framework: a handler tested with a signed delivery
 * from the kit, sent twice (processed, then duplicate: the handler ran once), and a delivery one
 * byte off refused. Express through supertest, Hono through `app.request`, a Next route handler
 * called with a `Request`, NestJS through its testing module (`@nestjs/testing`) on a real server.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import express from 'express';
import { Hono } from 'hono';
import request from 'supertest';
import { webhook as expressWebhook } from '../../src/adapters/express.js';
import { webhook as honoWebhook } from '../../src/adapters/hono.js';
import { OnceonlyModule } from '../../src/adapters/nestjs.js';
import { webhook as nextWebhook } from '../../src/adapters/next.js';
import { memoryStore } from '../../src/index.js';
import { github, stripe } from '../../src/providers/index.js';
import { signedDelivery, testSecret } from '../../src/testing/index.js';

describe('testing a handler with the kit, per adapter', () => {
  it('Express with supertest', async () => {
    const secret = testSecret('github');
    const paid: string[] = [];
    const app = express();
    app.post(
      '/webhooks/github',
      expressWebhook({
        provider: github({ secret }),
        store: memoryStore(),
        handler: ({ type }) => void paid.push(String(type)),
      }),
    );
    const delivery = signedDelivery('github', { secret, type: 'push' });
    // The body as text: superagent would serialise a Buffer sent as application/json to other bytes.
    const send = (body: string) => request(app).post('/webhooks/github').set(delivery.headers).send(body);
    const first = await send(delivery.text);
    assert.equal(first.status, 200);
    assert.equal(first.headers['onceonly-outcome'], 'processed');
    const again = await send(delivery.text);
    assert.equal(again.headers['onceonly-outcome'], 'duplicate');
    assert.deepEqual(paid, ['push']);
    const refused = await send(delivery.text.replace('main', 'mein'));
    assert.equal(refused.status, 401);
    assert.equal(refused.body.code, 'invalid_signature');
  });

  it('Hono with app.request', async () => {
    const secret = testSecret('stripe');
    const seen: string[] = [];
    const app = new Hono();
    app.post(
      '/webhooks/stripe',
      honoWebhook({
        provider: stripe({ secret }),
        store: memoryStore(),
        handler: ({ id }) => void seen.push(id!),
      }),
    );
    const delivery = signedDelivery('stripe', {
      secret,
      type: 'checkout.session.completed',
      id: 'evt_test_1',
    });
    const first = await app.request('/webhooks/stripe', delivery.init());
    assert.equal(first.headers.get('onceonly-outcome'), 'processed');
    const again = await app.request('/webhooks/stripe', delivery.init());
    assert.equal(again.headers.get('onceonly-outcome'), 'duplicate');
    assert.deepEqual(seen, ['evt_test_1']);
  });

  it('a Next route handler called with a Request', async () => {
    const secret = testSecret('stripe');
    let runs = 0;
    const POST = nextWebhook({
      provider: stripe({ secret }),
      store: memoryStore(),
      handler: () => void runs++,
    });
    const delivery = signedDelivery('stripe', { secret });
    assert.equal((await POST(delivery.request())).headers.get('onceonly-outcome'), 'processed');
    assert.equal((await POST(delivery.request())).headers.get('onceonly-outcome'), 'duplicate');
    // Signed five minutes and one second ago: outside Stripe's tolerance.
    const stale = signedDelivery('stripe', { secret, at: new Date(Date.now() - 301_000) });
    const refused = await POST(stale.request());
    assert.equal(refused.status, 401);
    assert.equal(((await refused.json()) as { code: string }).code, 'timestamp_too_old');
    assert.equal(runs, 1);
  });

  it('NestJS through its testing module, on a real server', async () => {
    const secret = testSecret('github');
    const seen: string[] = [];
    class WebhooksModule {}
    Module({
      imports: [
        OnceonlyModule.register({
          path: 'webhooks/github',
          provider: github({ secret }),
          store: memoryStore(),
          handler: ({ type }) => void seen.push(String(type)),
        }),
      ],
    })(WebhooksModule);
    const moduleRef = await Test.createTestingModule({ imports: [WebhooksModule] }).compile();
    const app = moduleRef.createNestApplication({ rawBody: true, logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      const url = `${await app.getUrl()}/webhooks/github`.replace('[::1]', '127.0.0.1');
      const delivery = signedDelivery('github', { secret, type: 'issues' });
      const first = await fetch(url, delivery.init());
      assert.equal(first.headers.get('onceonly-outcome'), 'processed');
      const again = await fetch(url, delivery.init());
      assert.equal(again.headers.get('onceonly-outcome'), 'duplicate');
      assert.deepEqual(seen, ['issues']);
    } finally {
      await app.close();
    }
  });
});
