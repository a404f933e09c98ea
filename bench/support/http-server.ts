/**
 * One HTTP server for bench/http.bench.ts, in its own process: `<framework> <variant> <prefix>`,
 * framework `express` or `fastify`, variant `onceonly` (the library's adapter over redisStore),
 * `hand` (what users paste today: constructEvent, then SET NX PX before the handler and SET PX
 * after), or `duties` (the hand-written route plus the two things onceonly does on every answer that
 * it does not: the SHA-256 of the body, which onceonly stores and compares as the fingerprint, and
 * the outcome reply, its headers and JSON, made by onceonly's own code). All on node-redis with the
 * same settings. Prints `listening <port>` when ready.
 */
import { createHash } from 'node:crypto';
import express from 'express';
import Fastify from 'fastify';
import { createClient } from 'redis';
import Stripe from 'stripe';
import { webhook as expressWebhook } from '../../dist/adapters/express.js';
import { webhook as fastifyWebhook } from '../../dist/adapters/fastify.js';
import { nodeBytes, toNodeReply, writeNodeReply } from '../../dist/adapters/node-io.js';
import type { DeliveryResult } from '../../dist/index.js';
import { createReceiver } from '../../dist/index.js';
import { stripe } from '../../dist/providers/index.js';
import { redisStore } from '../../dist/stores/redis.js';

const [framework, variant, prefix] = process.argv.slice(2) as [
  'express' | 'fastify',
  'onceonly' | 'hand' | 'duties',
  string,
];
export const secret = 'whsec_bench0123456789abcdefghijklmnop';
const LEASE_MS = 60_000;
const RETENTION_MS = 3 * 86_400_000;

const client = createClient({
  url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  disableOfflineQueue: true,
  socket: { reconnectStrategy: (retries) => Math.min(100 * 2 ** retries, 2_000) },
});
client.on('error', (err) => console.error('redis:', err.message));
await client.connect();

let effects = 0;
const handler = () => {
  effects++;
};

const sdk = new Stripe('sk_test_bench');
/** The hand-written route's work, framework aside: status and body. */
async function byHand(body: Buffer, header: string | undefined): Promise<[number, string]> {
  let event: Stripe.Event;
  try {
    event = sdk.webhooks.constructEvent(body, header ?? '', secret);
  } catch {
    return [400, 'bad signature'];
  }
  const key = `${prefix}hand:${event.id}`;
  const fresh = await client.set(key, 'processing', {
    condition: 'NX',
    expiration: { type: 'PX', value: LEASE_MS },
  });
  if (fresh === null) return [200, 'duplicate'];
  try {
    handler();
  } catch {
    await client.del(key);
    return [500, 'failed'];
  }
  await client.set(key, 'done', { expiration: { type: 'PX', value: RETENTION_MS } });
  return [200, 'ok'];
}

/** The `duties` variant's extras: the body's fingerprint, and the outcome reply for the answer. */
let fingerprints = 0;
function dutiesReply(body: Buffer, status: number, text: string) {
  if (createHash('sha256').update(body).digest('hex').length === 64) fingerprints++;
  const result = {
    outcome: status !== 200 ? 'rejected' : text === 'ok' ? 'processed' : 'duplicate',
    status,
    ...(status !== 200 ? { code: 'invalid_signature' } : {}),
  } as DeliveryResult;
  return toNodeReply(result);
}

const receiver =
  variant === 'onceonly'
    ? createReceiver({
        provider: stripe({ secret }),
        store: redisStore({ client, prefix: `${prefix}oo:` }),
        lease: LEASE_MS,
        handler,
        logger: false,
      })
    : undefined;

let port: number;
if (framework === 'express') {
  const app = express();
  if (receiver) app.post('/webhooks', expressWebhook(receiver));
  else
    app.post('/webhooks', express.raw({ type: '*/*', limit: '1mb' }), async (req, res) => {
      const [status, text] = await byHand(req.body as Buffer, req.get('stripe-signature'));
      if (variant === 'duties') writeNodeReply(res, await dutiesReply(req.body as Buffer, status, text));
      else res.status(status).send(text);
    });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as { port: number }).port;
} else {
  const app = Fastify({ logger: false });
  if (receiver) await app.register(fastifyWebhook(receiver), { prefix: '/webhooks' });
  else {
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1_048_576 }, (_req, body, done) =>
      done(null, body),
    );
    app.post('/webhooks', async (req, reply) => {
      const header = req.headers['stripe-signature'];
      const [status, text] = await byHand(
        req.body as Buffer,
        typeof header === 'string' ? header : undefined,
      );
      if (variant === 'duties') {
        // As the onceonly adapter sends it (src/adapters/fastify.ts).
        const out = await dutiesReply(req.body as Buffer, status, text);
        reply.code(out.status);
        reply.headers(out.headers);
        return reply.send(nodeBytes(out.body));
      }
      return reply.code(status).send(text);
    });
  }
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as { port: number }).port;
}
process.on('message', (m) => {
  if (m === 'effects') process.send?.({ effects, fingerprints });
  // This process's CPU time so far in µs (user + system): the bench divides the difference by answers.
  if (m === 'cpu') {
    const { user, system } = process.cpuUsage();
    process.send?.({ cpu: user + system });
  }
});
console.log(`listening ${port}`);
process.on('SIGINT', () => process.exit(0));
