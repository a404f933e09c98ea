/**
 * The measuring of bench/inbox-e2e.bench.ts. Per contender and handler (no-op, 5 ms), each in a
 * namespace of its own:
 * 1. accept alone: WARM deliveries untimed, then N timed, IN_FLIGHT at a time, no worker running;
 * 2. drain: a worker process starts (CONCURRENCY) and runs those WARM + N; rate from its first
 *    handler start to its last end (the process's start-up left out);
 * 3. whole path: with those workers idle, N more accepted IN_FLIGHT at a time; rate from the first
 *    accept until the last run ends;
 * 4. (no-op only) latency: L deliveries one at a time, 20-60 ms apart, each from the start of its
 *    accept to its handler's start in the worker process (one clock: CLOCK_MONOTONIC, process.hrtime).
 * For phases 1 and 3, how busy the machine's CPUs were (every process: the door, the workers, the
 * database server, and whatever else runs; /proc/stat) and that CPU time per delivery: the whole
 * path can run no faster than the cores / its CPU per delivery, so a door that alone keeps the
 * cores busy leaves the workers nothing to keep up with it.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { contenders, type Door, delivery } from './e2e-contenders.js';

const small = process.env.BENCH_SMALL === '1';
const N = small ? 300 : 5_000;
const WARM = small ? 50 : 200;
const L = small ? 20 : 100;
const IN_FLIGHT = 32;
const CONCURRENCY = 8;
// BENCH_HANDLERS=0 for the no-op handler alone (the handler times in ms, comma-separated).
const HANDLERS = process.env.BENCH_HANDLERS?.split(',').map(Number) ?? [0, 5];
const run = randomBytes(3).toString('hex');
// CLOCK_MONOTONIC, one clock for every process on the host. Not performance.timeOrigin + now():
// timeOrigin is the wall clock read at each process's start, and the wall clock drifts from the
// monotonic one (about -0.4 ms per 20 s here), so a child started minutes after its parent read
// its starts several ms early (negative accept → start latencies).
const now = () => Number(process.hrtime.bigint()) / 1e6;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The machine's CPU time so far, all cores (clock ticks of /proc/stat): busy and in all. */
function machineCpu(): { busy: number; all: number } {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]!
      .trim()
      .split(/\s+/)
      .slice(1)
      .map(Number);
    const all = ticks.reduce((a, b) => a + b, 0);
    // idle and iowait are not busy; the rest (user, nice, system, irq, softirq, steal...) are.
    return { busy: all - ticks[3]! - (ticks[4] ?? 0), all };
  } catch {
    return { busy: Number.NaN, all: Number.NaN };
  }
}
const CORES = cpus().length;

/** Runs `phase` for `n` deliveries: its wall time, how busy the CPUs were, and CPU µs per delivery. */
async function onCpu(
  n: number,
  phase: () => Promise<number>,
): Promise<{ ms: number; busy: string; perEntry: string }> {
  const before = machineCpu();
  const ms = await phase();
  const after = machineCpu();
  const busy = (after.busy - before.busy) / (after.all - before.all);
  // The ticks of all cores over the phase's wall time, so busy × cores × wall time is CPU time.
  return { ms, busy: `${Math.round(busy * 100)}%`, perEntry: ((busy * CORES * ms * 1000) / n).toFixed(0) };
}

async function acceptAll(door: Door, tag: string, n: number): Promise<number> {
  let next = 0;
  const t0 = now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await door.accept(delivery(`evt_${tag}_${next++}`));
    }),
  );
  return now() - t0;
}

/** The worker process, and its messages as awaitable events. */
function workerProcess(index: number, ns: string, handlerMs: number, first: number) {
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./e2e-worker.ts', import.meta.url)),
    [String(index), ns, String(CONCURRENCY), String(handlerMs), String(first)],
    { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const waiting = new Map<string, (m: Record<string, unknown>) => void>();
  const starts = new Map<string, number>();
  child.on('message', (m: Record<string, unknown>) => {
    for (const [id, t] of (m.starts as [string, number][] | undefined) ?? []) starts.set(id, t);
    for (const key of Object.keys(m)) {
      const w = waiting.get(key);
      waiting.delete(key);
      w?.(m);
    }
  });
  const next = (key: string, timeoutMs = 300_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`worker: no ${key} within ${timeoutMs} ms`)), timeoutMs);
      waiting.set(key, (m) => {
        clearTimeout(t);
        resolve(m);
      });
    });
  const tell = async (m: object) => {
    const ok = next('ok');
    child.send(m);
    await ok;
  };
  return { child, next, tell, starts };
}

