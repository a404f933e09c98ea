/**
 * HTTP end to end (issue 12): Express 5 and Fastify 5 receivers with redisStore on node-redis,
 * against the hand-written route on the same framework and client (stripe.webhooks.constructEvent,
 * then SET NX PX before the handler and SET PX after: what users paste today). Each server runs in
 * its own process (bench/support/http-server.ts); autocannon drives it over loopback from this one
 * with 64 connections, every 2 KiB Stripe-signed event delivered twice (the second copy right
 * after the first, often while it is still in flight). Rounds alternate onceonly and the hand-written
 * route on fresh events, so machine noise hits both alike; the figure is the median of the per-round
 * ratios of answers per second, with p99 latency for each.
 *
 * Run with: npm run bench -- http    (BENCH_SMALL=1 for a quick run; BENCH_ROUNDS=8 for more rounds;
 * BENCH_FRAMEWORKS=fastify for one framework; BENCH_PAIRED_RATE=3000 for the paired CPU comparison;
 * BENCH_PAIR=onceonly:duties or duties:hand to compare other servers (see http-server.ts: `duties` is
 * the hand-written route plus what onceonly does on every answer and it does not, the body's SHA-256
 * fingerprint and the outcome reply, which splits the gap in two); bench/index.ts builds first)
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createClient } from 'redis';
import { median } from './support/stats.js';

const small = Boolean(process.env.BENCH_SMALL);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (small ? 2 : 4));
const SECONDS = Number(process.env.BENCH_SECONDS ?? (small ? 3 : 8));
const CONNECTIONS = 64;
const secret = 'whsec_bench0123456789abcdefghijklmnop';
const run = randomBytes(4).toString('hex');
const prefix = `oo-bench-http-${run}:`;
const padding = 'x'.repeat(1_700);

type Framework = 'express' | 'fastify';
type Variant = 'onceonly' | 'hand' | 'duties';
// The two servers compared: the subject (onceonly by default) against the baseline (the hand-written route).
const [subject, baseline] = (process.env.BENCH_PAIR ?? 'onceonly:hand').split(':') as [Variant, Variant];
for (const v of [subject, baseline]) {
  if (!['onceonly', 'hand', 'duties'].includes(v)) throw new Error(`BENCH_PAIR: unknown server ${v}`);
}
type Role = 'subject' | 'baseline';

async function start(framework: Framework, variant: Variant): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(
    fileURLToPath(new URL('./support/http-server.ts', import.meta.url)),
    [framework, variant, prefix],
    {
      // BENCH_SERVER_ARGS: more node flags for the servers (--cpu-prof --cpu-prof-dir=<dir> to profile them).
      execArgv: ['--import', 'tsx', ...(process.env.BENCH_SERVER_ARGS?.split(' ').filter(Boolean) ?? [])],
      stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
    },
  );
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk;
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${framework} ${variant} server exited with ${code}`)));
  });
  return { child, port };
}

/** The server process's CPU time so far (user + system), µs. */
async function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    const listen = (m: { cpu?: number }) => {
      if (m.cpu === undefined) return;
      child.off('message', listen);
      resolve(m.cpu);
    };
    child.on('message', listen);
    child.send('cpu');
  });
}

async function effectsOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m: { effects: number }) => resolve(m.effects));
    child.send('effects');
  });
}

