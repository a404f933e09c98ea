/**
 * `npm start`: a webhook receiver on a real loopback port, and a provider that behaves like real ones
 * do (at least once): the same signed event twice, three copies at the same moment, a handler
 * that fails once and is retried, and a forged delivery. Prints every outcome.
 */
import { createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReceiver, type DeliveryResult, hmac, memoryStore, toResponse } from '../src/index.js';

const SECRET = 'whsec_quickstart_demo';
const effects = new Map<string, number>();
let failOnce = true;

const receiver = createReceiver({
  provider: hmac({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => String(event.id),
    type: (event) => String(event.type),
  }),
  store: memoryStore(),
  handler: async ({ event, id }) => {
    await new Promise((resolve) => setTimeout(resolve, 50)); // some real work
    if (event.type === 'order.flaky' && failOnce) {
      failOnce = false;
      throw new Error('payment API timed out');
    }
    effects.set(id!, (effects.get(id!) ?? 0) + 1);
  },
  onOutcome: (r: DeliveryResult) => {
    log.push(r);
  },
});
const log: DeliveryResult[] = [];

// A bare node:http server: hand the request stream to the receiver (it reads the raw bytes with a
// hard bound), then write its response.
const server = createServer(async (req, res) => {
  const result = await receiver.receive({ rawBody: req, headers: req.headers });
  const response = toResponse(result);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;

async function deliver(label: string, event: object, opts: { secret?: string } = {}) {
  const body = JSON.stringify(event);
  const ts = Math.floor(Date.now() / 1000);
  const sig = createHmac('sha256', opts.secret ?? SECRET)
    .update(`${ts}.${body}`)
    .digest('hex');
  const res = await fetch(url, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      'x-acme-signature': `sha256=${sig}`,
      'x-acme-timestamp': String(ts),
    },
  });
  const row = `${label.padEnd(38)} ${String(res.status).padEnd(4)} ${res.headers.get('onceonly-outcome')}`;
  console.log(
    row + (res.headers.get('retry-after') ? `  (Retry-After: ${res.headers.get('retry-after')} s)` : ''),
  );
  return res.status;
}

console.log(`onceonly quick start: receiver on ${url}\n`);
console.log(`${'delivery'.padEnd(38)} HTTP outcome`);
await deliver('evt_1 first delivery', { id: 'evt_1', type: 'order.paid' });
await deliver('evt_1 retried (duplicate)', { id: 'evt_1', type: 'order.paid' });
await Promise.all(
  [1, 2, 3].map((n) => deliver(`evt_2 concurrent copy ${n}`, { id: 'evt_2', type: 'order.paid' })),
);
await deliver('evt_2 provider retries after 409', { id: 'evt_2', type: 'order.paid' });
await deliver('evt_3 handler throws', { id: 'evt_3', type: 'order.flaky' });
await deliver('evt_3 provider retries after 500', { id: 'evt_3', type: 'order.flaky' });
await deliver('evt_4 forged (wrong secret)', { id: 'evt_4', type: 'order.paid' }, { secret: 'guess' });
await deliver('evt_1 same id, different body', { id: 'evt_1', type: 'order.paid', amount: 1e6 });
server.close();

console.log('\neffects applied per event:', Object.fromEntries(effects));
const doubled = [...effects.values()].some((n) => n > 1);
const lost = ['evt_1', 'evt_2', 'evt_3'].filter((id) => !effects.has(id));
console.log(
  `deliveries ${log.length}, events lost ${lost.length}, effects applied twice ${doubled ? 'YES' : 0}`,
);
process.exitCode = doubled || lost.length > 0 ? 1 : 0;
