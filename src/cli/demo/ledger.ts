/**
 * The demo's ledger: every handler run, effect, failure, dead entry and lost lease, written by the
 * worker processes to SQLite. The verdict comes from the ledger alone.
 */
import type { Database } from 'better-sqlite3';
import { UsageError } from '../args.js';
import type { SimulateReport } from '../simulate.js';

/** Opens the run's ledger with its tables. */
export async function openLedger(path: string): Promise<Database> {
  // The ledger is SQLite whatever the store: the demo needs better-sqlite3 (an optional peer).
  const Sqlite = await import('better-sqlite3').then(
    (m) => m.default,
    () => {
      throw new UsageError(
        'the demo keeps its ledger in SQLite and needs better-sqlite3: npm install better-sqlite3',
      );
    },
  );
  const ledger = new Sqlite(path);
  ledger.pragma('journal_mode = WAL');
  ledger.exec(`
    CREATE TABLE runs (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE effects (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL);
    CREATE TABLE failures (event_id TEXT NOT NULL, attempt INTEGER NOT NULL, timeout INTEGER NOT NULL);
    CREATE TABLE dead (event_id TEXT NOT NULL, attempt INTEGER NOT NULL);
    CREATE TABLE lease_lost (event_id TEXT, attempt INTEGER);
    CREATE TABLE kills (event_id TEXT, at TEXT NOT NULL);`);
  return ledger;
}

/**
 * Answered is not done: waits for the workers to settle every acknowledged event (an effect, or
 * dead) for as long as they make progress, and gives back how many are left.
 */
export async function drain(
  ledger: Database,
  acknowledged: readonly string[],
  stopped: () => boolean,
): Promise<number> {
  const settledIds = ledger.prepare('SELECT event_id AS id FROM effects UNION SELECT event_id FROM dead');
  const unsettled = () => {
    const settled = new Set((settledIds.all() as { id: string }[]).map((r) => r.id));
    return acknowledged.filter((id) => !settled.has(id)).length;
  };
  // As long as the workers make progress: a loaded machine drains slowly, a stuck inbox not at all.
  let left = unsettled();
  let progressAt = performance.now();
  while (left > 0 && !stopped() && performance.now() - progressAt < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = unsettled();
    if (now < left) progressAt = performance.now();
    left = now;
  }
  return left;
}

/** What the ledger says of a run's events. */
export interface LedgerCounts {
  handlerRuns: number;
  leasesLost: number;
  handlerTimeouts: number;
  retriesAfterFailure: number;
  takeovers: number;
  applied: number;
  lost: number;
  lostAfter2xx: number;
  twice: number;
  dead: number;
  /** The events dead in the inbox. */
  deadIds: string[];
  /** Kills that landed after a call to the payments API, before the run ended (`--effects api...`). */
  killsAfterCharge: number;
}

/** Counts the run's events from the ledger: effects, dead entries, runs, failures, takeovers. */
export function countLedger(ledger: Database, sim: SimulateReport): LedgerCounts {
  const gaveUp = new Set(sim.gaveUp);
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
  return {
    handlerRuns,
    leasesLost,
    handlerTimeouts,
    retriesAfterFailure,
    takeovers,
    applied,
    lost,
    lostAfter2xx,
    twice,
    dead,
    deadIds: [...deadIds],
    killsAfterCharge: (
      ledger.prepare(`SELECT COUNT(*) AS n FROM kills WHERE at <> 'mid-work'`).get() as { n: number }
    ).n,
  };
}
