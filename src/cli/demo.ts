/**
 * `onceonly demo`: proves effectively-once under at-least-once chaos. Worker processes receive
 * signed deliveries from the simulator; handlers throw, hang past their deadline, or are killed
 * with SIGKILL mid-work (and restarted); every effect lands in a ledger, and the report is computed
 * from that ledger, not from anyone's counters.
 *
 * `--mode inbox|hybrid` runs the receivers in inbox mode (web processes accept, worker processes
 * run the entries), and `--provider github` sends like GitHub: each event once, never a retry after
 * a failure, a delivery failed past 10 s. Inline mode loses every failed event then; the inbox none.
 * `--mode all` runs the three one after another and shows them side by side.
 */
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { grid, progressBar, table } from './report.js';
import { demoSecret, SIM_PROVIDERS, type SimProvider } from './sign.js';
import { simulate } from './simulate.js';
import { openStore } from './stores.js';
import { assignPort, until } from './wait.js';
import type { DemoMode, DemoRole, WorkerConfig } from './worker.js';

export const demoFlags = {
  events: { type: 'number', default: 1000, help: 'events to deliver' },
  store: {
    type: 'string',
    help: 'memory, a SQLite file, redis://..., postgres://..., mysql://... (default: a temporary SQLite file)',
  },
  provider: {
    type: 'string',
    default: 'stripe',
    help: 'signature scheme and sender: stripe or standard-webhooks (retry for days), github (never retries)',
  },
  mode: {
    type: 'string',
    default: 'inline',
    help: 'inline (today), inbox (accept, then workers), hybrid (inline within --inline, then the inbox), or all',
  },
  workers: { type: 'number', default: 2, help: 'receiver processes' },
  'inbox-workers': { type: 'number', default: 2, help: 'inbox worker processes (inbox and hybrid modes)' },
  inline: { type: 'number', default: 500, help: 'hybrid: the inline budget in ms' },
  'max-attempts': { type: 'number', default: 10, help: 'inbox: runs of an entry before it is dead' },
  'kill-rate': {
    type: 'number',
    default: 0.01,
    help: 'share of handler runs killed with SIGKILL mid-work, one process at a time while all are up (a kill refused meanwhile is a throw instead; when over 0, one process is sure to be killed too, at its first handler run or, inline, its tenth, so every run has a kill)',
  },
  'throw-rate': { type: 'number', default: 0.03, help: 'share of handler runs that throw' },
  'hang-rate': { type: 'number', default: 0.01, help: 'share of handler runs that hang past their deadline' },
  timeout: { type: 'number', default: 1000, help: 'handler deadline in ms' },
  lease: { type: 'number', help: 'lease in ms (default 4 x timeout)' },
  concurrency: { type: 'number', default: 32, help: 'requests in flight at once' },
  keep: {
    type: 'boolean',
    help: "keep the temporary directory (ledger and SQLite store), and the run's tables or keys on --store",
  },
  json: { type: 'boolean', help: 'print the report as JSON (an array with --mode all)' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

const MODES: readonly DemoMode[] = ['inline', 'inbox', 'hybrid'];

export interface DemoReport {
  store: string;
  /** The run's own table name or key prefix on the store: removed at the end unless --keep. */
  keySpace: string;
  provider: SimProvider;
  mode: DemoMode;
  /** How the simulated sender treats a failed delivery. */
  sender: 'retries' | 'never retries';
  workers: number;
  /** Inbox worker processes (inbox and hybrid modes; 0 when the web processes run the entries). */
  inboxWorkers: number;
  events: number;
  deliveries: number;
  duplicatesSuppressed: number;
  inFlightDeferrals: number;
  handlerFailures: number;
  /** Of the handler failures, those that passed their deadline (aborted, claim released). */
  handlerTimeouts: number;
  /** Events the sender saw fail and never delivered again (a sender that never retries). */
  deliveriesFailed: number;
  /** Inbox: deliveries answered accepted (kept, run by workers). */
  accepted: number;
  workersKilled: number;
  takeoversAfterCrash: number;
  /** Handler runs that followed a failed run of the same event (attempt + 1). */
  retriesAfterFailure: number;
  handlerRuns: number;
  /** Runs that ended after their lease ran out and another took over (reported, `lease-lost`). */
  leasesLost: number;
  effectsApplied: number;
  /** Events with no effect that are not dead in the inbox either. */
  eventsLost: number;
  /** Events lost although the sender got a 2xx for them: the library's own failure, never expected. */
  lostAfter2xx: number;
  effectsAppliedTwice: number;
  /** Inbox: events dead after --max-attempts failed runs (kept, visible, requeueable). */
  dead: number;
  /** Inbox: acknowledged events still unsettled once the workers made no progress for 60 s. */
  undrained: number;
  /** Requests whose connection died with a killed worker (retried by a sender that retries). */
  droppedConnections: number;
  /**
   * Of those, connections refused: no process listening. The demo kills one process at a time while
   * the others are up, so only a run with one web process (`--workers 1`) has them.
   */
  refusedConnections: number;
  timeouts: number;
  seconds: number;
  /** Inbox: how long the workers took to settle every accepted event after the last answer. */
  drainSeconds: number;
  /** The ledger database, when --keep was given. */
  ledger?: string;
  notes: string[];
  byOutcome: Record<string, number>;
}

type DemoFlags = ReturnType<typeof parseFlags<typeof demoFlags>>;

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
  if (!SIM_PROVIDERS.includes(flags.provider as SimProvider)) {
    throw new UsageError(
      `--provider must be stripe, standard-webhooks or github; got ${JSON.stringify(flags.provider)}`,
    );
  }
  if (flags.mode !== 'all' && !MODES.includes(flags.mode as DemoMode)) {
    throw new UsageError(`--mode must be inline, inbox, hybrid or all; got ${JSON.stringify(flags.mode)}`);
  }
  const modes = flags.mode === 'all' ? MODES : [flags.mode as DemoMode];
  if (modes.some((m) => m !== 'inline')) await needInbox(flags.store);
  const reports: DemoReport[] = [];
  for (const mode of modes) reports.push(await runDemo(flags, mode));
  if (flags.json) console.log(JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2));
  else if (reports.length === 1) printOne(reports[0]!);
  else printSideBySide(reports);
  return reports.every(holds) ? 0 : 1;
}

