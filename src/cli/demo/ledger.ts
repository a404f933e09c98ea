/**
 * The demo's ledger: every handler run, effect, failure, dead entry and lost lease, appended by the
 * worker processes to one file of JSON lines. The verdict comes from the ledger alone.
 *
 * A plain file, so the demo needs no database package: each record is one `write` to a file opened
 * for appending, which the kernel places at the end whole, whoever else appends; it is in the page
 * cache, so the writer's SIGKILL right after cannot take it back.
 */
import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs';
import type { SimulateReport } from '../simulate.js';

/** The ledger's tables: what a worker appends. */
export interface LedgerRows {
  runs: { id: string | null; attempt: number; pid: number };
  effects: { id: string | null; attempt: number; pid: number };
  failures: { id: string | null; attempt: number; timeout: boolean };
  dead: { id: string | null; attempt: number };
  lease_lost: { id: string | null; attempt: number | null };
  kills: { id: string | null; at: string };
}
type Row = { [T in keyof LedgerRows]: LedgerRows[T] & { t: T } }[keyof LedgerRows];

/** The rows of a ledger, by table. */
export type Ledger = { [T in keyof LedgerRows]: LedgerRows[T][] };

/** Creates the run's ledger, empty. */
export function openLedger(path: string): string {
  writeFileSync(path, '');
  return path;
}

/** A worker's end of the ledger: one append per record. */
export function ledgerWriter(path: string): {
  write<T extends keyof LedgerRows>(table: T, row: LedgerRows[T]): void;
  close(): void;
} {
  const fd = openSync(path, 'a');
  return {
    write: (table, row) => {
      writeSync(fd, `${JSON.stringify({ t: table, ...row })}\n`);
    },
    close: () => closeSync(fd),
  };
}

/** Reads the ledger (a line cut short by a kill mid-write, which one write makes unlikely, is left out). */
export function readLedger(path: string): Ledger {
  const ledger: Ledger = { runs: [], effects: [], failures: [], dead: [], lease_lost: [], kills: [] };
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (line === '') continue;
    let row: Row;
    try {
      row = JSON.parse(line) as Row;
    } catch {
      continue;
    }
    (ledger[row.t] as unknown[] | undefined)?.push(row);
  }
  return ledger;
}

/**
 * Answered is not done: waits for the workers to settle every acknowledged event (an effect, or
 * dead) for as long as they make progress, and gives back how many are left.
 */
export async function drain(
  path: string,
  acknowledged: readonly string[],
  stopped: () => boolean,
): Promise<number> {
  const unsettled = () => {
    const { effects, dead } = readLedger(path);
    const settled = new Set([...effects, ...dead].map((r) => r.id));
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
export function countLedger(path: string, sim: SimulateReport): LedgerCounts {
  const ledger = readLedger(path);
  const gaveUp = new Set(sim.gaveUp);
  const effects = new Map<string | null, number>();
  for (const row of ledger.effects) effects.set(row.id, (effects.get(row.id) ?? 0) + 1);
  const deadIds = new Set(ledger.dead.map((r) => r.id));
  // Answered on the wire (inline) or reported to onOutcome only (a worker's, a hybrid run past its budget).
  const handlerTimeouts = ledger.failures.filter((f) => f.timeout).length;
  // A run on attempt 2 or later follows either a run that failed (the provider's retry after a
  // 500, or the inbox's) or one that never finished: a crash, whose lease ran out and was taken over.
  const failed = new Set(ledger.failures.map((f) => `${f.id}#${f.attempt}`));
  const laterRuns = ledger.runs
    .filter((r) => r.attempt > 1)
    .map((r) => ({ id: r.id, afterFailure: failed.has(`${r.id}#${r.attempt - 1}`) }));
  const crashedThenTaken = new Set(laterRuns.filter((r) => !r.afterFailure).map((r) => r.id));
  // So is an entry buried when taken over (its last run died with its attempts spent): no run
  // follows, but the burial, at the next attempt, is the takeover.
  const ran = new Set(ledger.runs.map((r) => `${r.id}#${r.attempt}`));
  for (const d of ledger.dead)
    if (d.attempt > 1 && !ran.has(`${d.id}#${d.attempt}`) && !failed.has(`${d.id}#${d.attempt - 1}`))
      crashedThenTaken.add(d.id);
  const retriesAfterFailure = laterRuns.filter((r) => r.afterFailure).length;
  let lost = 0;
  let lostAfter2xx = 0;
  let twice = 0;
  let applied = 0;
  let dead = 0;
  for (const id of sim.eventIds) {
    const n = effects.get(id);
    if (n) {
      applied += n;
      twice += n - 1;
    } else if (deadIds.has(id)) dead++;
    else {
      lost++;
      if (!gaveUp.has(id)) lostAfter2xx++;
    }
  }
  const takeovers = sim.eventIds.filter((id) => crashedThenTaken.has(id)).length;
  return {
    handlerRuns: ledger.runs.length,
    leasesLost: ledger.lease_lost.length,
    handlerTimeouts,
    retriesAfterFailure,
    takeovers,
    applied,
    lost,
    lostAfter2xx,
    twice,
    dead,
    deadIds: [...deadIds].filter((id) => id !== null),
    killsAfterCharge: ledger.kills.filter((k) => k.at !== 'mid-work').length,
  };
}
