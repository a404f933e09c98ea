/**
 * The multi-process race and SIGKILL crash harness every shared store runs. A store's test gives
 * a spec module (see {@link RaceSpecModule}); workers are real processes forked from
 * race-worker.ts, and every effect is counted from the store's own database, not from counters.
 */
import { strict as assert } from 'node:assert';
import { fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Store } from '../../src/core/types.js';
import { once } from '../../src/once.js';
import { bundled, bundledRun } from './bundle.js';

/** Events per race: RACE_EVENTS (default 2,000; CI runs 800, `.ci/run`). */
export const RACE_EVENTS = Number(process.env.RACE_EVENTS ?? 2000);

/** What a store's spec module exports. */
export interface RaceSpecModule {
  open(runId: string): Promise<{
    store: Store;
    effect(eventId: string, attempt: number): Promise<void>;
    close(): Promise<void>;
  }>;
  effects(runId: string): Promise<Map<string, number>>;
  cleanup(runId: string): Promise<void>;
  /** once()'s storeTimeout in the workers, for a server slower than the default allows. @default once()'s */
  storeTimeout?: string;
}

const worker = fileURLToPath(new URL('./race-worker.ts', import.meta.url));

/**
 * The spec at `path`, loaded here (bundled), and the workers' entry: the worker and the spec as one
 * bundle (support/bundle.ts), so a worker needs no tsx and no path to load.
 */
async function load(path: string): Promise<{ spec: RaceSpecModule; entry: string }> {
  return {
    spec: (await import(await bundled(path))) as RaceSpecModule,
    entry: await bundledRun(worker, 'raceWorker', path),
  };
}

