/**
 * A fault-suite receiver process (forked by fleet.ts under node:cluster): the library's receiver on
 * node:http with a Stripe provider, a real store, and a SQLite ledger shared by every process where
 * each handler run, effect and outcome is written. It can SIGKILL itself at a chosen step of the
 * first attempt of a chosen share of events, and write its effect plainly or together with the
 * dedup row in one transaction (`recordSync(key, { tx })`).
 */

import { createServer } from 'node:http';
import { listenWhenAssigned } from '../../../src/cli/wait.js';
import type { Lease, Store } from '../../../src/lease/types.js';
import { stripe } from '../../../src/providers/stripe.js';
import { toResponse } from '../../../src/receiver/http.js';
import { createReceiver } from '../../../src/receiver/receiver.js';

export type CrashStep = 'claimed' | 'handler' | 'before-confirm' | 'release';

export interface FaultWorkerConfig {
  store: 'redis' | 'postgres' | 'sqlite';
  /** redis:// or postgres:// URL; the SQLite store lives in the ledger file itself. */
  url: string;
  /** Key prefix or table name, unique per run. */
  name: string;
  ledger: string;
  secret: string;
  timeoutMs: number;
  leaseMs: number;
  onStoreError: 'closed' | 'open';
  crash?: { at: CrashStep; rate: number };
  /** 'tx': the effect and `recordSync('effect:' + key, { tx })` commit in one transaction. */
  effect: 'plain' | 'tx';
  /** node-redis's default offline queue (commands wait for the reconnect) instead of failing fast. */
  redisOfflineQueue?: boolean;
  /** How long the handler's work takes, in ms, ±50% at random. @default 2 to 10 ms at random */
  workMs?: number;
}

const config: FaultWorkerConfig = JSON.parse(process.env.ONCEONLY_FAULT_WORKER!);
const Database = (await import('better-sqlite3')).default;
const ledger = new Database(config.ledger);
ledger.pragma('busy_timeout = 20000');
const recordRun = ledger.prepare('INSERT INTO runs (event_id, attempt, pid) VALUES (?, ?, ?)');
const applyEffect = ledger.prepare(
  'INSERT INTO effects (event_id, attempt, pid, degraded) VALUES (?, ?, ?, ?)',
);
const recordOutcome = ledger.prepare(
  'INSERT INTO outcomes (event_id, outcome, status, degraded, attempt, pid) VALUES (?, ?, ?, ?, ?, ?)',
);

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
    const pool = new pg.Pool({ connectionString: config.url, max: 8, connectionTimeoutMillis: 1_000 });
    pool.on('error', () => {});
    const { postgresStore } = await import('../../../src/stores/postgres.js');
    return { store: postgresStore({ client: pool, table: config.name }) };
  }
  const { sqliteStore } = await import('../../../src/stores/sqlite.js');
  const store = sqliteStore({ client: ledger, table: config.name });
  return {
    store,
    recordSync: (key) => store.recordSync(key, { retentionMs: 600_000, tx: ledger }).duplicate,
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

async function crash(waitForWindow: boolean): Promise<never> {
  while (waitForWindow && config.effect === 'plain' && unconfirmed.size > 0) await sleep(1);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

const idOf = (key: string) => key.slice(key.indexOf(':') + 1);
const store: Store = {
  ...opened.store,
  claim: (...a) => opened.store.claim(...a),
  extend: (...a) => opened.store.extend(...a),
  record: (...a) => opened.store.record(...a),
  advance: (...a) => opened.store.advance(...a),
  inspect: (...a) => opened.store.inspect(...a),
  close: () => opened.store.close(),
  async confirm(lease: Lease, o) {
    if (config.crash?.at === 'before-confirm' && lease.attempt === 1 && chosen(idOf(lease.key)))
      await crash(false);
    return opened.store.confirm(lease, o);
  },
  async release(lease: Lease) {
    if (config.crash?.at === 'release' && lease.attempt === 1 && chosen(idOf(lease.key))) await crash(true);
    return opened.store.release(lease);
  },
};

const receiver = createReceiver({
  provider: stripe({ secret: config.secret }),
  store,
  timeout: config.timeoutMs,
  lease: config.leaseMs,
  retention: '10m',
  onStoreError: config.onStoreError,
  handler: async ({ id, key, attempt, signal, lease }) => {
    recordRun.run(id, attempt, process.pid);
    const first = attempt === 1 && lease !== undefined && chosen(id);
    if (first && config.crash?.at === 'claimed') await crash(true);
    // The real work: workMs spread ±50% so that some run is always under way when a fault lands.
    await sleep(config.workMs !== undefined ? config.workMs * (0.5 + Math.random()) : 2 + Math.random() * 8);
    if (first && config.crash?.at === 'handler') await crash(true);
    if (first && config.crash?.at === 'release') throw new Error('fault: the payment API answered 502');
    if (signal.aborted) throw signal.reason;
    if (config.effect === 'tx' && opened.recordSync) {
      // The effect and its dedup row commit together: a crash before confirm cannot double it.
      ledger
        .transaction(() => {
          if (opened.recordSync!(`effect:${key}`)) return;
          applyEffect.run(id, attempt, process.pid, 0);
        })
        .immediate();
    } else {
      applyEffect.run(id, attempt, process.pid, lease === undefined ? 1 : 0);
      unconfirmed.add(ran(id, attempt));
    }
  },
  onOutcome: (result) => {
    if (result.outcome !== 'in-flight' && result.outcome !== 'duplicate')
      unconfirmed.delete(ran(result.id, result.attempt));
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
