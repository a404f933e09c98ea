/**
 * memoryStore footprint: heap held by N completed keys (default 1,000,000; BENCH_SMALL=1 → 100,000).
 * Run with: node --expose-gc --import tsx bench/memory.bench.ts
 * Target (issue 4): 1 million completed keys in no more than 200 MB of heap.
 */
import { createHash } from 'node:crypto';
import { memoryStore } from '../src/stores/memory.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc --import tsx bench/memory.bench.ts');
  process.exit(2);
}
const n = process.env.BENCH_SMALL ? 100_000 : 1_000_000;
gc();
const before = process.memoryUsage().heapUsed;
const store = memoryStore({ maxEntries: n });
const started = performance.now();
for (let i = 0; i < n; i++) {
  // Realistic keys and fingerprints: a Stripe event id, the SHA-256 of a body.
  const key = `stripe:evt_${i.toString(36).padStart(24, '0')}`;
  const fingerprint = createHash('sha256').update(key).digest('hex');
  await store.record(key, { retentionMs: 3 * 86_400_000, fingerprint });
}
const seconds = (performance.now() - started) / 1000;
gc();
const heapMb = (process.memoryUsage().heapUsed - before) / 1048576;
const perKey = ((heapMb * 1048576) / n).toFixed(0);
const budget = (200 * n) / 1_000_000;
console.log(
  `memoryStore: ${n.toLocaleString('en')} completed keys (key + SHA-256 fingerprint) → ${heapMb.toFixed(1)} MB heap, ${perKey} B/key, budget ${budget} MB: ${heapMb <= budget ? 'OK' : 'OVER'}`,
);
console.log(`  record() rate while filling: ${Math.round(n / seconds).toLocaleString('en')}/s`);
if (store.size !== n) throw new Error('not every key was kept');
