/**
 * `onceonly demo`: proves effectively-once under at-least-once chaos. Worker processes receive
 * signed deliveries from the simulator; handlers throw, hang past their deadline, or are killed
 * with SIGKILL mid-work (and restarted); every effect lands in a ledger, and the report is computed
 * from that ledger, not from anyone's counters.
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { progressBar, table } from './report.js';
import { demoSecret, type SimProvider } from './sign.js';
import { simulate } from './simulate.js';
import { assignPort, until } from './wait.js';
import type { WorkerConfig } from './worker.js';

export const demoFlags = {
  events: { type: 'number', default: 1000, help: 'events to deliver' },
  store: {
    type: 'string',
    help: 'memory, a SQLite file, redis://..., postgres://..., mysql://... (default: a temporary SQLite file)',
  },
  provider: {
    type: 'string',
    default: 'stripe',
    help: 'signature scheme: stripe or standard-webhooks',
  },
  workers: { type: 'number', default: 2, help: 'receiver processes' },
  'kill-rate': { type: 'number', default: 0.01, help: 'share of handler runs killed with SIGKILL mid-work' },
  'throw-rate': { type: 'number', default: 0.03, help: 'share of handler runs that throw' },
  'hang-rate': { type: 'number', default: 0.01, help: 'share of handler runs that hang past their deadline' },
  timeout: { type: 'number', default: 1000, help: 'handler deadline in ms' },
  lease: { type: 'number', help: 'lease in ms (default 4 x timeout)' },
  concurrency: { type: 'number', default: 32, help: 'requests in flight at once' },
  keep: { type: 'boolean', help: 'keep the temporary directory (ledger and SQLite store)' },
  json: { type: 'boolean', help: 'print the report as JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

export interface DemoReport {
  store: string;
  provider: SimProvider;
  workers: number;
  events: number;
  deliveries: number;
  duplicatesSuppressed: number;
  inFlightDeferrals: number;
  handlerFailures: number;
  workersKilled: number;
  takeoversAfterCrash: number;
  handlerRuns: number;
  effectsApplied: number;
  eventsLost: number;
  effectsAppliedTwice: number;
  /** Requests whose connection died with a killed worker (retried by the simulator). */
  droppedConnections: number;
  timeouts: number;
  seconds: number;
  /** The ledger database, when --keep was given. */
  ledger?: string;
  byOutcome: Record<string, number>;
}

