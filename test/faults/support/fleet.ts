/**
 * Runs receiver processes (worker.ts under node:cluster, restarted when killed, as a process
 * manager would) and drives them with the CLI's delivery simulator while a fault is injected, then
 * computes the verdict from the SQLite ledger the workers wrote: events lost, effects doubled, and
 * which doubles a degraded or lease-lost delivery reported.
 */
import cluster from 'node:cluster';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { demoSecret } from '../../../src/cli/sign.js';
import { type SimulateReport, simulate } from '../../../src/cli/simulate.js';
import { assignPort, until } from '../../../src/cli/wait.js';
import { bundled } from '../../support/bundle.js';
import { dropStore } from '../../support/drop-store.js';
import { type OpenedSqlite, openSqlite } from '../../support/sqlite-client.js';
import type { FaultWorkerConfig } from './worker.js';

/** Scales the default sizes: FAULT_SIZE=10 runs ten times the events. */
export const FAULT_SIZE = Math.max(1, Number(process.env.FAULT_SIZE ?? 1));

export interface FleetOptions {
  store: FaultWorkerConfig['store'];
  url?: string;
  events: number;
  workers?: number;
  concurrency?: number;
  timeoutMs?: number;
  leaseMs?: number;
  onStoreError?: 'closed' | 'open';
  crash?: FaultWorkerConfig['crash'];
  effect?: FaultWorkerConfig['effect'];
  /** The payments API the 'api' effects charge at (the test runs it). */
  paymentsUrl?: string;
  workMs?: number;
  redisOfflineQueue?: boolean;
  /** Share of events sent again after their first success. @default 0.3 */
  duplicateRate?: number;
  /** Inbox mode (every process accepts and runs a worker); `inlineMs` makes it hybrid. */
  inbox?: FaultWorkerConfig['inbox'];
  /** Attempts per copy by the simulator (1: a sender that never retries, as GitHub). @default 20 */
  senderAttempts?: number;
  /** Runs once when `at` of the events are done (the run carries on meanwhile). */
  fault?: { at: number; inject: () => Promise<void> };
}

export interface FleetReport {
  events: number;
  deliveries: number;
  processes: number;
  workersKilled: number;
  /**
   * Processes that recorded a crash and then exited by SIGKILL, whenever the exit came (a kill at
   * the very end of a run lands after the fleet has started stopping, and is not a restart).
   */
  killsLanded: number;
  handlerRuns: number;
  effects: number;
  eventsLost: number;
  effectsDoubled: number;
  /** Doubles not matched one-to-one by a delivery of that event reported degraded or lease-lost. */
  unreportedDoubles: number;
  degradedDeliveries: number;
  leaseLost: number;
  /** Events whose handler ran again on attempt 2 or later, after a crashed or lost lease. */
  takeovers: number;
  responses5xx: number;
  failedOutcomes: number;
  gaveUp: number;
  /** Kills the processes recorded just before they happened, by step (the kill landed). */
  crashes: Record<string, number>;
  /** Events a process was killed on (at the crash step), with their effects: each must be 1. */
  crashedEvents: { id: string; step: string; effects: number; trail?: string }[];
  /** Fenced effect: runs that found the effect already applied by an earlier attempt. */
  fenceSaw: number;
  /** Inbox: entries dead (outcome `dead`), and events still unsettled when the drain gave up. */
  dead: number;
  undrained: number;
  byOutcome: Record<string, number>;
  byStatus: Record<string, number>;
  seconds: number;
  sim: SimulateReport;
}

const workerFile = fileURLToPath(new URL('./worker.ts', import.meta.url));

