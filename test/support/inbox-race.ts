/**
 * The multi-process inbox race any inbox store can run. A store's test gives a spec module (see
 * {@link InboxRaceSpecModule}); workers are real processes forked from inbox-race-worker.ts. Each
 * accepts every event (the same keys and bodies, in its own order: all but one accept of each key
 * are duplicates) while taking and running due entries: most runs complete, some retry, some are
 * abandoned (a crash: the lease runs out and another process takes over), some stall past their
 * lease and complete late (their complete must fail when another owner took over). Afterwards every
 * entry must have been accepted once and completed exactly once, by its latest run, and the
 * attempts handed out for each entry must be 1..k with no number twice, increasing in every process.
 */
import { strict as assert } from 'node:assert';
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { InboxStore } from '../../src/core/inbox.js';
import { bundled, bundledRun } from './bundle.js';

/** What an inbox store's spec module exports. */
export interface InboxRaceSpecModule {
  /** An inbox over the shared backing data; `seed` tells the workers apart (e.g. to vary clients). */
  open(runId: string, seed: number): Promise<{ inbox: InboxStore; close(): Promise<void> }>;
  cleanup(runId: string): Promise<void>;
}

/** What each worker reports. */
export interface InboxRaceReport {
  accepted: number;
  duplicates: number;
  /** [event, attempt] of every entry this worker took, in the order it took them. */
  takes: [number, number][];
  /** [event, attempt] of every run this worker completed (complete returned true). */
  completed: [number, number][];
  /** Completes and retries that returned false: a run whose entry another process had taken over. */
  lateCompletes: number;
}

const worker = fileURLToPath(new URL('./inbox-race-worker.ts', import.meta.url));

export async function runInboxRace(options: {
  spec: string;
  processes?: number;
  events?: number;
  leaseMs?: number;
}): Promise<{ reports: InboxRaceReport[]; events: number }> {
  const processes = options.processes ?? 4;
  const events = options.events ?? 400;
  const leaseMs = options.leaseMs ?? 500;
  const runId = `irace${randomBytes(4).toString('hex')}`;
  const spec: InboxRaceSpecModule = await import(await bundled(options.spec));
  // The worker and the spec as one bundle (support/bundle.ts), started with plain node.
  const entry = await bundledRun(worker, 'inboxRaceWorker', options.spec);
  const children: ReturnType<typeof fork>[] = [];
  try {
    const reports = await Promise.all(
      Array.from({ length: processes }, (_, n) => {
        const child = fork(entry, [], {
          execArgv: ['--enable-source-maps'],
          env: {
            ...process.env,
            RACE_RUN: runId,
            RACE_EVENTS: String(events),
            RACE_LEASE: String(leaseMs),
            RACE_SEED: String(n),
          },
          stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        });
        children.push(child);
        return new Promise<InboxRaceReport>((resolve, reject) => {
          let report: InboxRaceReport | undefined;
          child.on('message', (m: InboxRaceReport) => {
            report = m;
          });
          child.on('error', reject);
          child.on('exit', (code) =>
            code === 0 && report
              ? resolve(report)
              : reject(new Error(`inbox race worker ${n} exited with ${code}`)),
          );
        });
      }),
    ).catch((error: unknown) => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      throw error;
    });
    // The store's own view before cleanup: every entry completed, nothing left to do.
    const { inbox, close } = await spec.open(runId, 0);
    try {
      const stats = await inbox.stats({ receiver: runId });
      assert.deepEqual(
        { ...stats, oldestDueMs: 0 },
        { pending: 0, processing: 0, completed: events, dead: 0, scheduled: 0, oldestDueMs: 0 },
      );
      for (let i = 0; i < events; i++) {
        const view = await inbox.get(`${runId}:evt-${i}`);
        assert.equal(view?.state, 'completed', `evt-${i} completed`);
        const handed = reports.flatMap((r) => r.takes.filter(([e]) => e === i)).length;
        assert.equal(view?.attempts, handed, `evt-${i}: the stored attempts are the takes`);
      }
    } finally {
      await close();
    }
    return { reports, events };
  } finally {
    await spec.cleanup(runId);
  }
}

/** Asserts the race's promise from the workers' reports. */
export function assertInboxRace({ reports, events }: { reports: InboxRaceReport[]; events: number }): void {
  assert.equal(
    reports.reduce((n, r) => n + r.accepted, 0),
    events,
    'each event accepted once',
  );
  assert.equal(
    reports.reduce((n, r) => n + r.duplicates, 0),
    events * (reports.length - 1),
    'every other accept a duplicate',
  );
  const completions = new Map<number, number[]>();
  for (const r of reports)
    for (const [e, a] of r.completed) completions.set(e, [...(completions.get(e) ?? []), a]);
  const wrong = Array.from({ length: events }, (_, i) => i).filter((i) => completions.get(i)?.length !== 1);
  assert.deepEqual(wrong.slice(0, 10), [], 'every entry completed exactly once');
  for (let i = 0; i < events; i++) {
    const attempts = reports.flatMap((r) => r.takes.filter(([e]) => e === i).map(([, a]) => a));
    assert.equal(
      completions.get(i)![0],
      Math.max(...attempts),
      `evt-${i}: completed by its latest run (a stale owner never completes)`,
    );
    assert.deepEqual(
      [...attempts].sort((a, b) => a - b),
      Array.from({ length: attempts.length }, (_, k) => k + 1),
      `evt-${i}: attempts 1..k, each handed out once: ${attempts.join(', ')}`,
    );
  }
  for (const r of reports) {
    const last = new Map<number, number>();
    for (const [e, a] of r.takes) {
      assert.ok(a > (last.get(e) ?? 0), `attempts of evt-${e} increase in every process`);
      last.set(e, a);
    }
  }
}

/**
 * Registers a store's inbox race test: `processes` workers accepting the same events (default 200,
 * or ONCEONLY_INBOX_RACE_EVENTS; a store on a slow local server gives its own `events`) and running
 * them at once, then {@link assertInboxRace}.
 */
export function inboxRaceTest(
  store: string,
  spec: string,
  processes = 4,
  sizes: { events?: number } = {},
): void {
  const events = sizes.events ?? Number(process.env.ONCEONLY_INBOX_RACE_EVENTS ?? 200);
  describe(`${store} inbox across processes`, () => {
    it(`${processes} processes accepting ${events} events each and running them at once complete every entry exactly once`, async () => {
      const result = await runInboxRace({ spec, processes, events, leaseMs: 500 });
      assertInboxRace(result);
      const takes = result.reports.reduce((n, r) => n + r.takes.length, 0);
      const late = result.reports.reduce((n, r) => n + r.lateCompletes, 0);
      console.log(
        `${store} inbox race: ${takes} takes for ${events} entries, ${late} completes or retries refused to a stale owner`,
      );
    });
  });
}
