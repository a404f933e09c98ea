/**
 * `receiver.receive()` of 2 KiB Stripe-signed events with the memory store, against what users
 * write by hand: `stripe.webhooks.constructEvent` plus a `Map` doing the same dedup (mark the id
 * before the handler, complete it after, a second delivery of the event is a duplicate). Every event
 * is delivered twice. Rounds alternate the two contenders on fresh events, so machine noise hits
 * both alike; the figure is the median of the per-round ratios.
 *
 * Run with: npm run bench -- receive    (BENCH_SMALL=1 for a quick run; bench/index.ts builds first)
 * Target (issue 12): receive() at least 0.8x constructEvent + Map.
 *
 * With BENCH_BASELINE_DIST=<another build's dist/> (the commit before a change), that build's
 * receive() runs as a third contender in every round: the change's cost side by side, as a ratio
 * and in µs per delivery (issue 27: the receiver as stages within noise of before).
 */
import { createHmac } from 'node:crypto';
import Stripe from 'stripe';
// The built package, as users run it (tsx's transform of the sources adds work to every closure).
import { createReceiver, memoryStore } from '../dist/index.js';
import { stripe } from '../dist/providers/index.js';
import { median } from './support/stats.js';

const small = Boolean(process.env.BENCH_SMALL);
const ROUNDS = small ? 5 : 15;
const PER_ROUND = small ? 2_000 : 5_000;
const secret = 'whsec_bench0123456789abcdefghijklmnop';
const sdk = new Stripe('sk_test_bench');

const padding = 'x'.repeat(1_700);
let n = 0;
function event(): { body: Buffer; header: string; id: string } {
  const id = `evt_${(n++).toString(36).padStart(20, '0')}`;
  const body = Buffer.from(
    JSON.stringify({
      id,
      object: 'event',
      type: 'invoice.paid',
      created: 1_764_000_000,
      data: { object: { id: `in_${id}`, object: 'invoice', amount_paid: 2_000, padding } },
    }),
  );
  const t = Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return { body, header: `t=${t},v1=${v1}`, id };
}

// The same effect in both: a counter, checked at the end (each event applied exactly once).
let effects = 0;
const handler = () => {
  effects++;
};

// The hand-written route: verify, then a Map as the dedup store.
const seen = new Map<string, 'processing' | 'done'>();
async function byHand(body: Buffer, header: string): Promise<number> {
  const e = sdk.webhooks.constructEvent(body, header, secret);
  if (seen.has(e.id)) return 200;
  seen.set(e.id, 'processing');
  try {
    await handler();
    seen.set(e.id, 'done');
    return 200;
  } catch {
    seen.delete(e.id);
    return 500;
  }
}

const receiver = createReceiver({
  provider: stripe({ secret }),
  store: memoryStore({ maxEntries: 10_000_000 }),
  handler,
  logger: false,
});

async function run(batch: ReturnType<typeof event>[], one: (b: Buffer, h: string) => Promise<unknown>) {
  const started = performance.now();
  for (const e of batch) {
    await one(e.body, e.header);
    await one(e.body, e.header);
  }
  return (batch.length * 2) / ((performance.now() - started) / 1000);
}

const ours = (body: Buffer, header: string) =>
  receiver.receive({
    rawBody: body,
    headers: { 'stripe-signature': header, 'content-type': 'application/json' },
  });

// The build before a change, when named: the same receiver over that build's modules.
type ReceiveOf = (input: { rawBody: Buffer; headers: Record<string, string> }) => Promise<unknown>;
let before: ((body: Buffer, header: string) => Promise<unknown>) | undefined;
if (process.env.BENCH_BASELINE_DIST) {
  const dist = process.env.BENCH_BASELINE_DIST;
  const root = (await import(`${dist}/index.js`)) as {
    createReceiver: (o: object) => { receive: ReceiveOf };
    memoryStore: (o: object) => object;
  };
  const providers = (await import(`${dist}/providers/index.js`)) as { stripe: (o: object) => object };
  const old = root.createReceiver({
    provider: providers.stripe({ secret }),
    store: root.memoryStore({ maxEntries: 10_000_000 }),
    handler,
    logger: false,
  });
  before = (body, header) =>
    old.receive({
      rawBody: body,
      headers: { 'stripe-signature': header, 'content-type': 'application/json' },
    });
}

// Warm both up.
await run(Array.from({ length: 2_000 }, event), byHand);
await run(Array.from({ length: 2_000 }, event), ours);
if (before) await run(Array.from({ length: 2_000 }, event), before);

const ratios: number[] = [];
const versus: number[] = [];
const rates = { hand: [] as number[], ours: [] as number[], before: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  const a = Array.from({ length: PER_ROUND }, event);
  const b = Array.from({ length: PER_ROUND }, event);
  const c = Array.from({ length: PER_ROUND }, event);
  const first = r % 2 === 0;
  const hand = first ? await run(a, byHand) : 0;
  // The baseline and this build alternate which goes first, as the two others do.
  const old = before && first ? await run(c, before) : 0;
  const mine = await run(b, ours);
  const oldAfter = before && !first ? await run(c, before) : old;
  const handAfter = first ? hand : await run(a, byHand);
  rates.hand.push(handAfter);
  rates.ours.push(mine);
  ratios.push(mine / handAfter);
  if (before) {
    rates.before.push(oldAfter);
    versus.push(mine / oldAfter);
  }
}
const fmt = (x: number) => Math.round(x).toLocaleString('en');
console.log(
  `receive() with memoryStore vs constructEvent + Map, 2 KiB Stripe events, 2 deliveries each, ${ROUNDS} rounds of ${PER_ROUND} events:`,
);
console.log(`  constructEvent + Map   ${fmt(median(rates.hand))} deliveries/s (median)`);
console.log(`  onceonly receive()     ${fmt(median(rates.ours))} deliveries/s (median)`);
console.log(
  `  ratio ${median(ratios).toFixed(2)}x (median of rounds; min ${Math.min(...ratios).toFixed(2)}x, max ${Math.max(...ratios).toFixed(2)}x), target 0.8x`,
);
if (before) {
  const us = (rate: number) => (1e6 / rate).toFixed(2);
  console.log(`  baseline receive()     ${fmt(median(rates.before))} deliveries/s (median)`);
  console.log(
    `  this build vs the baseline: ${median(versus).toFixed(2)}x (median of rounds; min ${Math.min(...versus).toFixed(2)}x, max ${Math.max(...versus).toFixed(2)}x)`,
  );
  console.log(
    `  per delivery: constructEvent + Map ${us(median(rates.hand))} µs, baseline ${us(median(rates.before))} µs, this build ${us(median(rates.ours))} µs (${(1e6 / median(rates.ours) - 1e6 / median(rates.hand)).toFixed(2)} µs over constructEvent + Map)`,
  );
}
const expected = (before ? 6_000 : 4_000) + ROUNDS * PER_ROUND * (before ? 3 : 2);
if (effects !== expected)
  throw new Error(`effects ${effects}, expected ${expected}: a delivery ran twice or not at all`);