export async function runFleet(options: FleetOptions): Promise<FleetReport> {
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-faults-'));
  const run = randomBytes(4).toString('hex');
  const ledgerPath = join(dir, 'ledger.db');
  const ledger = openSqlite(ledgerPath);
  ledger.exec('PRAGMA journal_mode = WAL');
  ledger.exec(`
    CREATE TABLE runs (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE effects (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL, degraded INTEGER NOT NULL);
    CREATE TABLE outcomes (event_id TEXT, outcome TEXT NOT NULL, status INTEGER NOT NULL, degraded TEXT, attempt INTEGER, pid INTEGER NOT NULL);
    CREATE TABLE crashes (event_id TEXT, step TEXT NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE fence (event_id TEXT PRIMARY KEY, attempt INTEGER NOT NULL, applied INTEGER NOT NULL);
    CREATE TABLE seen (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);`);
  const timeoutMs = options.timeoutMs ?? 1_000;
  const config: FaultWorkerConfig = {
    store: options.store,
    url: options.url ?? '',
    name: `onceonly_fault_${run}`,
    ledger: ledgerPath,
    secret: demoSecret('stripe'),
    timeoutMs,
    leaseMs: options.leaseMs ?? 4 * timeoutMs,
    onStoreError: options.onStoreError ?? 'closed',
    crash: options.crash,
    effect: options.effect ?? 'plain',
    paymentsUrl: options.paymentsUrl,
    workMs: options.workMs,
    redisOfflineQueue: options.redisOfflineQueue,
    inbox: options.inbox,
  };
  const workers = options.workers ?? 2;
  // The worker bundled (support/bundle.ts): each restart after a kill starts in a fraction of tsx's CPU.
  cluster.setupPrimary({
    exec: await bundled(workerFile),
    execArgv: ['--enable-source-maps'],
    silent: false,
  });
  const env = { ONCEONLY_FAULT_WORKER: JSON.stringify(config) };
  // The port is picked when the workers are ready to listen, and handed to them (and to restarts).
  const ports = assignPort(cluster, workers);
  let stopping = false;
  let killed = 0;
  let forked = 0;
  let startupFailure: string | undefined;
  const listening = new Set<number>();
  const everListened = new Set<number>();
  const onListening = (w: { id: number }) => {
    listening.add(w.id);
    everListened.add(w.id);
  };
  const sigkilled = new Set<number>();
  const onExit = (
    w: { id: number; process: { pid?: number } },
    code: number | null,
    signal: string | null,
  ) => {
    listening.delete(w.id);
    if (signal === 'SIGKILL' && w.process.pid !== undefined) sigkilled.add(w.process.pid);
    if (stopping) return;
    // A restarted worker can be handed queued connections, and killed by one, before the primary
    // hears it listen: SIGKILL is always a fault to restart from.
    if (signal === 'SIGKILL') killed++;
    else if (!everListened.has(w.id)) {
      startupFailure = `a fault worker exited during start-up (${signal ?? `code ${code}`})`;
      return;
    }
    forked++;
    cluster.fork(env);
  };
  cluster.on('listening', onListening);
  cluster.on('exit', onExit);
  const mine = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  try {
    for (let i = 0; i < workers; i++) {
      forked++;
      cluster.fork(env);
    }
    await until(
      () => listening.size >= workers || startupFailure !== undefined,
      60_000,
      'fault fleet: workers listening',
      25,
    );
    if (startupFailure) throw new Error(startupFailure);
    const port = ports.port!;

    let faultDone: Promise<void> | undefined;
    const sim = await simulate({
      url: `http://127.0.0.1:${port}/webhooks`,
      provider: 'stripe',
      secret: config.secret,
      events: options.events,
      concurrency: options.concurrency ?? 16,
      duplicateRate: options.duplicateRate ?? 0.3,
      concurrentRate: 0.2,
      requestTimeoutMs: Math.max(5_000, 3 * timeoutMs),
      maxAttempts: options.senderAttempts ?? 20,
      backoffMs: 100,
      maxBackoffMs: Math.max(1_000, config.leaseMs / 2),
      run,
      onProgress: (done) => {
        if (options.fault && !faultDone && done >= options.fault.at) faultDone = options.fault.inject();
      },
    });
    await faultDone;
    // Inbox mode: the answers are in, the work may not be; wait until every event is settled
    // (an effect, or dead), or the deadline passes (what is left is reported as undrained). Then, for
    // a while more, until each event whose process was killed has had its entry ended by another
    // process (processed or dead): a kill after the effect leaves the entry to a takeover when its
    // lease runs out, and a fast store can have every effect in before any lease ran out.
    let undrained = 0;
    if (options.inbox) {
      const settled = ledger.prepare(
        `SELECT COUNT(*) AS n FROM (SELECT event_id FROM effects UNION SELECT event_id FROM outcomes WHERE outcome = 'dead')`,
      );
      const unended = ledger.prepare(
        `SELECT COUNT(*) AS n FROM crashes c WHERE c.event_id IS NOT NULL AND NOT EXISTS (
           SELECT 1 FROM outcomes o WHERE o.event_id = c.event_id AND o.pid <> c.pid AND o.outcome IN ('processed', 'dead'))`,
      );
      const target = sim.events;
      await until(() => (settled.get() as { n: number }).n >= target, 90_000, 'inbox drained', 100).catch(
        () => {},
      );
      undrained = target - (settled.get() as { n: number }).n;
      await until(
        () => (unended.get() as { n: number }).n === 0,
        3 * config.leaseMs + 5_000,
        'takeovers',
        100,
      ).catch(() => {});
    }
    stopping = true;
    await Promise.all(
      mine().map((w) => {
        // An exited worker lingers in cluster.workers until its channel closes; it exits no more.
        if (w.isDead()) return undefined;
        const exited = new Promise<void>((resolve) => w.process.once('exit', () => resolve()));
        w.process.kill('SIGKILL');
        // SIGKILL cannot be refused; the bound only keeps a lost 'exit' event from hanging the run.
        return Promise.race([exited, sleep(10_000)]);
      }),
    );

    const effects = new Map<string, number>();
    for (const row of ledger
      .prepare('SELECT event_id AS id, COUNT(*) AS n FROM effects GROUP BY event_id')
      .all() as { id: string; n: number }[])
      effects.set(row.id, row.n);
    const reported = new Map<string, number>();
    for (const row of ledger
      .prepare(
        // Only deliveries that ran the handler to the end and say so can account for an extra effect:
        // lease-lost, or processed while degraded (fail-open, confirm failed) or after a takeover.
        // A failed or refused delivery applied nothing and reports nothing here.
        `SELECT event_id AS id, COUNT(*) AS n FROM outcomes
         WHERE outcome = 'lease-lost'
            OR (outcome = 'processed' AND (degraded IS NOT NULL OR attempt > 1))
         GROUP BY event_id`,
      )
      .all() as { id: string; n: number }[])
      reported.set(row.id, row.n);
    const count = (sql: string) => (ledger.prepare(sql).get() as { n: number }).n;
    // A takeover is a handler run on attempt 2 or later whose previous attempt did not fail and
    // release (that is a plain retry): the lease of a crashed run ran out and a retry got in. (With
    // the transactional effect that run applies nothing: it sees the dedup row.)
    const takenOver = new Set(
      (
        ledger
          .prepare(
            `SELECT DISTINCT r.event_id AS id FROM runs r WHERE r.attempt > 1 AND NOT EXISTS (
               SELECT 1 FROM outcomes o WHERE o.event_id = r.event_id AND o.outcome = 'failed' AND o.attempt = r.attempt - 1)`,
          )
          .all() as { id: string }[]
      ).map((row) => row.id),
    );
    let lost = 0;
    let doubled = 0;
    let unreported = 0;
    let applied = 0;
    for (const id of sim.eventIds) {
      const n = effects.get(id);
      if (n === undefined) {
        lost++;
        continue;
      }
      applied += n;
      doubled += n - 1;
      unreported += Math.max(0, n - 1 - (reported.get(id) ?? 0));
    }
    const takeovers = sim.eventIds.filter((id) => takenOver.has(id)).length;
    const responses5xx = Object.entries(sim.byStatus)
      .filter(([status]) => Number(status) >= 500)
      .reduce((sum, [, n]) => sum + n, 0);
    const crashes: Record<string, number> = {};
    for (const row of ledger.prepare('SELECT step, COUNT(*) AS n FROM crashes GROUP BY step').all() as {
      step: string;
      n: number;
    }[])
      crashes[row.step] = row.n;
    // Each process that recorded a crash killed itself right after: wait for every such exit.
    const crashPids = (ledger.prepare('SELECT DISTINCT pid FROM crashes').all() as { pid: number }[]).map(
      (row) => row.pid,
    );
    await until(
      () => crashPids.every((pid) => sigkilled.has(pid)),
      5_000,
      'crashed processes exit',
      25,
    ).catch(() => {});
    const killsLanded = crashPids.filter((pid) => sigkilled.has(pid)).length;
    const crashedEvents = (
      ledger
        .prepare('SELECT DISTINCT event_id AS id, step FROM crashes WHERE event_id IS NOT NULL')
        .all() as {
        id: string;
        step: string;
      }[]
    ).map((row) => {
      const n = effects.get(row.id) ?? 0;
      // What the ledger says of an event that did not end in one effect, so a failure explains itself.
      return n === 1 ? { ...row, effects: n } : { ...row, effects: n, trail: trailOf(ledger, row.id) };
    });
    return {
      crashes,
      crashedEvents,
      fenceSaw: count('SELECT COUNT(*) AS n FROM seen'),
      dead: count(`SELECT COUNT(DISTINCT event_id) AS n FROM outcomes WHERE outcome = 'dead'`),
      undrained,
      events: sim.events,
      deliveries: sim.deliveries,
      processes: forked,
      workersKilled: killed,
      killsLanded,
      handlerRuns: count('SELECT COUNT(*) AS n FROM runs'),
      effects: applied,
      eventsLost: lost,
      effectsDoubled: doubled,
      unreportedDoubles: unreported,
      degradedDeliveries: count('SELECT COUNT(*) AS n FROM outcomes WHERE degraded IS NOT NULL'),
      leaseLost: count(`SELECT COUNT(*) AS n FROM outcomes WHERE outcome = 'lease-lost'`),
      takeovers,
      responses5xx,
      failedOutcomes: count(`SELECT COUNT(*) AS n FROM outcomes WHERE outcome = 'failed'`),
      gaveUp: sim.gaveUp.length,
      byOutcome: sim.byOutcome,
      byStatus: sim.byStatus,
      seconds: Math.round(sim.seconds * 10) / 10,
      sim,
    };
  } finally {
    stopping = true;
    ports.detach();
    for (const w of mine()) w.process.kill('SIGKILL');
    await until(() => mine().length === 0, 10_000, 'fault fleet: workers exit', 25).catch(() => {});
    cluster.off('listening', onListening);
    cluster.off('exit', onExit);
    ledger.close();
    rmSync(dir, { recursive: true, force: true });
    // The run's tables or keys on a shared server (its inbox entries and queue sets outlive it).
    if (options.url) await dropStore(options.url, config.name).catch(() => {});
  }
}