/** A worker from `entry` (see load), started with plain node. */
function spawnWorker(entry: string, env: Record<string, string>) {
  return fork(entry, [], {
    execArgv: ['--enable-source-maps'],
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
}

export interface RaceReport {
  runId: string;
  events: number;
  deliveries: number;
  processes: number;
  /** Effects written per event id, read back from the store's database. */
  effectsPerEvent: Map<string, number>;
  /** Outcomes of every once() call, summed over all workers. */
  outcomes: Record<string, number>;
}

/**
 * Forks `processes` workers that each deliver every one of `events` events `deliveries` times
 * through `once()`, retrying in-flight and failed ones as a provider would, then reads the effects.
 */
export async function runRace(options: {
  spec: string;
  processes?: number;
  events?: number;
  deliveries?: number;
}): Promise<RaceReport> {
  const processes = options.processes ?? 4;
  const events = options.events ?? RACE_EVENTS;
  const deliveries = options.deliveries ?? 3;
  const runId = `race${randomBytes(4).toString('hex')}`;
  const { spec, entry } = await load(options.spec);
  const outcomes: Record<string, number> = {};
  const children: ReturnType<typeof fork>[] = [];
  try {
    const exits = Array.from({ length: processes }, (_, n) => {
      const child = spawnWorker(entry, {
        RACE_ROLE: 'race',
        RACE_RUN: runId,
        RACE_EVENTS: String(events),
        RACE_DELIVERIES: String(deliveries),
        RACE_SEED: String(n),
      });
      children.push(child);
      return new Promise<void>((resolve, reject) => {
        child.on('message', (message: { outcomes?: Record<string, number> }) => {
          for (const [k, v] of Object.entries(message.outcomes ?? {})) outcomes[k] = (outcomes[k] ?? 0) + v;
        });
        child.on('error', reject);
        child.on('exit', (code) =>
          code === 0 ? resolve() : reject(new Error(`race worker ${n} exited with ${code}`)),
        );
      });
    });
    // The first worker to fail fails the run: stop the others before the tables are dropped, so
    // the error reported is the first one, not its echoes.
    await Promise.all(exits).catch((error: unknown) => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      throw error;
    });
    const effectsPerEvent = await spec.effects(runId);
    return { runId, events, deliveries, processes, effectsPerEvent, outcomes };
  } finally {
    await spec.cleanup(runId);
  }
}

/** Asserts the race's promise: every event has exactly one effect. */
export function assertExactlyOnce(report: RaceReport): void {
  const missing: string[] = [];
  const doubled: string[] = [];
  for (let i = 0; i < report.events; i++) {
    const n = report.effectsPerEvent.get(`evt-${i}`) ?? 0;
    if (n === 0) missing.push(`evt-${i}`);
    if (n > 1) doubled.push(`evt-${i}`);
  }
  assert.deepEqual(
    { missing: missing.slice(0, 10), doubled: doubled.slice(0, 10) },
    { missing: [], doubled: [] },
  );
  assert.equal(report.effectsPerEvent.size, report.events, 'no effect for an unknown event');
  assert.equal(report.outcomes.processed, report.events, 'one processed outcome per event');
}

/**
 * A worker claims a key and is SIGKILLed inside its handler. A delivery while its lease lives gets
 * `in-flight`; once the lease runs out, the next takes over with attempt 2 and completes; then a
 * duplicate. Exactly one effect is written (the takeover's).
 */
export async function runCrash(options: { spec: string; leaseMs?: number }): Promise<void> {
  // Long enough that the dead worker's lease outlives a loaded host's slowest kill, exit and claim
  // (a 1 s lease on PostgreSQL, with the chaos suites loading it, had under 1 s to spare).
  const leaseMs = options.leaseMs ?? 3_000;
  const runId = `crash${randomBytes(4).toString('hex')}`;
  const key = `${runId}:evt-crash`;
  const { spec, entry } = await load(options.spec);
  const handle = await spec.open(runId);
  try {
    const child = spawnWorker(entry, {
      RACE_ROLE: 'crash',
      RACE_RUN: runId,
      RACE_KEY: key,
      RACE_LEASE: String(leaseMs),
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    await new Promise<void>((resolve, reject) => {
      child.on('message', (m: string) => m === 'in-handler' && resolve());
      child.on('exit', (code) => reject(new Error(`crash worker exited early with ${code}`)));
    });
    child.kill('SIGKILL');
    assert.equal(await exited, 'SIGKILL');

    let runs = 0;
    const work = async ({ attempt }: { attempt: number }) => {
      runs++;
      await handle.effect('evt-crash', attempt);
      return attempt;
    };
    const during = await once(handle.store, key, work, { lease: leaseMs, timeout: '10s' });
    assert.equal(during.outcome, 'in-flight', 'the dead worker still holds its lease');
    assert.equal(during.outcome === 'in-flight' && during.attempt, 1);

    const view = await handle.store.inspect(key);
    assert.equal(view?.state, 'processing');
    // Wait out the lease on the store's clock, with a margin for clock granularity.
    await new Promise((resolve) => setTimeout(resolve, leaseMs + 500));
    const after = await once(handle.store, key, work, { lease: leaseMs, timeout: '10s' });
    assert.equal(after.outcome, 'processed', 'the retry after the lease takes over');
    assert.equal(after.outcome === 'processed' && after.attempt, 2);
    assert.equal(after.outcome === 'processed' && after.value, 2);
    assert.equal((await once(handle.store, key, work, { lease: leaseMs })).outcome, 'duplicate');
    assert.equal(runs, 1);
    const effects = await spec.effects(runId);
    assert.equal(
      effects.get('evt-crash'),
      1,
      'exactly one effect: the dead worker wrote none, the takeover one',
    );
  } finally {
    await handle.close();
    await spec.cleanup(runId);
  }
}

/**
 * `processes` workers claim one key, each write an effect keyed by their attempt, extend and release
 * it, `rounds` times each, retrying while another holds it. Released records keep the attempt, so
 * the attempts handed out are exactly 1..N in all, strictly increasing in each worker, one effect
 * each (two owners at once would share an attempt, or lose their extend or release); then the key
 * reads released at N and the next claim gets N + 1.
 */
export async function runReleaseRace(options: {
  spec: string;
  processes?: number;
  rounds?: number;
}): Promise<void> {
  const processes = options.processes ?? 4;
  const rounds = options.rounds ?? 25;
  const runId = `rel${randomBytes(4).toString('hex')}`;
  const key = `${runId}:evt-released`;
  const { spec, entry } = await load(options.spec);
  const handle = await spec.open(runId);
  const children: ReturnType<typeof fork>[] = [];
  try {
    const reports = await Promise.all(
      Array.from({ length: processes }, (_, n) => {
        const child = spawnWorker(entry, {
          RACE_ROLE: 'release',
          RACE_RUN: runId,
          RACE_KEY: key,
          RACE_ROUNDS: String(rounds),
        });
        children.push(child);
        return new Promise<{ attempts: number[]; lost: number }>((resolve, reject) => {
          let report: { attempts: number[]; lost: number } | undefined;
          child.on('message', (m: { attempts: number[]; lost: number }) => {
            report = m;
          });
          child.on('error', reject);
          child.on('exit', (code) =>
            code === 0 && report
              ? resolve(report)
              : reject(new Error(`release worker ${n} exited with ${code}`)),
          );
        });
      }),
    ).catch((error: unknown) => {
      for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
      throw error;
    });
    const total = processes * rounds;
    for (const { attempts } of reports)
      for (let i = 1; i < attempts.length; i++)
        assert.ok(attempts[i]! > attempts[i - 1]!, `attempts go up in each worker: ${attempts.join(', ')}`);
    assert.deepEqual(
      reports.flatMap((r) => r.attempts).sort((a, b) => a - b),
      Array.from({ length: total }, (_, i) => i + 1),
      'every attempt 1..N handed out exactly once',
    );
    assert.equal(
      reports.reduce((sum, r) => sum + r.lost, 0),
      0,
      'no owner lost its lease to another while holding it',
    );
    const effects = await spec.effects(runId);
    for (let a = 1; a <= total; a++)
      assert.equal(effects.get(`attempt-${a}`), 1, `one owner of attempt ${a}`);
    const view = await handle.store.inspect(key);
    assert.equal(view?.state, 'released');
    assert.equal(view?.attempt, total);
    const next = await handle.store.claim(key, { leaseMs: 30_000, fingerprint: 'f'.repeat(64) });
    assert.equal(next.status === 'acquired' && next.lease.attempt, total + 1);
  } finally {
    await handle.close();
    await spec.cleanup(runId);
  }
}

/** Where a store's races differ from the others': sizes for a slower server. */
export interface RaceSizes {
  /** Events of the exactly-once race. @default RACE_EVENTS */
  events?: number;
  /** Rounds per process of the release race. @default 25 */
  rounds?: number;
}

/**
 * The three races a store's spec module runs through, registered as one suite: RACE_EVENTS events
 * delivered 3 times by 4 processes, exactly one effect each; a SIGKILLed lease holder taken over with
 * attempt 2 once its 1.5 s lease runs out; 4 processes releasing and claiming one key 25 times each.
 */
export function describeRaces(name: string, spec: string, sizes: RaceSizes = {}): void {
  const events = sizes.events ?? RACE_EVENTS;
  const rounds = sizes.rounds ?? 25;
  describe(name, () => {
    it(`4 processes racing ${events} events with 3 deliveries each write exactly one effect per event`, async () => {
      // Act
      const report = await runRace({ spec, processes: 4, events, deliveries: 3 });
      // Assess
      assertExactlyOnce(report);
      assert.equal(
        Object.values(report.outcomes).reduce((a, b) => a + b, 0) >= 4 * events * 3,
        true,
        'every delivery got an outcome',
      );
    });

    it('a SIGKILLed lease holder blocks as in-flight, then is taken over with attempt 2', async () => {
      await runCrash({ spec });
    });

    it(`4 processes releasing and claiming one key ${rounds} times each: attempts 1..${4 * rounds}, strictly increasing, one owner at a time`, async () => {
      await runReleaseRace({ spec, processes: 4, rounds });
    });
  });
}
