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
 *
 * `--effects api` has each handler also charge its event at a payments API the primary runs on
 * loopback (demo/payments.ts), inside `ctx.step` with the step's idempotency key, and the kills land
 * after that call; the API's own ledger then says how many events it charged twice or never.
 * `--effects api-naive` is the same handler without the step and the key: it charges twice.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { type DemoEffects, EFFECTS } from './demo/api-effect.js';
import { countLedger, drain, type LedgerCounts, openLedger } from './demo/ledger.js';
import { startPayments } from './demo/payments.js';
import { DemoProcesses } from './demo/processes.js';
import { type DemoReport, holds, printOne, printSideBySide, redact } from './demo/report.js';
import { progressBar } from './report.js';
import { demoSecret, SIM_PROVIDERS, type SimProvider } from './sign.js';
import { type SimulateReport, simulate } from './simulate.js';
import { canOpenSqlite, openStore } from './stores.js';
import type { DemoMode, DemoRole, WorkerConfig } from './worker.js';

export type { DemoReport } from './demo/report.js';

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
  effects: {
    type: 'string',
    default: 'ledger',
    help: "the handlers' effect: ledger (a row in the demo's ledger), api (also a charge at a payments API on loopback, in ctx.step with its idempotency key; kills land after the charge), api-naive (that charge without a step or a key: charges twice)",
  },
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
  if (!EFFECTS.includes(flags.effects as DemoEffects)) {
    throw new UsageError(`--effects must be ledger, api or api-naive; got ${JSON.stringify(flags.effects)}`);
  }
  const modes = flags.mode === 'all' ? MODES : [flags.mode as DemoMode];
  if (flags.store === undefined && !(await canOpenSqlite())) {
    // The default is a SQLite file shared by the processes; without a client for it, one process.
    flags.store = 'memory';
    process.stderr.write(
      'onceonly: no SQLite here (Node.js 22.16+ has it built in, or npm install better-sqlite3): the demo runs on the memory store\n',
    );
  }
  if (modes.some((m) => m !== 'inline')) await needInbox(flags.store);
  const reports: DemoReport[] = [];
  for (const mode of modes) reports.push(await runDemo(flags, mode));
  if (flags.json) console.log(JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2));
  else if (reports.length === 1) printOne(reports[0]!);
  else printSideBySide(reports);
  return reports.every(holds) ? 0 : 1;
}

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

/** A run's settings: its processes, store and key space, ledger, and the workers' config. */
interface RunSetup {
  provider: SimProvider;
  /** GitHub sends each delivery once and never retries a failure. */
  neverRetries: boolean;
  /** The temporary directory: the ledger, and the default SQLite store. */
  dir: string;
  storeUrl: string;
  workers: number;
  inboxWorkers: number;
  notes: string[];
  /** The run's id, unique across runs. */
  run: string;
  ledgerPath: string;
  config: WorkerConfig;
}

/** Settles a run's processes and kill rate for its store, and opens its directory and ledger. */
async function prepare(flags: DemoFlags, mode: DemoMode): Promise<RunSetup> {
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
  const ledgerPath = join(dir, 'ledger.jsonl');
  openLedger(ledgerPath);
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
    effects: flags.effects as DemoEffects,
  };
  return {
    provider,
    neverRetries,
    dir,
    storeUrl,
    workers,
    inboxWorkers,
    notes,
    run,
    ledgerPath,
    config,
  };
}