/**
 * Everything the ledger holds of one event, table by table, each row with its attempt and process:
 * `runs #1@412 #2@518; effects #1@412 #2@518; outcomes accepted@412 processed#2@518; kills accepted@412`.
 */
function trailOf(ledger: OpenedSqlite, id: string): string {
  const list = (sql: string) =>
    (ledger.prepare(sql).all(id) as { v: string }[]).map((r) => r.v).join(' ') || '-';
  return [
    `runs ${list(`SELECT '#' || attempt || '@' || pid AS v FROM runs WHERE event_id = ? ORDER BY rowid`)}`,
    `effects ${list(`SELECT '#' || attempt || IIF(degraded = 1, '(unleased)', '') || '@' || pid AS v FROM effects WHERE event_id = ? ORDER BY rowid`)}`,
    `outcomes ${list(`SELECT outcome || IFNULL('#' || attempt, '') || IFNULL('(' || degraded || ')', '') || '@' || pid AS v FROM outcomes WHERE event_id = ? ORDER BY rowid`)}`,
    `kills ${list(`SELECT step || '@' || pid AS v FROM crashes WHERE event_id = ? ORDER BY rowid`)}`,
  ].join('; ');
}

/** One line for the test log and RELIABILITY.md. */
export function summary(name: string, r: FleetReport): string {
  const { sim: _sim, byStatus: _s, crashedEvents: _c, ...rest } = r;
  return `[fault figures] ${name}: ${JSON.stringify({ ...rest, byStatus: r.byStatus })}`;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
