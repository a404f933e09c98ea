/**
 * `onceonly example` (and `npm run example` in a clone): a webhook receiver on a real loopback port,
 * and a sender that behaves like real providers do (at least once): the same signed event twice,
 * three copies at the same moment, a handler that fails once and is retried, and a forged delivery.
 * Prints every outcome. With `--serve` it then stays up and prints a signed `curl` to send by hand.
 */
import { createHmac } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReceiver, type DeliveryResult, hmac, memoryStore, toResponse } from '../index.js';
import { parseFlags, UsageError, usage } from './args.js';

const flags = {
  serve: {
    type: 'boolean',
    default: false,
    help: 'stay up after the script, printing a signed curl to send by hand (Ctrl-C ends it)',
  },
  port: { type: 'number', default: 0, help: 'the port (default: any free one)' },
  help: { type: 'boolean', default: false, help: 'this help' },
} as const;

const SECRET = 'whsec_quickstart_demo';

/** The quick start's receiver: HMAC over `timestamp.body`, a memory store, a handler that fails once. */
function quickstartReceiver() {
  const effects = new Map<string, number>();
  const log: DeliveryResult[] = [];
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
    onOutcome: (r) => {
      log.push(r);
    },
  });
  // A bare node:http server: hand the request stream to the receiver (it reads the raw bytes with a
  // hard bound), then write its response.
  const server = createServer(async (req, res) => {
    const result = await receiver.receive({ rawBody: req, headers: req.headers });
    const response = toResponse(result);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(Buffer.from(await response.arrayBuffer()));
  });
  return { server, effects, log };
}

/** A delivery as the sender signs it: the headers for `body` at `ts` (seconds). */
function signed(body: string, ts: number, secret = SECRET): Record<string, string> {
  const sig = createHmac('sha256', secret).update(`${ts}.${body}`).digest('hex');
  return {
    'content-type': 'application/json',
    'x-acme-signature': `sha256=${sig}`,
    'x-acme-timestamp': String(ts),
  };
}

/** The sender's script: every at-least-once case, one line each. */
async function script(url: string): Promise<void> {
  async function deliver(label: string, event: object, opts: { secret?: string } = {}) {
    const body = JSON.stringify(event);
    const headers = signed(body, Math.floor(Date.now() / 1000), opts.secret);
    const res = await fetch(url, { method: 'POST', body, headers });
    const row = `${label.padEnd(38)} ${String(res.status).padEnd(4)} ${res.headers.get('onceonly-outcome')}`;
    const retry = res.headers.get('retry-after');
    console.log(row + (retry ? `  (Retry-After: ${retry} s)` : ''));
  }
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
}

/** A signed curl for a new event, valid for the receiver's timestamp tolerance (5 minutes). */
function curlLine(url: string): string {
  const body = JSON.stringify({ id: `evt_${Date.now()}`, type: 'order.paid' });
  const headers = Object.entries(signed(body, Math.floor(Date.now() / 1000)))
    .map(([name, value]) => `-H '${name}: ${value}'`)
    .join(' ');
  return `  curl -si ${url} ${headers} -d '${body}'`;
}

function listen(server: Server, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', (error) =>
      reject(new UsageError(`cannot listen on port ${port}: ${error.message}`)),
    );
    server.listen(port, '127.0.0.1', () =>
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`),
    );
  });
}

export async function example(argv: readonly string[]): Promise<number> {
  const options = parseFlags(argv, flags);
  if (options.help) {
    console.log(
      usage(
        'example [--serve]',
        'the quick start over real HTTP: a receiver and an at-least-once sender',
        flags,
      ),
    );
    return 0;
  }
  const { server, effects, log } = quickstartReceiver();
  const url = await listen(server, options.port);
  console.log(`onceonly quick start: receiver on ${url}\n`);
  await script(url);
  console.log('\neffects applied per event:', Object.fromEntries(effects));
  const doubled = [...effects.values()].some((n) => n > 1);
  const lost = ['evt_1', 'evt_2', 'evt_3'].filter((id) => !effects.has(id));
  console.log(
    `deliveries ${log.length}, events lost ${lost.length}, effects applied twice ${doubled ? 'YES' : 0}`,
  );
  const code = doubled || lost.length > 0 ? 1 : 0;
  if (!options.serve) {
    server.close();
    return code;
  }
  console.log('\nstill listening: send a signed delivery twice (processed, then duplicate):');
  console.log(curlLine(url));
  await new Promise<void>((resolve) => process.once('SIGINT', resolve));
  server.close();
  return code;
}
