/**
 * `receiver.receive()` in inbox mode (verify, key, durable accept, answer 202) of 2 KiB signed
 * events on the memory store: the receiver's own cost of an accept, without a network store in the
 * way. Prints the median accepts per second of 7 rounds of 10,000. `BENCH_DIST` names another
 * build's dist/ to compare builds in separate processes, run back to back in swapped order
 * (loading two builds in one process biases whichever loads first).
 *
 * Run with: npm run bench -- inbox-accept    (BENCH_DIST=/path/to/other/dist for a baseline)
 */
import { createHmac } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { median } from './support/stats.js';

const small = Boolean(process.env.BENCH_SMALL);
const ROUNDS = small ? 3 : 7;
const PER_ROUND = small ? 2_000 : 10_000;
const dist = process.env.BENCH_DIST || fileURLToPath(new URL('../dist', import.meta.url));
const { createReceiver, memoryStore, hmac } = (await import(
  `${dist}/index.js`
)) as typeof import('../dist/index.js');

const secret = 'bench-secret';
const pad = 'x'.repeat(1_700);
const rates: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const receiver = createReceiver({
    provider: hmac<{ id: string; type: string }>({
      name: 'acme',
      secret,
      signatureHeader: 'x-sig',
      id: (e) => e.id,
      type: (e) => e.type,
    }),
    store: memoryStore({ maxEntries: 1_000_000 }),
    inbox: true,
    handler: () => {},
    logger: false,
  });
  const inputs = Array.from({ length: PER_ROUND }, (_, i) => {
    const body = Buffer.from(JSON.stringify({ id: `evt_${r}_${i}`, type: 't', pad }));
    return {
      rawBody: body,
      headers: {
        'x-sig': createHmac('sha256', secret).update(body).digest('hex'),
        'content-type': 'application/json',
      },
    };
  });
  const started = performance.now();
  for (const input of inputs) await receiver.receive(input);
  rates.push(PER_ROUND / ((performance.now() - started) / 1000));
}
console.log(
  `inbox accept through receive() on memoryStore (${dist}): ${Math.round(median(rates)).toLocaleString('en')} accepts/s median of ${ROUNDS} rounds (min ${Math.round(Math.min(...rates)).toLocaleString('en')}, max ${Math.round(Math.max(...rates)).toLocaleString('en')})`,
);
