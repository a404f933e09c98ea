/**
 * A fault-suite receiver process (forked by fleet.ts under node:cluster): the library's receiver on
 * node:http with a Stripe provider, a real store, and a SQLite ledger shared by every process where
 * each handler run, effect and outcome is written. It can SIGKILL itself at a chosen step of the
 * first attempt of a chosen share of events, and write its effect plainly or together with the
 * dedup row in one transaction (`recordSync(key, { tx })`).
 */

import { createServer } from 'node:http';
import { chargeEvent } from '../../../src/cli/demo/api-effect.js';
import { listenWhenAssigned } from '../../../src/cli/wait.js';
import type { InboxStore } from '../../../src/core/inbox.js';
import type { Lease, Store } from '../../../src/core/types.js';
import { stripe } from '../../../src/providers/stripe.js';
import { toResponse } from '../../../src/receiver/http.js';
import { createReceiver } from '../../../src/receiver/receiver.js';
import { openSqlite } from '../../support/sqlite-client.js';

/**
 * Where the process kills itself. Inbox mode adds two: `accepted`, after the durable accept and
 * before the answer leaves (the provider sees the connection drop); `before-complete`, in a worker
 * after the handler's effect and before the entry is completed. The API effects add two:
 * `after-call`, once the payments API answered and before the step keeps its answer, and
 * `after-step`, once the step returned (the naive handler has no step: both are after its call).
 */
export type CrashStep =
  | 'claimed'
  | 'handler'
  | 'before-confirm'
  | 'release'
  | 'accepted'
  | 'before-complete'
  | 'after-call'
  | 'after-step';

export interface FaultWorkerConfig {
  store: 'redis' | 'postgres' | 'mysql' | 'sqlite' | 'dynamodb';
  /**
   * redis://, postgres:// or mysql:// URL, or a DynamoDB endpoint (http://, the dynalite server the
   * test started); the SQLite store lives in the ledger file itself.
   */
  url: string;
  /** Key prefix or table name, unique per run. */
  name: string;
  ledger: string;
  secret: string;
  timeoutMs: number;
  leaseMs: number;
  onStoreError: 'closed' | 'open';
  crash?: { at: CrashStep; rate: number };
  /**
   * 'tx': the effect and `recordSync('effect:' + key, { tx })` commit in one transaction.
   * 'fenced': the fenced-effect recipe (docs/reliability.md): the event's fence row taken by this
   * attempt in the ledger transaction of the effect; a run that finds the effect already applied
   * by an earlier attempt applies nothing and says so (the `seen` table).
   */
  effect: 'plain' | 'tx' | 'fenced' | 'api' | 'api-naive';
  /**
   * 'api' and 'api-naive' (src/cli/demo/api-effect.ts): the handler first charges the event at the
   * payments API at this URL (inside ctx.step with its idempotency key, or naive: a plain call
   * without a key), then applies the plain effect.
   */
  paymentsUrl?: string;
  /**
   * Inbox mode: every process accepts and also runs a worker (`startWorker`); `inlineMs` makes it
   * hybrid. Retries back off from 50 ms so a run settles in seconds.
   */
  inbox?: { inlineMs?: number; maxAttempts?: number };
  /** node-redis's default offline queue (commands wait for the reconnect) instead of failing fast. */
  redisOfflineQueue?: boolean;
  /** How long the handler's work takes, in ms, ±50% at random. @default 2 to 10 ms at random */
  workMs?: number;
}

const config: FaultWorkerConfig = JSON.parse(process.env.ONCEONLY_FAULT_WORKER!);
// On the suites' SQLite client (test/support/sqlite-client.ts): node:sqlite on Node 22 and 24.
const ledger = openSqlite(config.ledger, { timeout: 20_000 });
const recordRun = ledger.prepare('INSERT INTO runs (event_id, attempt, pid) VALUES (?, ?, ?)');
const applyEffect = ledger.prepare(
  'INSERT INTO effects (event_id, attempt, pid, degraded) VALUES (?, ?, ?, ?)',
);
/**
 * The plain effect, committed only while the run's deadline is a quarter of its length away,
 * checked once the ledger's write lock is held: the signal aborts when the deadline's timer runs,
 * late on a busy host, and a run that ends past its deadline fails and runs again, whatever it
 * committed (as src/cli/worker.ts does, and docs/reliability.md says).
 */