export async function demo(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, demoFlags);
  if (flags.help) {
    console.log(
      usage(
        'demo [flags]',
        'Receives signed deliveries in worker processes under crashes, failures and duplicates, and proves every event had exactly one effect.',
        demoFlags,
      ),
    );
    return 0;
  }
  // The ledger keys effects by the signed event id, which GitHub does not send: demo the two that do.
  if (flags.provider !== 'stripe' && flags.provider !== 'standard-webhooks') {
    throw new UsageError(
      `--provider must be stripe or standard-webhooks; got ${JSON.stringify(flags.provider)}`,
    );
  }
  const provider = flags.provider as SimProvider;
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-demo-'));
  const storeUrl = flags.store ?? join(dir, 'store.db');
  let workers = Math.max(1, Math.floor(flags.workers));
  let killRate = flags['kill-rate'];
  const notes: string[] = [];
  if (storeUrl === 'memory') {
    // A memory store lives and dies with one process: sharing it or killing it would be a lie.
    if (workers > 1 || killRate > 0)
      notes.push('memory store: one worker and no kills (it is not shared and does not survive a crash)');
    workers = 1;
    killRate = 0;
  }
  const run = randomBytes(3).toString('hex');
  const ledgerPath = join(dir, 'ledger.db');
  // The ledger is SQLite whatever the store: the demo needs better-sqlite3 (an optional peer).
  const Database = await import('better-sqlite3').then(
    (m) => m.default,
    () => {
      throw new UsageError(
        'the demo keeps its ledger in SQLite and needs better-sqlite3: npm install better-sqlite3',
      );
    },
  );
  const ledger = new Database(ledgerPath);
  ledger.pragma('journal_mode = WAL');
  ledger.exec(`
    CREATE TABLE runs (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE effects (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);`);

  const config: WorkerConfig = {
    store: storeUrl,
    storeName: 'onceonly_demo',
    ledger: ledgerPath,
    provider,
    secret: demoSecret(provider),
    timeoutMs: flags.timeout,
    leaseMs: flags.lease ?? 4 * flags.timeout,
    killRate,
    throwRate: flags['throw-rate'],
    hangRate: flags['hang-rate'],
  };
  const workerFile = fileURLToPath(
    new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
  );
  cluster.setupPrimary({ exec: workerFile, silent: false });
  const env = { ONCEONLY_DEMO_WORKER: JSON.stringify(config) };
  // The port is picked when the workers are ready to listen, and handed to them (and to restarts).
  const ports = assignPort(cluster, workers);
  let stopping = false;
  let killed = 0;
  let startupFailure: string | undefined;
  const aborted = new AbortController();
  const listening = new Set<number>();
  const everListened = new Set<number>();
  cluster.on('listening', (w) => {
    listening.add(w.id);
    everListened.add(w.id);
  });
  cluster.on('exit', (w, code, signal) => {
    listening.delete(w.id);
    if (stopping) return;
    // SIGKILL is the chaos: a restarted worker can be handed queued connections, and killed by one,
    // before the primary hears it listen. Any other death before listening would repeat: stop.
    if (signal === 'SIGKILL') killed++;
    else if (!everListened.has(w.id)) {
      startupFailure = `a worker exited during start-up (${signal ?? `code ${code}`}); see its error above`;
      aborted.abort();
      return;
    }
    cluster.fork(env); // restart, as a process manager would
  });
  for (let i = 0; i < workers; i++) cluster.fork(env);
  try {
    await until(
      () => listening.size >= workers || startupFailure !== undefined,
      60_000,
      'onceonly demo: workers did not start listening',
    );
    if (startupFailure) throw new Error(startupFailure);
  } catch (error) {
    stopping = true;
    ports.detach();
    for (const w of Object.values(cluster.workers ?? {})) w?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const port = ports.port!;

  const quiet = flags.json || !process.stderr.isTTY;
  const bar = quiet ? undefined : progressBar(flags.events);
  const sim = await simulate({
    url: `http://127.0.0.1:${port}/webhooks`,
    provider,
    secret: config.secret,
    events: flags.events,
    concurrency: flags.concurrency,
    duplicateRate: 0.3,
    concurrentRate: 0.2,
    requestTimeoutMs: Math.max(5_000, 3 * flags.timeout),
    // Providers retry for hours or days; give the run a budget no restart storm on a busy machine exhausts.
    maxAttempts: 60,
    backoffMs: 100,
    maxBackoffMs: Math.max(1_000, config.leaseMs / 2),
    run,
    onProgress: bar,
    signal: aborted.signal,
  });
  bar?.(flags.events, flags.events);

  stopping = true;
  ports.detach();
  // Every acknowledged effect is committed to the ledger; stop the workers without ceremony.
  // A worker that already exited stays in cluster.workers until its IPC channel closes too, and
  // emits no second 'exit': wait only for the live ones.
  await Promise.all(
    Object.values(cluster.workers ?? {}).map((w) => {
      if (!w || w.isDead()) return undefined;
      const exited = new Promise<void>((resolve) => w.process.once('exit', () => resolve()));
      w.process.kill('SIGKILL');
      return exited;
    }),
  );
  if (startupFailure) {
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(startupFailure);
  }

  // The verdict comes from the ledger alone.
  const effects = new Map<string, { n: number; maxAttempt: number }>();
  for (const row of ledger
    .prepare('SELECT event_id AS id, COUNT(*) AS n, MAX(attempt) AS a FROM effects GROUP BY event_id')
    .all() as {
    id: string;
    n: number;
    a: number;
  }[]) {
    effects.set(row.id, { n: row.n, maxAttempt: row.a });
  }
  const handlerRuns = (ledger.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
  let lost = 0;
  let twice = 0;
  let applied = 0;
  let takeovers = 0;
  for (const id of sim.eventIds) {
    const e = effects.get(id);
    if (!e) lost++;
    else {
      applied += e.n;
      twice += e.n - 1;
      if (e.maxAttempt > 1) takeovers++;
    }
  }
  ledger.close();

  const report: DemoReport = {
    store: storeUrl === join(dir, 'store.db') ? 'sqlite (temporary file)' : redact(storeUrl),
    provider,
    workers,
    events: sim.events,
    deliveries: sim.deliveries,
    duplicatesSuppressed: sim.byOutcome.duplicate ?? 0,
    inFlightDeferrals: sim.byOutcome['in-flight'] ?? 0,
    handlerFailures: sim.byOutcome.failed ?? 0,
    workersKilled: killed,
    takeoversAfterCrash: takeovers,
    handlerRuns,
    effectsApplied: applied,
    eventsLost: lost,
    effectsAppliedTwice: twice,
    droppedConnections: sim.dropped,
    timeouts: sim.timeouts,
    seconds: Math.round(sim.seconds * 10) / 10,
    byOutcome: sim.byOutcome,
  };
  if (flags.keep) {
    notes.push(`kept ${dir}`);
    report.ledger = ledgerPath;
  } else rmSync(dir, { recursive: true, force: true });

  if (flags.json) console.log(JSON.stringify(report, null, 2));
  else {
    console.log(
      table(
        `onceonly demo: ${report.events} events, ${report.workers} workers, ${report.store}, ${report.provider} signatures, ${report.seconds} s`,
        [
          ['events', report.events],
          ['deliveries', report.deliveries],
          ['duplicates suppressed', report.duplicatesSuppressed],
          ['in-flight deferrals (409)', report.inFlightDeferrals],
          ['handler failures (500, retried)', report.handlerFailures],
          ['workers killed mid-handler', report.workersKilled],
          ['connections refused or dropped (worker down)', report.droppedConnections],
          ['takeovers after a crash', report.takeoversAfterCrash],
          ['leases lost to a stall (reported)', report.byOutcome['lease-lost'] ?? 0],
          ['handler runs', report.handlerRuns],
          ['effects applied', report.effectsApplied],
          ['events lost', report.eventsLost],
          ['effects applied twice', report.effectsAppliedTwice],
        ],
      ),
    );
    for (const note of notes) console.log(`note: ${note}`);
    console.log(
      lost === 0 && twice === 0
        ? 'OK: every event had exactly one effect.'
        : 'FAILED: see events lost / effects applied twice.',
    );
  }
  return lost === 0 && twice === 0 ? 0 : 1;
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