const holds = (r: DemoReport) => r.eventsLost === 0 && r.effectsAppliedTwice === 0 && r.undrained === 0;

/** A store without an inbox cannot run inbox mode: say so before any process starts. */
async function needInbox(url: string | undefined): Promise<void> {
  const dir = url === undefined ? mkdtempSync(join(tmpdir(), 'onceonly-demo-')) : undefined;
  try {
    const opened = await openStore(url ?? join(dir!, 'store.db'), 'onceonly_demo');
    const has = opened.store.inbox !== undefined;
    await opened.close();
    if (!has) {
      throw new UsageError(
        `--mode inbox and hybrid need a store with an inbox; the ${opened.kind} store${url === undefined ? ' (the default)' : ''} has none: try --store redis://127.0.0.1:6379 or --store memory`,
      );
    }
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
}

async function runDemo(flags: DemoFlags, mode: DemoMode): Promise<DemoReport> {
  const provider = flags.provider as SimProvider;
  // GitHub sends each delivery once and never retries a failure; it fails one that takes over 10 s.
  const neverRetries = provider === 'github';
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-demo-'));
  const storeUrl = flags.store ?? join(dir, 'store.db');
  let workers = Math.max(1, Math.floor(flags.workers));
  let inboxWorkers = mode === 'inline' ? 0 : Math.max(1, Math.floor(flags['inbox-workers']));
  let killRate = flags['kill-rate'];
  const notes: string[] = [];
  if (storeUrl === 'memory') {
    // A memory store lives and dies with one process: sharing it or killing it would be a lie.
    if (workers > 1 || killRate > 0 || inboxWorkers > 0)
      notes.push(
        'memory store: one process (web and inbox worker) and no kills (it is not shared and does not survive a crash)',
      );
    workers = 1;
    inboxWorkers = 0;
    killRate = 0;
  }
  if (mode !== 'inline' && killRate > 0)
    notes.push('kills hit the inbox worker processes, where the handlers run (web processes only accept)');
  // 64 bits: a run never meets the key space of another (one kept with --keep would be taken as its
  // own: its records reused, then dropped at the end).
  const run = randomBytes(8).toString('hex');
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
    CREATE TABLE effects (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE failures (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, timeout INTEGER NOT NULL);
    CREATE TABLE dead (event_id TEXT NOT NULL, attempt INTEGER NOT NULL);
    CREATE TABLE lease_lost (event_id TEXT, attempt INTEGER);`);

  const config: WorkerConfig = {
    store: storeUrl,
    // One key space per run: the modes of `--mode all` never see each other's entries.
    storeName: `onceonly_demo_${run}`,
    ledger: ledgerPath,
    provider,
    secret: demoSecret(provider),
    timeoutMs: flags.timeout,
    leaseMs: flags.lease ?? 4 * flags.timeout,
    killRate,
    throwRate: flags['throw-rate'],
    hangRate: flags['hang-rate'],
    mode,
    inlineMs: flags.inline,
    maxAttempts: flags['max-attempts'],
  };
  const workerFile = fileURLToPath(
    new URL(`./worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
  );
  cluster.setupPrimary({ exec: workerFile, silent: false });
  const roles = new Map<number, DemoRole>();
  // With kills on, one process is sure to be killed, so a short run cannot pass without its chaos
  // (the other kills are random): the first inbox worker process at its first run (inbox and hybrid
  // modes), the first web process at its tenth in inline mode. Not at its first there: a web process
  // killed while the sender's first connections queue on it left a run where nearly every delivery
  // dropped. A kill the primary refuses (another process down) is asked for again at the next run.
  let firstKill = killRate > 0;
  const fork = (role: DemoRole) => {
    const killAt = !firstKill ? 0 : role === 'worker' ? 1 : mode === 'inline' ? 10 : 0;
    if (killAt > 0) firstKill = false;
    const w = cluster.fork({
      ONCEONLY_DEMO_WORKER: JSON.stringify(config),
      ONCEONLY_DEMO_ROLE: role,
      ONCEONLY_DEMO_KILL_AT: String(killAt),
    });
    roles.set(w.id, role);
  };
  // The port is picked when the web processes are ready to listen, and handed to them (and to restarts).
  const ports = assignPort(cluster, workers);
  let stopping = false;
  let killed = 0;
  let startupFailure: string | undefined;
  const aborted = new AbortController();
  const listening = new Set<number>();
  const ready = new Set<number>();
  const live = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined && !w.isDead());
  // A process kills itself only when the primary grants it (see worker.ts): one kill at a time, and
  // only while every process is up. The chaos is handlers dying mid-work, not the service down: with
  // every web process dead at once the primary stops listening, and a sender that never retries
  // loses the deliveries of those seconds to refused connections (on a loaded host, where restarts
  // are slow, nearly a whole run), none of them having reached a handler.
  let kill: { id: number; exited: boolean } | undefined;
  const allUp = () => live().filter((w) => ready.has(w!.id)).length >= workers + inboxWorkers;
  const markReady = (id: number) => {
    ready.add(id);
    if (kill?.exited && allUp()) kill = undefined;
  };
  const onListening = (w: { id: number }) => {
    listening.add(w.id);
    markReady(w.id);
  };
  const onMessage = (w: Worker, message: unknown) => {
    const m = message as { onceonlyWorking?: unknown; onceonlyMayKill?: unknown } | null;
    // An inbox worker process listens on nothing: it says when its worker runs.
    if (m?.onceonlyWorking === true) markReady(w.id);
    if (typeof m?.onceonlyMayKill === 'number') {
      const granted = kill === undefined && !stopping && allUp();
      if (granted) kill = { id: w.id, exited: false };
      // The asking process may be gone already (another of its handlers was granted a kill): the
      // answer then has no one to reach, and must not end the primary with an EPIPE.
      if (w.isConnected())
        w.send({ onceonlyKill: { ask: m.onceonlyMayKill, granted } }, undefined, {}, () => {});
    }
  };
  const onExit = (w: { id: number }, code: number | null, signal: string | null) => {
    listening.delete(w.id);
    if (kill?.id === w.id) kill.exited = true;
    if (stopping) return;
    // SIGKILL is the chaos: a restarted worker can be handed queued connections, and killed by one,
    // before the primary hears it listen. Any other death before it was ready would repeat: stop.
    if (signal === 'SIGKILL') killed++;
    else if (!ready.has(w.id)) {
      startupFailure = `a worker exited during start-up (${signal ?? `code ${code}`}); see its error above`;
      aborted.abort();
      return;
    }
    fork(roles.get(w.id) ?? 'web'); // restart, as a process manager would
  };
  cluster.on('listening', onListening);
  cluster.on('message', onMessage);
  cluster.on('exit', onExit);
  const stopAll = async () => {
    stopping = true;
    ports.detach();
    // Every acknowledged effect is committed to the ledger; stop the workers without ceremony.
    // A worker that already exited stays in cluster.workers until its IPC channel closes too, and
    // emits no second 'exit': wait only for the live ones.
    await Promise.all(
      live().map((w) => {
        const exited = new Promise<void>((resolve) => w!.process.once('exit', () => resolve()));
        w!.process.kill('SIGKILL');
        return exited;
      }),
    );
    cluster.off('listening', onListening);
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
  };
  // The run's own tables or keys on a server it was pointed at go with the run, once every process
  // has stopped, unless --keep (the default SQLite store goes with the temporary directory).
  const dropRun = async () => {
    if (flags.store === undefined || flags.store === 'memory') return;
    if (flags.keep) notes.push(`kept the key space ${config.storeName} on the store`);
    else notes.push(...(await dropKeySpace(flags.store, config.storeName)));
  };
  // Ctrl-C ends the run as a failed start-up ends it: workers stopped (none restarted), the run's
  // key space dropped unless --keep. A second Ctrl-C ends the process at once.
  let interrupted = false;
  const onInterrupt = () => {
    interrupted = true;
    stopping = true;
    aborted.abort();
  };
  process.once('SIGINT', onInterrupt);
  const ended = async () => {
    process.off('SIGINT', onInterrupt);
    await stopAll();
    await dropRun();
  };
  // Ends a run that cannot report (workers stopped, key space dropped, ledger and directory gone)
  // and gives back the error to throw.
  const abandon = async (error: unknown): Promise<unknown> => {
    await ended();
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
    return error;
  };
  const interruption = () =>
    new Error(
      `interrupted: the workers are stopped${flags.store === undefined || flags.store === 'memory' ? '' : `, and the key space ${config.storeName} is ${flags.keep ? 'kept' : 'removed'}`}`,
    );
  // On a shared server, the run's tables or keys are named before any is written: a run killed
  // outright (SIGKILL, a lost host) cannot drop them, and its operator then knows what to remove.
  if (flags.store !== undefined && flags.store !== 'memory')
    process.stderr.write(
      `onceonly: this run's key space on the store is ${config.storeName} (${flags.keep ? 'kept at its end (--keep)' : 'removed at its end, and on Ctrl-C'})\n`,
    );
  const webRole: DemoRole = mode !== 'inline' && storeUrl === 'memory' ? 'both' : 'web';
  for (let i = 0; i < workers; i++) fork(webRole);
  for (let i = 0; i < inboxWorkers; i++) fork('worker');
  try {
    await until(
      () =>
        (listening.size >= workers && ready.size >= workers + inboxWorkers) ||
        startupFailure !== undefined ||
        interrupted,
      60_000,
      'onceonly demo: workers did not start',
    );
    if (startupFailure) throw new Error(startupFailure);
    if (interrupted) throw interruption();
  } catch (error) {
    throw await abandon(error);
  }
  const port = ports.port!;

  const quiet = flags.json || !process.stderr.isTTY;
  const bar = quiet ? undefined : progressBar(flags.events);
  if (!quiet) process.stderr.write(`  mode ${mode}\n`);
  let sim: Awaited<ReturnType<typeof simulate>>;
  try {
    sim = await simulate({
      url: `http://127.0.0.1:${port}/webhooks`,
      provider,
      secret: config.secret,
      events: flags.events,
      concurrency: flags.concurrency,
      duplicateRate: neverRetries ? 0.2 : 0.3,
      // GitHub sends one copy at a time (plain duplicates only: a redelivery, a replay).
      concurrentRate: neverRetries ? 0 : 0.2,
      requestTimeoutMs: neverRetries ? 10_000 : Math.max(5_000, 3 * flags.timeout),
      // Providers retry for hours or days; give the run a budget no restart storm on a busy machine
      // exhausts. GitHub: never.
      maxAttempts: neverRetries ? 1 : 60,
      backoffMs: 100,
      maxBackoffMs: Math.max(1_000, config.leaseMs / 2),
      run,
      onProgress: bar,
      signal: aborted.signal,
    });
  } catch (error) {
    // The simulator failed (not a delivery: those are counted): end the run as a start-up failure ends it.
    throw await abandon(error);
  }
  if (interrupted) throw await abandon(interruption());
  bar?.(flags.events, flags.events);

  // The verdict comes from the ledger alone.
  const settledIds = ledger.prepare('SELECT event_id AS id FROM effects UNION SELECT event_id FROM dead');
  const gaveUp = new Set(sim.gaveUp);
  const acknowledged = sim.eventIds.filter((id) => !gaveUp.has(id));
  let undrained = 0;
  const drainStarted = performance.now();
  if (mode !== 'inline') {
    // Answered is not done: wait for the workers to settle every accepted event (an effect, or dead).
    const unsettled = () => {
      const settled = new Set((settledIds.all() as { id: string }[]).map((r) => r.id));
      return acknowledged.filter((id) => !settled.has(id)).length;
    };
    // As long as the workers make progress: a loaded machine drains slowly, a stuck inbox not at all.
    let left = unsettled();
    let progressAt = performance.now();
    while (
      left > 0 &&
      startupFailure === undefined &&
      !interrupted &&
      performance.now() - progressAt < 60_000
    ) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      const now = unsettled();
      if (now < left) progressAt = performance.now();
      left = now;
    }
    undrained = left;
  }
  const drainSeconds = Math.round((performance.now() - drainStarted) / 100) / 10;
  if (interrupted) throw await abandon(interruption());
  if (startupFailure) throw await abandon(new Error(startupFailure));
  await ended();

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
  const deadIds = new Set(
    (ledger.prepare('SELECT DISTINCT event_id AS id FROM dead').all() as { id: string }[]).map((r) => r.id),
  );
  const handlerRuns = (ledger.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
  // Answered on the wire (inline) or reported to onOutcome only (a worker's, a hybrid run past its budget).
  const leasesLost = (ledger.prepare('SELECT COUNT(*) AS n FROM lease_lost').get() as { n: number }).n;
  const handlerTimeouts = (
    ledger.prepare('SELECT COUNT(*) AS n FROM failures WHERE timeout = 1').get() as { n: number }
  ).n;
  // A run on attempt 2 or later follows either a run that failed (the provider's retry after a
  // 500, or the inbox's) or one that never finished: a crash, whose lease ran out and was taken over.
  const laterRuns = ledger
    .prepare(
      `SELECT r.event_id AS id, EXISTS (SELECT 1 FROM failures f WHERE f.event_id = r.event_id AND f.attempt = r.attempt - 1) AS afterFailure
       FROM runs r WHERE r.attempt > 1`,
    )
    .all() as { id: string; afterFailure: number }[];
  const crashedThenTaken = new Set(laterRuns.filter((r) => !r.afterFailure).map((r) => r.id));
  const retriesAfterFailure = laterRuns.filter((r) => r.afterFailure).length;
  let lost = 0;
  let lostAfter2xx = 0;
  let twice = 0;
  let applied = 0;
  let dead = 0;
  for (const id of sim.eventIds) {
    const e = effects.get(id);
    if (e) {
      applied += e.n;
      twice += e.n - 1;
    } else if (deadIds.has(id)) dead++;
    else {
      lost++;
      if (!gaveUp.has(id)) lostAfter2xx++;
    }
  }
  const takeovers = sim.eventIds.filter((id) => crashedThenTaken.has(id)).length;
  ledger.close();

  const report: DemoReport = {
    store: storeUrl === join(dir, 'store.db') ? 'sqlite (temporary file)' : redact(storeUrl),
    keySpace: config.storeName,
    provider,
    mode,
    sender: neverRetries ? 'never retries' : 'retries',
    workers,
    inboxWorkers,
    events: sim.events,
    deliveries: sim.deliveries,
    duplicatesSuppressed: sim.byOutcome.duplicate ?? 0,
    inFlightDeferrals: sim.byOutcome['in-flight'] ?? 0,
    handlerFailures: sim.byOutcome.failed ?? 0,
    handlerTimeouts,
    deliveriesFailed: neverRetries ? sim.gaveUp.length : 0,
    accepted: sim.byOutcome.accepted ?? 0,
    workersKilled: killed,
    takeoversAfterCrash: takeovers,
    retriesAfterFailure,
    handlerRuns,
    leasesLost,
    effectsApplied: applied,
    eventsLost: lost,
    lostAfter2xx,
    effectsAppliedTwice: twice,
    dead,
    undrained,
    droppedConnections: sim.dropped,
    refusedConnections: sim.refused,
    timeouts: sim.timeouts,
    seconds: Math.round(sim.seconds * 10) / 10,
    drainSeconds,
    notes,
    byOutcome: sim.byOutcome,
  };
  if (flags.keep) {
    notes.push(`kept ${dir}`);
    report.ledger = ledgerPath;
  } else rmSync(dir, { recursive: true, force: true });
  return report;
}

