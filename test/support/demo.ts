/** Runs `onceonly demo --json --keep` in its own process, as a user would; shared by the demo tests. */
import { strict as assert } from 'node:assert';
import { readFileSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { cliPath, root, run } from './cli.js';

export { root, run };

/** The figures of one mode's run (`onceonly demo --json`). */
export interface DemoRunReport {
  mode: 'inline' | 'inbox' | 'hybrid';
  effects: 'ledger' | 'api' | 'api-naive';
  /** The payments API's own ledger (`--effects api` and `api-naive`). */
  payments?: {
    charges: number;
    chargedTwice: number;
    extraCharges: number;
    neverCharged: number;
    replayed: number;
    keyMisuse: number;
    killsAfterCharge: number;
  };
  events: number;
  eventsLost: number;
  lostAfter2xx: number;
  timeouts: number;
  effectsAppliedTwice: number;
  effectsApplied: number;
  handlerRuns: number;
  workersKilled: number;
  takeoversAfterCrash: number;
  /** Runs that ended after their lease ran out and another took over (`lease-lost`). */
  leasesLost: number;
  retriesAfterFailure: number;
  deliveries: number;
  deliveriesFailed: number;
  handlerFailures: number;
  droppedConnections: number;
  refusedConnections: number;
  accepted: number;
  dead: number;
  undrained: number;
  seconds: number;
  /** The ledger's path: with keep only. */
  ledger: string;
  /** The run's table name or key prefix on its store. */
  keySpace: string;
  notes: string[];
  byOutcome: Record<string, number>;
}

/**
 * The demo with `args` after `--events <events> --timeout 1000 --keep --json` (without `--keep` when
 * `keep` is false); its report and exit code.
 */
export async function runDemo(
  args: readonly string[],
  events: number,
  timeoutMs = 180_000,
  keep = true,
): Promise<{ report: DemoRunReport; code: number }> {
  const argv = [
    cliPath,
    'demo',
    '--events',
    String(events),
    '--timeout',
    '1000',
    ...(keep ? ['--keep'] : []),
    '--json',
    ...args,
  ];
  try {
    const { stdout } = await run(process.execPath, argv, { cwd: root, timeout: timeoutMs });
    return { report: JSON.parse(stdout), code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; code?: number; stderr?: string };
    if (!e.stdout) throw new Error(`demo failed: ${e.stderr}`);
    return { report: JSON.parse(e.stdout), code: e.code ?? 1 };
  }
}

/** Recounts from the ledger itself: every event exactly one effect. */
/** The demo's ledger as the workers appended it: one JSON object a line, `{ t: table, id, attempt, ... }`. */
export function readDemoLedger(path: string): { t: string; id: string; attempt: number }[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { t: string; id: string; attempt: number });
}

export function assertLedger(report: DemoRunReport) {
  try {
    const rows = readDemoLedger(report.ledger);
    const effects = new Map<string, number>();
    for (const r of rows) if (r.t === 'effects') effects.set(r.id, (effects.get(r.id) ?? 0) + 1);
    assert.equal(effects.size, report.events, 'every event has an effect');
    assert.deepEqual(
      [...effects].filter(([, n]) => n !== 1),
      [],
      'no event has two effects',
    );
    const runs = rows.filter((r) => r.t === 'runs').length;
    assert.ok(runs >= report.events);
  } finally {
    rmSync(dirname(report.ledger), { recursive: true, force: true });
  }
  assert.equal(report.eventsLost, 0);
  assert.equal(report.effectsAppliedTwice, 0);
  assert.ok(report.deliveries > report.events, 'events were delivered more than once');
}