interface Row {
  contender: string;
  handler: string;
  'accept/s': number;
  'drain/s': number;
  'whole path/s': number;
  'whole/accept': string;
  'CPUs busy accept / whole': string;
  'CPU µs/entry accept / whole': string;
  'start p50 ms'?: string;
  'start p99 ms'?: string;
}

async function measure(index: number, handlerMs: number): Promise<Row> {
  const contender = contenders[index]!;
  const ns = `${run}${index}${handlerMs}`;
  const door = await contender.door(ns);
  try {
    await acceptAll(door, 'warm', WARM);
    const accepting = await onCpu(N, () => acceptAll(door, 'a', N));
    const acceptRate = N / (accepting.ms / 1000);
    const w = workerProcess(index, ns, handlerMs, WARM + N);
    const drained = await w.next('done');
    const first = drained.first as number;
    const drainRate = (WARM + N - 1) / (((drained.done as number) - first) / 1000);
    await w.tell({ expect: N });
    const whole = await onCpu(N, async () => {
      const t0 = now();
      const done = w.next('done');
      await acceptAll(door, 'w', N);
      return ((await done).done as number) - t0;
    });
    const wholeRate = (N / whole.ms) * 1000;
    const row: Row = {
      contender: contender.name,
      handler: handlerMs === 0 ? 'no-op' : `${handlerMs} ms`,
      'accept/s': Math.round(acceptRate),
      'drain/s': Math.round(drainRate),
      'whole path/s': Math.round(wholeRate),
      'whole/accept': `${(wholeRate / acceptRate).toFixed(2)}x`,
      'CPUs busy accept / whole': `${accepting.busy} / ${whole.busy}`,
      'CPU µs/entry accept / whole': `${accepting.perEntry} / ${whole.perEntry}`,
    };
    if (handlerMs === 0) {
      await w.tell({ expect: L, track: true });
      const done = w.next('done');
      const sent = new Map<string, number>();
      for (let i = 0; i < L; i++) {
        const id = `evt_l_${i}`;
        sent.set(id, now());
        await door.accept(delivery(id));
        await sleep(20 + Math.random() * 40);
      }
      await done;
      await sleep(50); // the last batch of start times
      const lat = [...sent].map(([id, t]) => (w.starts.get(id) ?? Number.NaN) - t).sort((a, b) => a - b);
      const at = (q: number) => lat[Math.min(lat.length - 1, Math.floor(q * lat.length))]!;
      row['start p50 ms'] = at(0.5).toFixed(1);
      row['start p99 ms'] = at(0.99).toFixed(1);
    }
    const stopped = w.next('stopped');
    w.child.send({ stop: true });
    await stopped;
    return row;
  } finally {
    await door.close();
    await contender.drop(ns);
  }
}

const wanted = process.env.BENCH_E2E?.split(',').map((s) => s.trim());
console.log(
  `Whole path, signed 2 KiB deliveries through the door (onceonly: receive(), inbox mode; peers: the same HMAC check, then one job), ${N.toLocaleString('en')} a phase, ${IN_FLIGHT} accepts in flight, workers in a process of their own at concurrency ${CONCURRENCY}; Node ${process.versions.node}`,
);
const rows: Row[] = [];
for (const handlerMs of HANDLERS) {
  for (const [index, c] of contenders.entries()) {
    if (wanted && !wanted.some((w) => c.name.includes(w))) continue;
    rows.push(await measure(index, handlerMs));
  }
}
console.table(rows);
const limit = (CONCURRENCY / 5) * 1000;
for (const r of rows.filter((r) => r.handler === '5 ms'))
  console.log(
    `${r.contender}: 5 ms drain ${(r['drain/s'] / limit).toFixed(2)}x of concurrency/5 ms (${limit}/s)`,
  );