/** Drops a finished run's key space; a failure is a note in the report, not the run's verdict. */
async function dropKeySpace(url: string, name: string): Promise<string[]> {
  try {
    const opened = await openStore(url, name, { existing: true });
    try {
      await opened.drop();
    } finally {
      await opened.close();
    }
    return [];
  } catch (error) {
    return [`could not remove the key space ${name} from the store: ${(error as Error).message}`];
  }
}

/** The rows of a report, labelled as the terminal shows them, and whether its mode shows each. */
function rows(r: DemoReport): [string, number, boolean][] {
  return [
    ['events', r.events, true],
    ['deliveries', r.deliveries, true],
    ['accepted (202, run by the inbox)', r.accepted, r.mode !== 'inline'],
    ['duplicates suppressed', r.duplicatesSuppressed, true],
    ['in-flight deferrals (409)', r.inFlightDeferrals, r.mode === 'inline'],
    [
      r.sender === 'retries' ? 'handler failures (500, retried)' : 'handler failures (500)',
      r.handlerFailures,
      true,
    ],
    ['  of which handler timeouts (deadline passed)', r.handlerTimeouts, true],
    ['deliveries failed, never retried by the sender', r.deliveriesFailed, r.sender === 'never retries'],
    ['  of which: no answer within the timeout', r.timeouts, r.sender === 'never retries'],
    [
      '  of which: store unavailable (503)',
      r.byOutcome['store-unavailable'] ?? 0,
      r.sender === 'never retries',
    ],
    ['workers killed mid-handler', r.workersKilled, true],
    ['connections refused or dropped (worker down)', r.droppedConnections, true],
    ['  of which refused (no process listening)', r.refusedConnections, r.refusedConnections > 0],
    ['takeovers after a crash', r.takeoversAfterCrash, true],
    ['retries after a failed run (attempt + 1)', r.retriesAfterFailure, true],
    ['leases lost to a stall (reported)', r.leasesLost, true],
    ['handler runs', r.handlerRuns, true],
    ['effects applied', r.effectsApplied, true],
    ['events lost', r.eventsLost, true],
    ['  of which answered 2xx', r.lostAfter2xx, true],
    ['effects applied twice', r.effectsAppliedTwice, true],
    ['dead in the inbox (kept, requeueable)', r.dead, r.mode !== 'inline'],
    ['not drained in time', r.undrained, r.undrained > 0],
  ];
}

