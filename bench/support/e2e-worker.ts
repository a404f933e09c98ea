/**
 * The worker process of bench/inbox-e2e.bench.ts: runs one contender's workers
 * (argv: contender index, namespace, concurrency, handler ms) and tells its parent, over IPC, when
 * it is ready, when the expected number of runs has ended, and (when tracking) when each run started
 * on the host's monotonic clock (process.hrtime, in ms), batched every 20 ms.
 */
import { contenders } from './e2e-contenders.js';

const [index, ns, concurrency, handlerMs, initial] = process.argv.slice(2);
const contender = contenders[Number(index)]!;
const ms = Number(handlerMs);
const send = (m: unknown) => process.send!(m);
// CLOCK_MONOTONIC, one clock for every process on the host. Not performance.timeOrigin + now():
// timeOrigin is the wall clock read at each process's start, and the wall clock drifts from the
// monotonic one (about -0.4 ms per 20 s here), so a child started minutes after its parent read
// its starts several ms early (negative accept → start latencies).
const now = () => Number(process.hrtime.bigint()) / 1e6;

let expected = Number(initial) > 0 ? Number(initial) : Number.POSITIVE_INFINITY;
let ended = 0;
let first = 0;
let track = false;
let starts: [string, number][] = [];
const flush = setInterval(() => {
  if (starts.length > 0) {
    send({ starts });
    starts = [];
  }
}, 20);

process.on('message', async (m: { expect?: number; track?: boolean; stop?: boolean }) => {
  if (m.expect !== undefined) {
    expected = m.expect;
    ended = 0;
    first = 0;
  }
  if (m.track !== undefined) track = m.track;
  if (!m.stop) send({ ok: true });
  if (m.stop) {
    clearInterval(flush);
    await (await started).stop();
    send({ stopped: true });
    process.disconnect();
  }
});
const started = contender.workers(ns!, Number(concurrency), async (id) => {
  const t = now();
  if (first === 0) first = t;
  if (track) starts.push([id, t]);
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
  if (++ended === expected) send({ done: now(), first });
});
await started;

send({ ready: true });