async function runDemo(flags: DemoFlags, mode: DemoMode): Promise<DemoReport> {
  const setup = await prepare(flags, mode);
  const { dir, storeUrl, notes, ledgerPath: ledger, config } = setup;
  // The payments API runs here, in the primary: the chaos never kills it, and its ledger is its own.
  const payments = config.effects === 'ledger' ? undefined : await startPayments();
  config.paymentsUrl = payments?.url;
  const processes = new DemoProcesses(config, mode, setup.workers, setup.inboxWorkers);
  // The run's own tables or keys on a server it was pointed at go with the run, once every process
  // has stopped, unless --keep (the default SQLite store goes with the temporary directory).
  const dropRun = async () => {
    if (flags.store === undefined || flags.store === 'memory') return;
    if (flags.keep) notes.push(`kept the key space ${config.storeName} on the store`);
    else notes.push(...(await dropKeySpace(flags.store, config.storeName)));
  };
  // Ctrl-C ends the run as a failed start-up ends it: workers stopped (none restarted), the run's
  // key space dropped unless --keep. A second Ctrl-C ends the process at once.
  const onInterrupt = () => processes.interrupt();
  process.once('SIGINT', onInterrupt);
  const ended = async () => {
    process.off('SIGINT', onInterrupt);
    await processes.stop();
    await payments?.close();
    await dropRun();
  };
  // Ends a run that cannot report (workers stopped, key space dropped, ledger and directory gone)
  // and gives back the error to throw.
  const abandon = async (error: unknown): Promise<unknown> => {
    await ended();
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
  processes.start(webRole);
  try {
    await processes.started(interruption);
  } catch (error) {
    throw await abandon(error);
  }

  const quiet = flags.json || !process.stderr.isTTY;
  const bar = quiet ? undefined : progressBar(flags.events);
  if (!quiet) process.stderr.write(`  mode ${mode}\n`);
  let sim: SimulateReport;
  try {
    sim = await send(flags, setup, processes.port, bar, processes.aborted.signal);
  } catch (error) {
    // The simulator failed (not a delivery: those are counted): end the run as a start-up failure ends it.
    throw await abandon(error);
  }
  if (processes.interrupted) throw await abandon(interruption());
  bar?.(flags.events, flags.events);

  // The verdict comes from the ledger alone.
  const gaveUp = new Set(sim.gaveUp);
  const acknowledged = sim.eventIds.filter((id) => !gaveUp.has(id));
  const drainStarted = performance.now();
  // Answered is not done: wait for the workers to settle every accepted event (an effect, or dead).
  const undrained =
    mode === 'inline'
      ? 0
      : await drain(
          ledger,
          acknowledged,
          () => processes.startupFailure !== undefined || processes.interrupted,
        );
  const drainSeconds = Math.round((performance.now() - drainStarted) / 100) / 10;
  if (processes.interrupted) throw await abandon(interruption());
  if (processes.startupFailure) throw await abandon(new Error(processes.startupFailure));
  await ended();

  const counts = countLedger(ledger, sim);
  const report = reportOf(setup, mode, sim, counts, { killed: processes.killed, undrained, drainSeconds });
  if (payments) {
    // Lost: never charged, and not dead in the inbox either (a dead event is kept, and counted apart).
    const dead = new Set(counts.deadIds);
    const { charges, chargedTwice, extraCharges, replayed, keyMisuse } = payments.counts(sim.eventIds);
    const neverCharged = payments.counts(sim.eventIds.filter((id) => !dead.has(id))).neverCharged;
    const killsAfterCharge = counts.killsAfterCharge;
    report.payments = {
      charges,
      chargedTwice,
      extraCharges,
      neverCharged,
      replayed,
      keyMisuse,
      killsAfterCharge,
    };
  }
  if (flags.keep) {
    notes.push(`kept ${dir}`);
    report.ledger = setup.ledgerPath;
  } else rmSync(dir, { recursive: true, force: true });
  return report;
}

/** The simulated sender's run against the web processes on `port`. */
function send(
  flags: DemoFlags,
  setup: RunSetup,
  port: number,
  onProgress: ((done: number, total: number) => void) | undefined,
  signal: AbortSignal,
): Promise<SimulateReport> {
  const neverRetries = setup.neverRetries;
  return simulate({
    url: `http://127.0.0.1:${port}/webhooks`,
    provider: setup.provider,
    secret: setup.config.secret,
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
    maxBackoffMs: Math.max(1_000, setup.config.leaseMs / 2),
    run: setup.run,
    onProgress,
    signal,
  });
}

/** The report of a finished run, from its settings, the sender's report and the ledger's counts. */
function reportOf(
  setup: RunSetup,
  mode: DemoMode,
  sim: SimulateReport,
  counts: LedgerCounts,
  run: { killed: number; undrained: number; drainSeconds: number },
): DemoReport {
  const { storeUrl, dir, neverRetries } = setup;
  return {
    store: storeUrl === join(dir, 'store.db') ? 'sqlite (temporary file)' : redact(storeUrl),
    keySpace: setup.config.storeName,
    provider: setup.provider,
    mode,
    effects: setup.config.effects,
    sender: neverRetries ? 'never retries' : 'retries',
    workers: setup.workers,
    inboxWorkers: setup.inboxWorkers,
    events: sim.events,
    deliveries: sim.deliveries,
    duplicatesSuppressed: sim.byOutcome.duplicate ?? 0,
    inFlightDeferrals: sim.byOutcome['in-flight'] ?? 0,
    handlerFailures: sim.byOutcome.failed ?? 0,
    handlerTimeouts: counts.handlerTimeouts,
    deliveriesFailed: neverRetries ? sim.gaveUp.length : 0,
    accepted: sim.byOutcome.accepted ?? 0,
    workersKilled: run.killed,
    takeoversAfterCrash: counts.takeovers,
    retriesAfterFailure: counts.retriesAfterFailure,
    handlerRuns: counts.handlerRuns,
    leasesLost: counts.leasesLost,
    effectsApplied: counts.applied,
    eventsLost: counts.lost,
    lostAfter2xx: counts.lostAfter2xx,
    effectsAppliedTwice: counts.twice,
    dead: counts.dead,
    undrained: run.undrained,
    droppedConnections: sim.dropped,
    refusedConnections: sim.refused,
    timeouts: sim.timeouts,
    seconds: Math.round(sim.seconds * 10) / 10,
    drainSeconds: run.drainSeconds,
    notes: setup.notes,
    byOutcome: sim.byOutcome,
  };
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