// The Redis server's CPU time (INFO cpu: user + system, all its threads), µs: it shares the machine's
// cores with the servers and the load generator, so its work per answer moves the throughput too.
const info = createClient({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
await info.connect();
async function redisCpu(): Promise<number> {
  const text = await info.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? Number.NaN);
  return (field('used_cpu_user') + field('used_cpu_sys')) * 1e6;
}

let events = 0;
interface Measured {
  ok: number;
  perSecond: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
  sent: number;
  eventsSent: number;
  /** The server's CPU time per answer, µs (the steadier figure on a noisy machine). */
  cpuPerAnswer: number;
  /** Redis's CPU time per answer, µs (all its clients: meaningful when one server runs at a time). */
  redisPerAnswer: number;
}

async function measure(
  { port, child }: { port: number; child: ChildProcess },
  seconds: number,
  rate?: number,
): Promise<Measured> {
  const first = events;
  const cpuBefore = await cpuOf(child);
  const redisBefore = await redisCpu();
  let i = 0;
  let current = { body: '', header: '' };
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/webhooks`,
    connections: CONNECTIONS,
    duration: seconds,
    ...(rate ? { overallRate: rate } : {}),
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          // Every event twice in a row: a fresh one on even requests, its copy on odd ones.
          if (i++ % 2 === 0) {
            const id = `evt_${run}_${(events++).toString(36)}`;
            const body = JSON.stringify({
              id,
              object: 'event',
              type: 'invoice.paid',
              created: 1_764_000_000,
              data: { object: { id: `in_${id}`, object: 'invoice', amount_paid: 2_000, padding } },
            });
            const t = Math.floor(Date.now() / 1000);
            current = {
              body,
              header: `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`,
            };
          }
          return {
            ...req,
            body: current.body,
            headers: { 'content-type': 'application/json', 'stripe-signature': current.header },
          };
        },
      },
    ],
  });
  const cpu = (await cpuOf(child)) - cpuBefore;
  const redisUsed = (await redisCpu()) - redisBefore;
  const ok = result['2xx'];
  // Every answer counts: onceonly answers a copy that arrives while the first is still running 409
  // (in flight: come back later), the hand-written route 200 (it cannot tell in flight from done).
  const answered = ok + result.non2xx;
  return {
    ok,
    perSecond: answered / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    sent: result.requests.sent,
    eventsSent: events - first,
    cpuPerAnswer: cpu / Math.max(1, answered),
    redisPerAnswer: redisUsed / Math.max(1, answered),
  };
}

const lines: string[] = [];
// BENCH_PAIRED_RATE=3000: instead of the throughput rounds, load both servers at once, each at
// that many requests/s, and compare their CPU time per answer in the same window. The throughput
// ratio moves by about 20% between rounds on a noisy 2-core machine; this moves by about 4%, so it
// tells two builds apart where the other cannot (the figure is hand CPU / onceonly CPU per answer,
// the throughput ratio a CPU-bound server would reach).
const pairedRate = Number(process.env.BENCH_PAIRED_RATE ?? 0);
// BENCH_FRAMEWORKS=fastify (or express) runs one framework only.
const frameworks = (['express', 'fastify'] as const).filter(
  (f) => !process.env.BENCH_FRAMEWORKS || process.env.BENCH_FRAMEWORKS.split(',').includes(f),
);
for (const framework of frameworks) {
  const servers = {
    subject: await start(framework, subject),
    baseline: await start(framework, baseline),
  };
  try {
    if (pairedRate > 0) {
      await Promise.all([measure(servers.subject, 2, pairedRate), measure(servers.baseline, 2, pairedRate)]);
      const ratios: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        const [o, h] = await Promise.all([
          measure(servers.subject, SECONDS, pairedRate),
          measure(servers.baseline, SECONDS, pairedRate),
        ]);
        ratios.push(h.cpuPerAnswer / o.cpuPerAnswer);
        console.log(
          `${framework} paired round ${r}: ${subject} ${o.cpuPerAnswer.toFixed(1)} µs/answer (${o.perSecond.toFixed(0)}/s), ${baseline} ${h.cpuPerAnswer.toFixed(1)} µs/answer (${h.perSecond.toFixed(0)}/s)`,
        );
      }
      const line = `${framework}: ${baseline} / ${subject} server CPU per answer at ${pairedRate}/s each, both at once = ${median(ratios).toFixed(2)}x (rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')})`;
      console.log(line);
      lines.push(line);
      continue;
    }
    // Warm both up (JIT, connections, scripts loaded).
    const warm: Record<Role, number> = { subject: 0, baseline: 0 };
    for (const v of ['subject', 'baseline'] as const) warm[v] = (await measure(servers[v], 1)).eventsSent;
    const ratios: number[] = [];
    const rows: Record<Role, Measured[]> = { subject: [], baseline: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const order: Role[] = r % 2 === 0 ? ['subject', 'baseline'] : ['baseline', 'subject'];
      for (const v of order) rows[v].push(await measure(servers[v], SECONDS));
      ratios.push(rows.subject.at(-1)!.perSecond / rows.baseline.at(-1)!.perSecond);
    }
    for (const v of ['subject', 'baseline'] as const) {
      const ms = rows[v];
      const effects = await effectsOf(servers[v].child);
      const sentEvents = warm[v] + ms.reduce((a, m) => a + m.eventsSent, 0);
      console.log(
        `${framework} ${(v === 'subject' ? subject : baseline).padEnd(8)}: ${median(ms.map((m) => m.perSecond)).toFixed(0)} answers/s (median of ${ms.length} x ${SECONDS} s), ` +
          `p50 ${median(ms.map((m) => m.p50))} ms, p99 ${median(ms.map((m) => m.p99))} ms, ` +
          `server CPU ${median(ms.map((m) => m.cpuPerAnswer)).toFixed(1)} µs/answer, ` +
          `Redis CPU ${median(ms.map((m) => m.redisPerAnswer)).toFixed(1)} µs/answer, ` +
          `2xx ${ms.reduce((a, m) => a + m.ok, 0)}, non-2xx ${ms.reduce((a, m) => a + m.non2xx, 0)}, errors ${ms.reduce((a, m) => a + m.errors, 0)}; ` +
          `handler ran ${effects} times for ${sentEvents} events sent `,
      );
    }
    const line = `${framework}: ${subject} / ${baseline} = ${median(ratios).toFixed(2)}x (rounds: ${ratios.map((x) => x.toFixed(2)).join(', ')})`;
    console.log(line);
    lines.push(line);
  } finally {
    // The servers exit through process.exit (a --cpu-prof is written). Their exits are awaited: a
    // confirm still in flight lands before the keys are cleaned below, not after.
    const exits = Object.values(servers).map(
      (s) =>
        new Promise((resolve) => (s.child.exitCode !== null ? resolve(null) : s.child.once('exit', resolve))),
    );
    for (const s of Object.values(servers)) s.child.kill('SIGINT');
    await Promise.all(exits);
  }
}

// Clean the bench's keys.
const redis = createClient({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' });
await redis.connect();
let cursor = '0';
do {
  const reply = await redis.scan(cursor, { MATCH: `${prefix}*`, COUNT: 1000 });
  cursor = String(reply.cursor);
  if (reply.keys.length) await redis.unlink(reply.keys);
} while (cursor !== '0');
await redis.quit();
await info.quit();
console.log(`\n${lines.join('\n')}`);
