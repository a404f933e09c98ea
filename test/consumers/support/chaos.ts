/**
 * The chaos run every consumer adapter is proven by, written once with the brokers' differences as
 * data (a kit per broker in ./kits/): consumers in several processes over one queue, each
 * SIGKILLing itself in the middle of a share of first runs and throwing on others, with every
 * message published once and a share of them twice, a few poison messages that always throw and
 * one that SIGKILLs every run of its own. Processes that die are restarted, as a process manager
 * would. The verdict comes from an effect ledger outside the broker (a PostgreSQL table the
 * handlers write their effect to as their last step): every message's effect once, none lost, the
 * poison ones in the broker's dead-letter facility and never in the ledger. A message run twice is
 * a bug unless its first run's process recorded a SIGKILL after that effect (at-least-once's one
 * window: the kill landed before the confirm); those are counted apart and bounded. Loss is seen
 * for the messages published once (a copy's effect stands in for a lost original's).
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Duration } from '../../../src/once.js';
import { bundledRun } from '../../support/bundle.js';
import { reachable, servers } from '../../support/servers.js';

/** Scales the run: CHAOS_SIZE=10 publishes ten times the messages (CI runs the default). */
export const CHAOS_SIZE = Math.max(0.1, Number(process.env.CHAOS_SIZE ?? 1));

/** What differs between brokers: how the queue is made, published to, read for dead letters, consumed. */
export interface ChaosKit {
  readonly name: string;
  /** Makes the queue (stream, topic) and its dead-letter facility under `prefix`. */
  setup(prefix: string): Promise<void>;
  /** Publishes one message per id (the id is its message id and its body's). */
  publish(prefix: string, ids: readonly string[]): Promise<void>;
  /** The ids in the dead-letter facility. */
  deadLettered(prefix: string): Promise<string[]>;
  teardown(prefix: string): Promise<void>;
  /**
   * In a worker process: consumes the queue with the adapter, calling `work(id, ctx)` per message
   * under the given once() options; resolves with a function that stops it.
   */
  consume(
    prefix: string,
    store: import('../../../src/once.js').Store,
    work: (id: string, ctx: import('../../../src/once.js').WorkContext) => Promise<void>,
    options: ChaosConsumerOptions & {
      /** To be called from the adapter's `onResult` for each processed message (once confirmed). */
      readonly confirmed: (id: string, attempt: number) => void;
      /**
       * The worker's slot (0 to workers − 1), the same across its restarts: where consumers have
       * sessions of their own (MQTT), a restarted worker resumes its slot's.
       */
      readonly slot: number;
    },
  ): Promise<() => Promise<void>>;
}

/** The options every worker passes its adapter. */
export interface ChaosConsumerOptions {
  readonly timeout: Duration;
  readonly lease: Duration;
  readonly maxAttempts: number;
  readonly retryDelay: Duration;
  readonly logger: false;
}

export interface ChaosOptions {
  /** The kit's module (a file URL or path), bundled with each worker process's entry. */
  readonly kit: string;
  readonly messages?: number;
  readonly workers?: number;
  /** Share of messages published a second time. @default 0.25 */
  readonly duplicates?: number;
  /** Messages that always throw. @default 3 */
  readonly poison?: number;
  /** Messages that SIGKILL every run of theirs (dead-lettered once their runs are used up). @default 1 */
  readonly killers?: number;
  /** Share of first runs that SIGKILL their process before their effect. @default 0.03 */
  readonly killRate?: number;
  /** Share of first runs that throw. @default 0.15 */
  readonly throwRate?: number;
  readonly timeoutMs?: number;
}

export interface ChaosReport {
  readonly published: number;
  readonly killsLanded: number;
  readonly throws: number;
  readonly lost: string[];
  /**
   * Messages whose effect happened twice where nothing explains it: the first effect's run was
   * confirmed, or its process was never killed. A bug.
   */
  readonly doubled: string[];
  /**
   * Messages whose effect happened twice because a SIGKILL (of another run in the same process)
   * landed between the first effect and its confirm: at-least-once's one window, which only an
   * effect fenced by the attempt or written in the store's transaction closes (docs/consumers.md).
   */
  readonly doubledByKill: string[];
  readonly poisonInLedger: string[];
  /** The distinct ids in the dead letters, sorted. */
  readonly deadLettered: string[];
  /**
   * Good messages dead-lettered as a killer message's collateral: every process that ran them was
   * SIGKILLed, none of their runs confirmed, their claims spent (2 × maxAttempts never ended). Kept
   * in the broker's dead-letter facility for an operator, so not lost, even with no effect.
   */
  readonly deadByKill: string[];
  /** Dead letters in all (a message dead-lettered twice: its copy landed and its ack was killed). */
  readonly deadLetters: number;
  /** The messages that always throw or always kill, sorted. */
  readonly poison: string[];
  readonly processes: number;
}

