/**
 * Any sender id maps to one valid key, the same on every store, and distinct ids never share one:
 * a fast-check property over arbitrary strings (NUL bytes, lone surrogates, megabytes, `~`) through
 * once() against all five stores on their real servers. FUZZ_RUNS sets the runs (default 300 over
 * all stores, a fifth per store).
 *
 * Before keys were canonical this failed: PostgreSQL refused a NUL byte and ids over ~2.7 KB (503 on
 * every retry, for ever), MySQL threw on keys over 64 KB, and `evt_\ud800` / `evt_\udbff` were one
 * key on Redis, PostgreSQL and MySQL but two on the memory store and SQLite.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import type { Store } from '../src/core/types.js';
import { once } from '../src/once.js';
import { memoryStore } from '../src/stores/memory.js';
import { mysqlStore } from '../src/stores/mysql.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import { sqliteStore } from '../src/stores/sqlite.js';
import { reachable, servers } from './support/servers.js';
import { openSqlite } from './support/sqlite-client.js';

const RUNS = Math.max(10, Math.floor(Number(process.env.FUZZ_RUNS ?? 300) / 5));
const run = randomBytes(4).toString('hex');
const table = `oo_keys_${run}`;

/** Strings of arbitrary UTF-16 code units (lone surrogates and NUL included), short and long. */
const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 300 })
    .map((units) => String.fromCharCode(...units)),
  fc.constantFrom(
    '',
    '~',
    '~sha256:x',
    'evt_\ud800',
    'evt_\udbff',
    'a\u0000b',
    'x'.repeat(200),
    'x'.repeat(201),
  ),
  fc.integer({ min: 2_000, max: 70_000 }).map((n) => 'k'.repeat(n)),
);

interface Target {
  name: string;
  open: () => Promise<{ store: Store; close: () => Promise<void> }>;
}

const dir = mkdtempSync(join(tmpdir(), 'oo-keys-'));
const targets: Target[] = [
  { name: 'memory', open: async () => ({ store: memoryStore(), close: async () => {} }) },
  {
    name: 'sqlite',
    open: async () => {
      const db = openSqlite(join(dir, 'keys.db'));
      return { store: sqliteStore({ client: db.client, table }), close: async () => void db.close() };
    },
  },
];

const redisUp = await reachable('Redis (keys property)', servers.redis, async () => {
  const c = await createClient({ url: servers.redis }).connect();
  await c.quit();
});
if (redisUp)
  targets.push({
    name: 'redis',
    open: async () => {
      const client = await createClient({ url: servers.redis, disableOfflineQueue: true })
        .on('error', () => {})
        .connect();
      return {
        store: redisStore({ client, prefix: `oo-keys-${run}:` }),
        close: async () => {
          // The records carry the default retention (3 days): delete this run's own.
          for await (const keys of client.scanIterator({ MATCH: `oo-keys-${run}:*`, COUNT: 1000 })) {
            if (keys.length > 0) await client.unlink(keys);
          }
          await client.quit();
        },
      };
    },
  });

const pgPool = new pg.Pool({ connectionString: servers.postgres, max: 4 });
const pgUp = await reachable('PostgreSQL (keys property)', servers.postgres, () => pgPool.query('SELECT 1'));
if (pgUp)
  targets.push({
    name: 'postgres',
    open: async () => ({ store: postgresStore({ client: pgPool, table }), close: async () => {} }),
  });

const myPool = mysql.createPool({ uri: servers.mysql, connectionLimit: 4 });
const myUp = await reachable('MySQL (keys property)', servers.mysql, () => myPool.query('SELECT 1'));
if (myUp)
  targets.push({
    name: 'mysql',
    open: async () => ({ store: mysqlStore({ client: myPool, table }), close: async () => {} }),
  });

after(async () => {
  if (pgUp) await pgPool.query(`DROP TABLE IF EXISTS "${table}", "${table}_versions"`);
  await pgPool.end();
  if (myUp) await myPool.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_versions\``);
  await myPool.end();
  rmSync(dir, { recursive: true, force: true });
});

describe('keys: any string is one valid key, distinct strings distinct keys, on every store', () => {
  for (const target of targets) {
    it(`${target.name}: ${RUNS} pairs of arbitrary ids`, async () => {
      const { store, close } = await target.open();
      let n = 0;
      try {
        await fc.assert(
          fc.asyncProperty(anyString, anyString, async (a, b) => {
            fc.pre(a !== b);
            // A fresh namespace per pair: the ids themselves stay arbitrary at the end of the key.
            const ns = `${run}:${n++}:`;
            const work = () => 'done';
            const first = await once(store, ns + a, work, { logger: false });
            assert.equal(first.outcome, 'processed', 'a is a valid key');
            const other = await once(store, ns + b, work, { logger: false });
            assert.equal(other.outcome, 'processed', 'b is not mistaken for a');
            const again = await once(store, ns + a, work, { logger: false });
            assert.equal(again.outcome, 'duplicate', 'a maps to the same key again');
          }),
          { numRuns: RUNS },
        );
        // The stores themselves take any string too: your own record(`order:${id}`) calls.
        await fc.assert(
          fc.asyncProperty(anyString, anyString, async (a, b) => {
            fc.pre(a !== b);
            const ns = `${run}:direct:${n++}:`;
            assert.deepEqual(await store.record(ns + a, { retentionMs: 60_000 }), { duplicate: false });
            const claim = await store.claim(ns + b, { leaseMs: 60_000 });
            assert.equal(claim.status, 'acquired', 'b is not mistaken for a');
            if (claim.status === 'acquired') {
              assert.equal(claim.lease.key, ns + b, 'the lease handle keeps the key as given');
              assert.equal(await store.confirm(claim.lease, { retentionMs: 60_000 }), true);
            }
            assert.equal((await store.inspect(ns + a))?.state, 'completed');
            assert.deepEqual(await store.record(ns + a, { retentionMs: 60_000 }), { duplicate: true });
            assert.equal(await store.advance(ns + a, 1), true);
          }),
          { numRuns: Math.ceil(RUNS / 2) },
        );
        // The two ids UTF-8 stores used to merge, and a megabyte, by name.
        for (const [a, b] of [
          ['evt_\ud800', 'evt_\udbff'],
          ['m'.repeat(1024 * 1024), `${'m'.repeat(1024 * 1024 - 1)}n`],
        ] as const) {
          const ns = `${run}:named:${n++}:`;
          assert.equal((await once(store, ns + a, () => 1, { logger: false })).outcome, 'processed');
          assert.equal((await once(store, ns + b, () => 1, { logger: false })).outcome, 'processed');
        }
      } finally {
        await close();
      }
    });
  }
});