const COMMIT_MARGIN_MS = Math.max(50, Math.floor(config.timeoutMs / 4));
const commitPlain = (id: string | undefined, attempt: number, degraded: number, deadlineAt: number) =>
  ledger.transaction(
    () => {
      if (performance.now() > deadlineAt - COMMIT_MARGIN_MS) return false;
      applyEffect.run(id, attempt, process.pid, degraded);
      return true;
    },
    { immediate: true },
  );
const recordOutcome = ledger.prepare(
  'INSERT INTO outcomes (event_id, outcome, status, degraded, attempt, pid) VALUES (?, ?, ?, ?, ?, ?)',
);
const recordCrash = ledger.prepare('INSERT INTO crashes (event_id, step, pid) VALUES (?, ?, ?)');
// The fence of the fenced-effect recipe: one row per event, taken by the newest attempt.
const takeFence = ledger.prepare(
  `INSERT INTO fence (event_id, attempt, applied) VALUES (?, ?, 0)
   ON CONFLICT (event_id) DO UPDATE SET attempt = excluded.attempt WHERE fence.attempt <= excluded.attempt`,
);
const fenceApplied = ledger.prepare('SELECT applied FROM fence WHERE event_id = ?');
const markApplied = ledger.prepare('UPDATE fence SET applied = 1 WHERE event_id = ?');
const recordSeen = ledger.prepare('INSERT INTO seen (event_id, attempt, pid) VALUES (?, ?, ?)');

async function openStore(): Promise<{ store: Store; recordSync?: (key: string) => boolean }> {
  if (config.store === 'redis') {
    const { createClient } = await import('redis');
    // Fail fast while the server is away (no offline queue, unless asked), reconnect every 100 ms.
    const client = createClient({
      url: config.url,
      disableOfflineQueue: !config.redisOfflineQueue,
      socket: { reconnectStrategy: () => 100, connectTimeout: 1_000 },
    });
    client.on('error', () => {});
    await client.connect();
    const { redisStore } = await import('../../../src/stores/redis.js');
    return { store: redisStore({ client, prefix: `${config.name}:` }) };
  }
  if (config.store === 'postgres') {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({ connectionString: config.url, max: 4, connectionTimeoutMillis: 1_000 });
    pool.on('error', () => {});
    const { postgresStore } = await import('../../../src/stores/postgres.js');
    return { store: postgresStore({ client: pool, table: config.name }) };
  }
  if (config.store === 'mysql') {
    const mysql = (await import('mysql2/promise')).default;
    const pool = mysql.createPool({ uri: config.url, connectionLimit: 8, connectTimeout: 1_000 });
    const { mysqlStore } = await import('../../../src/stores/mysql.js');
    return { store: mysqlStore({ client: pool, table: config.name }) };
  }
  if (config.store === 'dynamodb') {
    const { dynamoClient } = await import('../../support/dynalite.js');
    const { createDynamoDbTable, dynamoDbStore } = await import('../../../src/stores/dynamodb.js');
    const client = dynamoClient(config.url);
    // Every process makes sure of the run's table (a no-op once it is there).
    await createDynamoDbTable({ client, table: config.name, ttl: false });
    // One host's clock for every process: a small skew bound.
    return { store: dynamoDbStore({ client, table: config.name, maxClockSkew: 100 }) };
  }
  const { sqliteStore } = await import('../../../src/stores/sqlite.js');
  const store = sqliteStore({ client: ledger.client, table: config.name });
  return {
    store,
    recordSync: (key) => store.recordSync(key, { retentionMs: 600_000, tx: ledger.client }).duplicate,
  };
}

const opened = await openStore();