const WORKER = fileURLToPath(new URL('./chaos-worker.ts', import.meta.url));
/** Messages a consumer process runs at once, in every kit (a SIGKILL cuts at most the others in flight). */
export const IN_FLIGHT = 8;
export const CONSUMER_OPTIONS: ChaosConsumerOptions = {
  timeout: '2s',
  lease: '3s',
  maxAttempts: 3,
  retryDelay: '100ms',
  logger: false,
};

export async function runChaos(kit: ChaosKit, options: ChaosOptions): Promise<ChaosReport> {
  const prefix = `oo_chaos_${kit.name}_${randomBytes(4).toString('hex')}`;
  const n = options.messages ?? Math.round(150 * CHAOS_SIZE);
  const poison = [
    ...Array.from({ length: options.poison ?? 3 }, (_, i) => `poison-${i}`),
    ...Array.from({ length: options.killers ?? 1 }, (_, i) => `killer-${i}`),
  ];
  const ids = [...Array.from({ length: n }, (_, i) => `m-${i}`), ...poison];
  const again = ids.filter((_, i) => i % Math.round(1 / (options.duplicates ?? 0.25)) === 0);
  const db = new pg.Client({ connectionString: servers.postgres });
  await db.connect();
  const ledger = `${prefix}_ledger`;
  await db.query(
    `CREATE TABLE ${ledger} (seq bigserial, at timestamptz NOT NULL DEFAULT clock_timestamp(), id text NOT NULL, attempt int NOT NULL, kind text NOT NULL, pid int NOT NULL)`,
  );
  await kit.setup(prefix);
  const env = {
    ...process.env,
    CHAOS_PREFIX: prefix,
    CHAOS_LEDGER: ledger,
    CHAOS_KILL_RATE: String(options.killRate ?? 0.03),
    CHAOS_THROW_RATE: String(options.throwRate ?? 0.15),
  };
  // The worker and the kit as one bundle (support/bundle.ts), started with plain node: every
  // restart after a SIGKILL costs a fraction of tsx's CPU.
  const entry = await bundledRun(
    WORKER,
    'consumeChaos',
    options.kit.startsWith('file:') ? fileURLToPath(options.kit) : options.kit,
  );
  const children = new Set<ChildProcess>();
  let stopping = false;
  let processes = 0;
  let killed = 0;
  const killedPids = new Set<number>();
  const start = (slot: number) => {
    processes++;
    const child = spawn(process.execPath, ['--enable-source-maps', entry], {
      env: { ...env, CHAOS_SLOT: String(slot) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.add(child);
    child.on('exit', (_code, signal) => {
      children.delete(child);
      if (signal === 'SIGKILL' && !stopping) {
        killed++;
        if (child.pid !== undefined) killedPids.add(child.pid);
      }
      if (!stopping) start(slot);
    });
  };
  try {
    for (let slot = 0; slot < (options.workers ?? 3); slot++) start(slot);
    // Half first, then the copies with the other half, while the first half is being worked on.
    const half = Math.ceil(ids.length / 2);
    await kit.publish(prefix, ids.slice(0, half));
    await kit.publish(prefix, [...again, ...ids.slice(half)]);
    const deadline = Date.now() + (options.timeoutMs ?? 120_000);
    for (;;) {
      const { rows } = await db.query<{ id: string }>(
        `SELECT DISTINCT id FROM ${ledger} WHERE kind = 'effect'`,
      );
      const ran = new Set(rows.map((r) => r.id));
      const dead = new Set(await kit.deadLettered(prefix));
      // Settled: every poison message dead-lettered, every good one run or dead-lettered (the
      // verdict below says which dead letters are explained).
      const settled = poison.every((id) => dead.has(id)) && ids.every((id) => ran.has(id) || dead.has(id));
      if (settled || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // Let any late redelivery land (a copy, a retry) before the verdict.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  } finally {
    stopping = true;
    await Promise.all(
      [...children].map(
        (child) =>
          new Promise<void>((resolve) => {
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 10_000).unref();
          }),
      ),
    );
  }
  try {
    const dead = await kit.deadLettered(prefix);
    const { rows } = await db.query<{ id: string; kind: string; n: number }>(
      `SELECT id, kind, count(*)::int AS n FROM ${ledger} GROUP BY id, kind`,
    );
    const effects = new Map(rows.filter((r) => r.kind === 'effect').map((r) => [r.id, r.n]));
    // Each double explained or not by its first run. Explained only when that run's process was
    // SIGKILLed before its confirm: no confirmed row of that run, and none of a later run of the
    // same process either (its confirms go out in order on one store connection: a later run
    // confirmed means this one's confirm had gone out before). Anything else is a bug.
    const { rows: firsts } = await db.query<{ id: string; pid: number; unconfirmed: boolean }>(
      `SELECT f.id, f.pid, NOT EXISTS (
           SELECT 1 FROM ${ledger} e JOIN ${ledger} c ON c.kind = 'confirmed' AND c.id = e.id AND c.attempt = e.attempt AND c.pid = e.pid
           WHERE e.kind = 'effect' AND e.pid = f.pid AND (e.id = f.id OR e.at > f.at + interval '100 milliseconds')
         ) AS unconfirmed
       FROM (SELECT DISTINCT ON (id) id, attempt, pid, at FROM ${ledger}
             WHERE kind = 'effect' AND id = ANY($1) ORDER BY id, seq) f`,
      [[...effects].filter(([, count]) => count > 1).map(([id]) => id)],
    );
    const explained = (f: (typeof firsts)[number]) => f.unconfirmed && killedPids.has(f.pid);
    // A good message dead-lettered is explained only as the collateral of a killer message: its
    // claims never ended (settle.ts's `exhausted`) because every process that ran it was SIGKILLed:
    // no run of it was confirmed, and each of its runs that left a row ran in a killed process.
    const deadIds = [...new Set(dead)];
    const { rows: runsOfDead } = await db.query<{ id: string; kind: string; pid: number }>(
      `SELECT id, kind, pid FROM ${ledger} WHERE id = ANY($1)`,
      [deadIds.filter((id) => !poison.includes(id))],
    );
    const byKill = new Set(
      deadIds.filter(
        (id) =>
          !poison.includes(id) &&
          runsOfDead.every((r) => r.id !== id || (r.kind !== 'confirmed' && killedPids.has(r.pid))),
      ),
    );
    const throws = rows.filter((r) => r.kind === 'throw').reduce((sum, r) => sum + r.n, 0);
    return {
      published: ids.length + again.length,
      killsLanded: killed,
      throws,
      // Lost: a good message with no effect that is not in the dead letters as a killer's collateral.
      lost: ids.filter((id) => !poison.includes(id) && !effects.has(id) && !byKill.has(id)),
      doubled: firsts.filter((f) => !explained(f)).map((f) => f.id),
      doubledByKill: firsts.filter(explained).map((f) => f.id),
      poisonInLedger: poison.filter((id) => effects.has(id)),
      deadLettered: deadIds.filter((id) => !byKill.has(id)).sort(),
      deadByKill: [...byKill].sort(),
      deadLetters: dead.length,
      poison: [...poison].sort(),
      processes,
    };
  } finally {
    if (process.env.CHAOS_KEEP) console.log(`chaos: ledger kept in ${ledger}`);
    else await db.query(`DROP TABLE IF EXISTS ${ledger}`).catch(() => {});
    await db.end();
    await kit.teardown(prefix).catch(() => {});
  }
}

/** One line for the test's log. */
export function chaosSummary(label: string, r: ChaosReport): string {
  return `${label}: ${r.published} published (with copies), ${r.processes} processes, ${r.killsLanded} SIGKILLs landed, ${r.throws} throws; lost ${r.lost.length}, doubled ${r.doubled.length} (and ${r.doubledByKill.length} by a SIGKILL between effect and confirm), dead-lettered ${r.deadLettered.length} of ${r.poison.length} poison (${r.deadLetters} dead letters; ${r.deadByKill.length} good ones beside a killer, every run of theirs SIGKILLed)`;
}

/**
 * The chaos suite of one broker: its server probed (failing in CI when down), one run, and the
 * verdict every adapter must meet. `kitModule` is the kit's file, loaded by each worker process.
 */
export async function chaosSuite(options: {
  readonly label: string;
  readonly server: readonly [name: string, url: string, probe: () => Promise<unknown>];
  readonly kit: ChaosKit;
  readonly kitModule: URL;
  readonly adapter: string;
  readonly deadLetters: string;
}): Promise<void> {
  const [name, url, probe] = options.server;
  if (!(await reachable(name, url, probe))) return;
  describe(`${options.adapter} under SIGKILLs, throws and duplicates`, () => {
    it(`runs every message once, loses none, dead-letters the poison ones (${options.deadLetters})`, async () => {
      const r = await runChaos(options.kit, { kit: options.kitModule.href });
      console.log(chaosSummary(options.label, r));
      assert.ok(r.killsLanded > 0, 'consumers were SIGKILLed mid-handler');
      assert.ok(r.throws > 0, 'handlers threw');
      assert.deepEqual(r.lost, [], 'messages lost');
      assert.deepEqual(r.doubled, [], 'effects doubled with no SIGKILL between the effect and its confirm');
      assert.ok(
        r.doubledByKill.length <= r.killsLanded * (IN_FLIGHT - 1),
        `${r.doubledByKill.length} doubles for ${r.killsLanded} kills of ${IN_FLIGHT} in flight`,
      );
      assert.deepEqual(r.poisonInLedger, []);
      assert.deepEqual(
        r.deadLettered,
        r.poison,
        'the poison and killer messages are dead-lettered, and no good message but a killed one',
      );
      assert.ok(
        r.deadByKill.length <= r.killsLanded,
        `${r.deadByKill.length} good dead-lettered beside a killer`,
      );
    });
  });
}
