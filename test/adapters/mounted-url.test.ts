/**
 * Providers that sign the URL (Square, Twilio) are verified against the URL the request arrived
 * with, also when the framework rewrote the request's `url` for a mounted router or app: Express's
 * `express.Router()` under a prefix and `app.use(prefix, ...)` keep the full path in
 * `req.originalUrl`, and koa-mount (a middleware that rewrites `ctx.path`) in `ctx.originalUrl`.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import express5 from 'express';
import Koa from 'koa';
import { webhook as expressWebhook } from '../../src/adapters/express.js';
import { webhook as koaWebhook } from '../../src/adapters/koa.js';
import { createReceiver, memoryStore, type Receiver } from '../../src/index.js';
import { square } from '../../src/providers/index.js';

const express4 = createRequire(import.meta.url)('express4') as typeof express5;
const key = randomBytes(16).toString('base64url');

function receiver(): Receiver {
  return createReceiver({
    provider: square({ secret: key }),
    store: memoryStore(),
    handler: () => {},
    logger: false,
  });
}

/** Listens on a loopback port; the URL Square would have been given for `path`. */
async function serve(
  listener: Parameters<typeof createServer>[1],
): Promise<{ server: Server; base: string }> {
  const server = createServer(listener).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** A Square delivery to `url`, signed over that URL and the body, as Square signs it. */
async function deliverSquare(url: string): Promise<{ status: number; outcome: string | null }> {
  const body = JSON.stringify({
    merchant_id: 'M1',
    type: 'payment.updated',
    event_id: `evt_${randomBytes(6).toString('hex')}`,
    data: { type: 'payment', id: 'p1' },
  });
  const signature = createHmac('sha256', key)
    .update(url + body, 'utf8')
    .digest('base64');
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'x-square-hmacsha256-signature': signature },
  });
  await res.arrayBuffer();
  return { status: res.status, outcome: res.headers.get('onceonly-outcome') };
}

describe('URL-signing providers behind a mounted router or app', () => {
  for (const [label, express] of [
    ['Express 5', express5],
    ['Express 4', express4],
  ] as const) {
    it(`${label}: a route in an express.Router() mounted under a prefix verifies the full URL`, async () => {
      const app = express();
      const router = express.Router();
      router.post('/square', expressWebhook(receiver()));
      app.use('/webhooks', router);
      const { server, base } = await serve(app);
      try {
        assert.deepEqual(await deliverSquare(`${base}/webhooks/square?x=1`), {
          status: 200,
          outcome: 'processed',
        });
      } finally {
        server.close();
      }
    });

    it(`${label}: app.use(prefix, webhook(...)) verifies the full URL`, async () => {
      const app = express();
      app.use('/webhooks/square', expressWebhook(receiver()));
      const { server, base } = await serve(app);
      try {
        assert.deepEqual(await deliverSquare(`${base}/webhooks/square`), {
          status: 200,
          outcome: 'processed',
        });
      } finally {
        server.close();
      }
    });
  }

  it('Koa: under a mount that rewrites ctx.path (koa-mount), the full URL is verified', async () => {
    const app = new Koa();
    const mounted = koaWebhook(receiver(), { path: '/square' });
    // What koa-mount does: strip the prefix from ctx.path (and so from ctx.req.url) for the inner app.
    app.use(async (ctx, next) => {
      if (!ctx.path.startsWith('/webhooks/')) return next();
      ctx.path = ctx.path.slice('/webhooks'.length);
      await mounted(ctx, next);
    });
    const { server, base } = await serve(app.callback());
    try {
      assert.deepEqual(await deliverSquare(`${base}/webhooks/square`), { status: 200, outcome: 'processed' });
    } finally {
      server.close();
    }
  });
});