function verdict(r: DemoReport): string {
  if (holds(r))
    return `OK (${r.mode}): every event had exactly one effect${r.dead ? ' or is dead in the inbox' : ''}.`;
  if (r.mode === 'inline' && r.sender === 'never retries' && r.effectsAppliedTwice === 0)
    return `LOST (inline): ${r.eventsLost} events, every failed delivery of a sender that never retries; --mode inbox or hybrid keeps them.`;
  return `FAILED (${r.mode}): see events lost / effects applied twice.`;
}

function printOne(r: DemoReport): void {
  console.log(
    table(
      `onceonly demo: ${r.events} events, ${r.mode} mode, ${r.mode === 'inline' ? `${r.workers} workers` : `${r.workers} web + ${r.inboxWorkers} inbox worker processes`}, ${r.store}, ${r.provider} signatures (sender ${r.sender}), ${r.seconds} s`,
      rows(r)
        .filter(([, , shown]) => shown)
        .map(([k, v]) => [k, v]),
    ),
  );
  if (r.takeoversAfterCrash > r.workersKilled)
    console.log(
      'note: takeovers outnumber kills: a killed worker takes every handler it was running down with it, and each of those events is taken over once its lease runs out',
    );
  for (const note of r.notes) console.log(`note: ${note}`);
  console.log(verdict(r));
}

function printSideBySide(reports: DemoReport[]): void {
  const first = reports[0]!;
  // Every row some mode shows, in one order; blank where a mode has no such thing.
  const table = reports.map(rows);
  const lines = table[0]!
    .map(([label], i) => [label, ...table.map((r) => (r[i]![2] ? r[i]![1] : ''))] as (string | number)[])
    .filter((_, i) => table.some((r) => r[i]![2]));
  console.log(
    grid(
      `onceonly demo: ${first.events} events per mode, ${first.store}, ${first.provider} (sender ${first.sender})`,
      ['', ...reports.map((r) => `${r.mode} (${r.seconds} s)`)],
      lines,
    ),
  );
  for (const note of new Set(reports.flatMap((r) => r.notes))) console.log(`note: ${note}`);
  for (const r of reports) console.log(verdict(r));
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
