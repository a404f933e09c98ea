/**
 * The demo's report: what a run proves, counted from the ledger, and how the terminal shows it
 * (one run, or the modes of `--mode all` side by side) with its verdict.
 */
import { grid, table } from '../report.js';
import type { SimProvider } from '../sign.js';
import type { DemoMode } from '../worker.js';
import type { DemoEffects } from './api-effect.js';

export interface DemoReport {
  store: string;
  /** The run's own table name or key prefix on the store: removed at the end unless --keep. */
  keySpace: string;
  provider: SimProvider;
  mode: DemoMode;
  /** The handlers' effect: the ledger alone, or a charge at the payments API too (`--effects`). */
  effects: DemoEffects;
  /** The payments API's own ledger (`--effects api` and `api-naive`). */
  payments?: PaymentsReport;
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

/** What the payments API's own ledger says of a run's events. */
export interface PaymentsReport {
  /** Charges the API made. */
  charges: number;
  /** Events it charged more than once. */
  chargedTwice: number;
  /** Charges past the first of every event. */
  extraCharges: number;
  /** Events it never charged that are not dead in the inbox either: lost. */
  neverCharged: number;
  /** Requests it answered from their Idempotency-Key, charging nothing. */
  replayed: number;
  /** Requests it refused for a key reused with another body. */
  keyMisuse: number;
  /** Processes killed after a charge call and before the run ended. */
  killsAfterCharge: number;
}

/**
 * Whether a run holds: no event lost, no effect applied twice, every accepted event settled; and
 * with the API effect, no event charged twice or never.
 */
export const holds = (r: DemoReport) =>
  r.eventsLost === 0 &&
  r.effectsAppliedTwice === 0 &&
  r.undrained === 0 &&
  (r.payments === undefined || (r.payments.chargedTwice === 0 && r.payments.neverCharged === 0));

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
    ...paymentRows(r),
  ];
}

/** The payments API's figures, from its own ledger. */
function paymentRows(r: DemoReport): [string, number, boolean][] {
  const p = r.payments;
  const shown = p !== undefined;
  return [
    [`payments API (${r.effects}): workers killed after a charge`, p?.killsAfterCharge ?? 0, shown],
    ['  charges made', p?.charges ?? 0, shown],
    ['  answered from an Idempotency-Key (no charge)', p?.replayed ?? 0, shown],
    ['  events charged twice', p?.chargedTwice ?? 0, shown],
    ['  events never charged (lost)', p?.neverCharged ?? 0, shown],
  ];
}

function verdict(r: DemoReport): string {
  const p = r.payments;
  if (holds(r))
    return `OK (${r.mode}): every event had exactly one effect${p ? ' and one charge' : ''}${r.dead ? ' or is dead in the inbox' : ''}.`;
  if (r.effects === 'api-naive' && p && p.chargedTwice > 0)
    return `NOT HELD for the API effect (api-naive): the payments API charged ${p.chargedTwice} events twice (${p.extraCharges} extra charges)${r.eventsLost === 0 && r.effectsAppliedTwice === 0 ? ", while the ledger's own effects were exactly one each" : ''}. This handler calls the API without ctx.step and without an idempotency key, so a run killed or failed after the charge charges again when the event is retried; --effects api is the same handler with both.`;
  if (
    r.mode === 'inline' &&
    r.sender === 'never retries' &&
    r.effectsAppliedTwice === 0 &&
    (p?.chargedTwice ?? 0) === 0
  )
    return `LOST (inline): ${r.eventsLost} events, every failed delivery of a sender that never retries; --mode inbox or hybrid keeps them.`;
  return `FAILED (${r.mode}): see events lost / effects applied twice${p ? ' / events charged twice or never' : ''}.`;
}

export function printOne(r: DemoReport): void {
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

export function printSideBySide(reports: DemoReport[]): void {
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

/** A store URL with its password masked. */
export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
}