/** Whether this event is one whose first attempt crashes: every (1 / rate)-th event of the run. */
function chosen(id: string | undefined): boolean {
  if (!config.crash || !id) return false;
  const n = Number(id.slice(id.lastIndexOf('_') + 1));
  return Number.isInteger(n) && n % Math.max(1, Math.round(1 / config.crash.rate)) === 3;
}

// Effects written whose claim is not confirmed yet (plain effects only). A kill meant for another
// step waits until no other handler of this process is in that window, so it tests the claim alone.
// Keyed by event and attempt, cleared only by the delivery that ran the handler (an in-flight copy of
// the same event answered meanwhile must not open the window early).
const unconfirmed = new Set<string>();
const ran = (id: string | undefined, attempt: number | undefined) => `${id}#${attempt}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function crash(waitForWindow: boolean, id: string | undefined, step: CrashStep): Promise<never> {
  while (waitForWindow && plainEffect && unconfirmed.size > 0) await sleep(1);
  // Written (synchronously, durably) before the kill: the test asserts the kill landed first.
  recordCrash.run(id ?? null, step, process.pid);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

/** The effects applied as a plain ledger row (after the API's charge, for the API effects). */
const plainEffect = config.effect !== 'tx' && config.effect !== 'fenced';

const idOf = (key: string) => key.slice(key.indexOf(':') + 1);
/** `before-complete`: dies before completes that hold a chosen entry's first attempt are sent. */
async function crashBeforeComplete(leases: readonly Lease[]): Promise<void> {
  if (config.crash?.at !== 'before-complete') return;
  const mark = leases.find((l) => l.attempt === 1 && chosen(idOf(l.key)));
  if (mark) await crash(false, idOf(mark.key), 'before-complete');
}
const inner = opened.store.inbox;
const inbox: InboxStore | undefined = inner && {
  ...inner,
  take: (...a) => inner.take(...a),
  extend: (...a) => inner.extend(...a),
  retry: (...a) => inner.retry(...a),
  bury: (...a) => inner.bury(...a),
  stats: (...a) => inner.stats(...a),
  list: (...a) => inner.list(...a),
  get: (...a) => inner.get(...a),
  requeue: (...a) => inner.requeue(...a),
  purge: (...a) => inner.purge(...a),
  async accept(input, o) {
    const accepted = await inner.accept(input, o);
    // Durable now; the answer has not left: the provider will see the connection drop.
    if (config.crash?.at === 'accepted' && accepted.status === 'accepted' && chosen(input.id))
      await crash(true, input.id, 'accepted');
    return accepted;
  },
  async complete(lease: Lease, o) {
    await crashBeforeComplete([lease]);
    return inner.complete(lease, o);
  },
  // The receiver sends the completes of several runs together (batchedComplete): a batch holding a
  // chosen entry dies before it is sent, as a lone complete does, so the kill lands on every store
  // whatever the batching (a MariaDB hybrid run once saw no kill: its completes all went in batches).
  ...(inner?.completeMany && {
    async completeMany(leases: readonly Lease[], o: Parameters<InboxStore['complete']>[1]) {
      await crashBeforeComplete(leases);
      return inner.completeMany!(leases, o);
    },
  }),
};
const store: Store = {
  ...opened.store,
  claim: (...a) => opened.store.claim(...a),
  extend: (...a) => opened.store.extend(...a),
  record: (...a) => opened.store.record(...a),
  advance: (...a) => opened.store.advance(...a),
  inspect: (...a) => opened.store.inspect(...a),
  close: () => opened.store.close(),
  inbox,
  async confirm(lease: Lease, o) {
    if (config.crash?.at === 'before-confirm' && lease.attempt === 1 && chosen(idOf(lease.key)))
      await crash(false, idOf(lease.key), 'before-confirm');
    return opened.store.confirm(lease, o);
  },
  async release(lease: Lease) {
    if (config.crash?.at === 'release' && lease.attempt === 1 && chosen(idOf(lease.key)))
      await crash(true, idOf(lease.key), 'release');
    return opened.store.release(lease);
  },
};

const receiver = createReceiver({
  provider: stripe({ secret: config.secret }),
  store,
  // Every outcome is written to the ledger and counted; the chaos would flood the test's output.
  logger: false,
  timeout: config.timeoutMs,
  lease: config.leaseMs,
  retention: '10m',
  onStoreError: config.onStoreError,
  inbox: config.inbox && {
    inline: config.inbox.inlineMs,
    maxAttempts: config.inbox.maxAttempts ?? 10,
    backoff: { initial: '50ms', max: '500ms' },
  },
  handler: async (ctx) => {
    const deadlineAt = performance.now() + config.timeoutMs;
    const { id, key, attempt, signal, lease } = ctx;
    recordRun.run(id, attempt, process.pid);
    const first = attempt === 1 && lease !== undefined && chosen(id);
    if (first && config.crash?.at === 'claimed') await crash(true, id, 'claimed');
    // The real work: workMs spread ±50% so that some run is always under way when a fault lands.
    await sleep(config.workMs !== undefined ? config.workMs * (0.5 + Math.random()) : 2 + Math.random() * 8);
    if (first && config.crash?.at === 'handler') await crash(true, id, 'handler');
    if (first && config.crash?.at === 'release') throw new Error('fault: the payment API answered 502');
    if (signal.aborted) throw signal.reason;
    if (config.effect === 'api' || config.effect === 'api-naive') {
      const at = config.crash?.at;
      const kill = !first
        ? undefined
        : at === 'after-call'
          ? 'answer-read'
          : at === 'after-step'
            ? 'after-charge'
            : undefined;
      await chargeEvent(ctx, config.effect, config.paymentsUrl!, id!, kill, () => crash(true, id, at!));
      // The call may outlast the deadline: the run then fails (and is retried) without its ledger effect.
      if (signal.aborted) throw signal.reason;
    }
    if (config.effect === 'tx' && opened.recordSync) {
      // The effect and its dedup row commit together: a crash before confirm cannot double it.
      ledger.transaction(
        () => {
          if (opened.recordSync!(`effect:${key}`)) return;
          applyEffect.run(id, attempt, process.pid, 0);
        },
        { immediate: true },
      );
    } else if (config.effect === 'fenced') {
      ledger.transaction(
        () => {
          if (Number(takeFence.run(id, attempt).changes) === 0)
            throw new Error(`fenced out: a newer attempt than ${attempt} owns ${id}`);
          if ((fenceApplied.get(id) as { applied: number }).applied === 1) {
            recordSeen.run(id, attempt, process.pid); // an earlier attempt applied it: nothing to do
            return;
          }
          applyEffect.run(id, attempt, process.pid, 0);
          markApplied.run(id);
        },
        { immediate: true },
      );
    } else {
      if (!commitPlain(id, attempt, lease === undefined ? 1 : 0, deadlineAt)) {
        // Too near the deadline to commit and end before it: the run ends at its deadline, uncommitted.
        await sleep(config.timeoutMs);
        throw new Error('ended at its deadline before its effect');
      }
      unconfirmed.add(ran(id, attempt));
    }
  },
  onOutcome: (result) => {
    if (result.outcome !== 'in-flight' && result.outcome !== 'duplicate') {
      const k = ran(result.id, result.attempt);
      // A confirm (or complete) that failed goes on in the background for the rest of the lease: a
      // kill meanwhile is a crash before confirm, not the step under test. The window stays open.
      if (result.degraded === 'confirm-failed') setTimeout(() => unconfirmed.delete(k), config.leaseMs);
      else unconfirmed.delete(k);
    }
    recordOutcome.run(
      result.id ?? null,
      result.outcome,
      result.status,
      result.degraded ?? null,
      result.attempt ?? null,
      process.pid,
    );
  },
});

const server = createServer(async (req, res) => {
  const result = await receiver.receive({ rawBody: req, headers: req.headers, url: req.url });
  const response = toResponse(result);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
});
server.keepAliveTimeout = 5_000;
listenWhenAssigned(server);
// Inbox mode: this process runs entries too (any process may take any entry).
if (config.inbox) receiver.startWorker({ concurrency: 4, pollInterval: '100ms' });
