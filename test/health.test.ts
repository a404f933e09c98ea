/**
 * `receiver.health()` on real servers: Redis (the shared server, and a throwaway one to make its
 * eviction policy unsafe, freeze it and stop it), PostgreSQL and MySQL/MariaDB (the shared servers:
 * tables present, tables missing, the inbox's table checked for a receiver in inbox mode, and a
 * server that is not running), SQLite files, plus the memory store's probe.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { freePort } from '../src/cli/wait.js';
import { createReceiver, type Duration, hmac, memoryStore, type Store } from '../src/index.js';
import { mysqlStore } from '../src/stores/mysql.js';
import { postgresStore } from '../src/stores/postgres.js';
import { redisStore } from '../src/stores/redis.js';
import { sqliteStore } from '../src/stores/sqlite.js';
import { type RedisInstance, startRedisInstance } from './support/redis-instance.js';
import { reachable, servers } from './support/servers.js';
import { openSqlite } from './support/sqlite-client.js';

const run = randomBytes(4).toString('hex');
let n = 0;
function receiverOn(store: Store, storeTimeout: Duration = '2s', inbox = false) {
  return createReceiver({
    ...(inbox ? { inbox: true } : {}),
    name: `health-${run}-${n++}`,
    provider: hmac({ name: 'acme', secret: 's', signatureHeader: 'x-sig' }),
    store,
    handler: () => {},
    logger: false,
    storeTimeout,
  });
}
const check = (
  report: { checks: readonly { name: string; ok: boolean; detail?: string | undefined }[] },
  name: string,
) => report.checks.find((c) => c.name === name);

// Every server is probed before the first suite is declared: under --test-force-exit (npm test), a
// suite declared after a top-level await was never run (the file ended with the memory suite).
const redisUp = await reachable('Redis (health)', servers.redis, async () => {
  const c = createClient({ url: servers.redis });
  await c.connect();
  await c.quit();
});

const pool = new pg.Pool({ connectionString: servers.postgres, max: 2 });
pool.on('error', () => {});
const pgUp = await reachable('PostgreSQL (health)', servers.postgres, () => pool.query('SELECT 1'));
if (!pgUp) await pool.end();

const mysqlPool = mysql.createPool({ uri: servers.mysql, connectionLimit: 2 });
const mysqlUp = await reachable('MySQL/MariaDB (health)', servers.mysql, () => mysqlPool.query('SELECT 1'));
if (!mysqlUp) await mysqlPool.end();

describe('health() with the memory store', () => {
  it('is reachable at once, with no clock of its own', async () => {
    const report = await receiverOn(memoryStore()).health();
    assert.equal(report.ok, true);
    assert.equal(report.store, 'memory');
    assert.equal(report.clockSkewMs, undefined);
    assert.equal(check(report, 'reachable')?.ok, true);
  });
});

describe('health() with a custom store', () => {
  it('probes a store without health() of its own with a real call: an inspect that fails is unhealthy', async () => {
    // Prepare: a store of the user's own, working, then failing on every call.
    const inner = memoryStore();
    let inspects = 0;
    let failing = false;
    const custom: Store = {
      claim: (k, o) => inner.claim(k, o),
      confirm: (l, o) => inner.confirm(l, o),
      release: (l) => inner.release(l),
      extend: (l, o) => inner.extend(l, o),
      record: (k, o) => inner.record(k, o),
      advance: (e, v) => inner.advance(e, v),
      inspect: async (k) => {
        inspects++;
        if (failing) throw new Error('connection refused');
        return inner.inspect(k);
      },
      close: () => inner.close(),
    };
    const receiver = receiverOn(custom);
    // Act, assess: healthy once it answered, and it was asked.
    const up = await receiver.health();
    assert.equal(up.ok, true);
    assert.equal(up.store, 'custom');
    assert.equal(inspects, 1, 'the store was touched');
    failing = true;
    const down = await receiver.health();
    assert.equal(inspects, 2);
    assert.equal(down.ok, false, 'a store that fails is not healthy');
    assert.match(check(down, 'reachable')?.detail ?? '', /connection refused/);
  });

  it("compares a store's clock with the host's even when the store reports checks of its own", async () => {
    // Prepare: a store with health() whose own checks pass and whose clock is ten minutes ahead.
    const inner = memoryStore();
    const skewed = Object.assign(Object.create(inner) as Store, {
      health: async () => ({
        now: new Date(Date.now() + 600_000),
        checks: [{ name: 'tables', ok: true, detail: 'present' }],
      }),
    });
    // Act
    const report = await receiverOn(skewed).health();
    // Assess: its checks are reported, and the clock fails the whole report.
    assert.equal(check(report, 'tables')?.ok, true);
    assert.equal(check(report, 'clock')?.ok, false);
    assert.ok(report.clockSkewMs !== undefined && report.clockSkewMs > 590_000, String(report.clockSkewMs));
    assert.equal(report.ok, false);
  });
});

if (redisUp) {
  describe('health() with Redis', () => {
    it('the shared server: reachable, its clock within the limit, its eviction policy checked', async () => {
      const client = createClient({ url: servers.redis, disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
      try {
        const store = redisStore({ client, prefix: `onceonly:health:${run}:`, onWarning: () => {} });
        const report = await receiverOn(store).health();
        assert.equal(report.store, 'redis');
        assert.equal(check(report, 'reachable')?.ok, true);
        assert.equal(check(report, 'clock')?.ok, true, JSON.stringify(report));
        assert.ok(report.clockSkewMs !== undefined && Math.abs(report.clockSkewMs) < 2_000);
        assert.ok(check(report, 'maxmemory-policy'));
        assert.ok(report.latencyMs !== undefined && report.latencyMs >= 0);
      } finally {
        await client.quit();
      }
    });

    describe('a throwaway server', () => {
      let redis: RedisInstance;
      let client: ReturnType<typeof createClient>;
      before(async () => {
        redis = await startRedisInstance();
        client = createClient({
          url: redis.url,
          disableOfflineQueue: true,
          socket: { reconnectStrategy: () => 200 },
        });
        client.on('error', () => {});
        await client.connect();
      });
      after(async () => {
        await client.disconnect().catch(() => {});
        await redis.destroy();
      });

      it('an eviction policy that can drop keys makes it unhealthy', async () => {
        const store = redisStore({ client, onWarning: () => {} });
        const receiver = receiverOn(store);
        await redis.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
        assert.equal((await receiver.health()).ok, true);
        await redis.cli('CONFIG', 'SET', 'maxmemory-policy', 'allkeys-lru');
        assert.match(await redis.cli('CONFIG', 'GET', 'maxmemory-policy'), /allkeys-lru/);
        const report = await receiver.health();
        assert.equal(report.ok, false);
        assert.equal(check(report, 'maxmemory-policy')?.ok, false);
        assert.equal(check(report, 'reachable')?.ok, true);
        await redis.cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
      });

      it('an ACL user that may not run scripts makes it unhealthy: the scripts check names the refusal', async () => {
        await redis.cli('ACL', 'SETUSER', 'noscripts', 'on', '>pw', '~*', '+@all', '-evalsha', '-eval');
        const limited = createClient({
          url: redis.url,
          username: 'noscripts',
          password: 'pw',
          disableOfflineQueue: true,
        });
        limited.on('error', () => {});
        await limited.connect();
        try {
          // The refusal is real: the user's own EVALSHA fails.
          await assert.rejects(limited.sendCommand(['EVAL', 'return 1', '0']), /NOPERM|permission/i);
          const report = await receiverOn(redisStore({ client: limited, onWarning: () => {} })).health();
          assert.equal(report.ok, false);
          assert.equal(check(report, 'scripts')?.ok, false);
          assert.match(check(report, 'scripts')?.detail ?? '', /ACL|NOPERM|permission/i);
          assert.equal(check(report, 'reachable')?.ok, true);
          // The server's own user runs them.
          const ok = await receiverOn(redisStore({ client, onWarning: () => {} })).health();
          assert.equal(check(ok, 'scripts')?.ok, true, JSON.stringify(ok));
        } finally {
          await limited.quit();
        }
      });

      it('a frozen server: unhealthy within the timeout', async () => {
        const receiver = receiverOn(redisStore({ client, onWarning: () => {} }));
        const frozen = redis.pause(4_000);
        await new Promise((resolve) => setTimeout(resolve, 100));
        const began = performance.now();
        const report = await receiver.health({ timeout: '500ms' });
        const took = performance.now() - began;
        await frozen;
        assert.equal(report.ok, false);
        assert.equal(check(report, 'reachable')?.ok, false);
        assert.ok(took < 3_000, `answered after ${took} ms`);
      });

      it('a stopped server: unhealthy within the timeout, healthy again once it is back', async () => {
        const receiver = receiverOn(redisStore({ client, onWarning: () => {} }));
        assert.equal((await receiver.health()).ok, true);
        await redis.stop();
        const began = performance.now();
        const report = await receiver.health({ timeout: '1s' });
        assert.ok(performance.now() - began < 3_000);
        assert.equal(report.ok, false);
        assert.equal(report.latencyMs, undefined);
        assert.equal(check(report, 'reachable')?.ok, false);
        await redis.start();
        let back = false;
        for (let i = 0; i < 100 && !back; i++) {
          back = (await receiver.health()).ok;
          if (!back) await new Promise((resolve) => setTimeout(resolve, 200));
        }
        assert.ok(back, 'healthy again after the restart');
      });
    });
  });
}

if (pgUp) {
  describe('health() with PostgreSQL', () => {
    const table = `onceonly_health_${run}`;
    after(async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_versions`);
      await pool.end();
    });

    it('tables present: healthy, with the server clock compared', async () => {
      const store = postgresStore({ client: pool, table });
      await store.ready();
      const report = await receiverOn(store).health();
      assert.equal(report.store, 'postgres');
      assert.equal(report.ok, true, JSON.stringify(report));
      assert.equal(check(report, 'tables')?.ok, true);
      assert.equal(check(report, 'clock')?.ok, true);
    });

    it('tables missing (autoCreate off, no migration run): unhealthy, and health() creates nothing', async () => {
      const missing = `onceonly_health_missing_${run}`;
      const report = await receiverOn(
        postgresStore({ client: pool, table: missing, autoCreate: false }),
      ).health();
      assert.equal(report.ok, false);
      assert.equal(check(report, 'reachable')?.ok, true);
      assert.equal(check(report, 'tables')?.ok, false);
      const { rows } = await pool.query('SELECT to_regclass($1) AS t', [missing]);
      assert.equal(rows[0].t, null);
    });

    it('inbox mode: the inbox table is checked too (autoCreate off: missing is unhealthy)', async () => {
      const box = `onceonly_health_box_${run}`;
      try {
        const creating = postgresStore({ client: pool, table: box });
        await creating.ready();
        const store = postgresStore({ client: pool, table: box, autoCreate: false });
        const receiver = receiverOn(store, '2s', true);
        const before = await receiver.health();
        assert.equal(before.ok, false, JSON.stringify(before));
        assert.match(check(before, 'tables')?.detail ?? '', new RegExp(`missing: "?${box}_inbox`));
        // The same store for a receiver not in inbox mode is healthy: its inbox is not its concern.
        assert.equal((await receiverOn(store).health()).ok, true);
        // With autoCreate on, a table not made yet is named but healthy (made on first use).
        const lazy = await receiverOn(creating, '2s', true).health();
        assert.equal(lazy.ok, true, JSON.stringify(lazy));
        assert.match(check(lazy, 'tables')?.detail ?? '', /not created yet: .*_inbox/);
        await creating.inbox.stats({ receiver: 'x' }); // its first use creates it
        const afterwards = await receiver.health();
        assert.equal(afterwards.ok, true, JSON.stringify(afterwards));
        assert.match(check(afterwards, 'tables')?.detail ?? '', /_inbox/);
      } finally {
        await pool.query(`DROP TABLE IF EXISTS ${box}, ${box}_versions, ${box}_inbox`);
      }
    });

    it('no server running on its port: unhealthy within the timeout', async () => {
      const port = await freePort();
      const down = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/test`, max: 1 });
      down.on('error', () => {});
      try {
        const began = performance.now();
        const report = await receiverOn(postgresStore({ client: down, table })).health({ timeout: '1s' });
        assert.ok(performance.now() - began < 3_000);
        assert.equal(report.ok, false);
        assert.equal(check(report, 'reachable')?.ok, false);
      } finally {
        await down.end();
      }
    });
  });
}

if (mysqlUp) {
  describe('health() with MySQL/MariaDB', () => {
    const table = `onceonly_health_${run}`;
    after(async () => {
      await mysqlPool.query(`DROP TABLE IF EXISTS ${table}, ${table}_versions, ${table}_inbox`);
      await mysqlPool.end();
    });

    it('tables present: healthy, with the server clock compared', async () => {
      const store = mysqlStore({ client: mysqlPool, table });
      await store.ready();
      const report = await receiverOn(store).health();
      assert.equal(report.store, 'mysql');
      assert.equal(report.ok, true, JSON.stringify(report));
      assert.equal(check(report, 'reachable')?.ok, true);
      assert.equal(check(report, 'tables')?.ok, true);
      assert.match(check(report, 'tables')?.detail ?? '', new RegExp(`${table}_versions`));
      assert.equal(check(report, 'clock')?.ok, true);
      assert.ok(
        report.clockSkewMs !== undefined && Math.abs(report.clockSkewMs) < 2_000,
        JSON.stringify(report),
      );
    });

    it('the clock is read whatever the session time zone', async () => {
      const zoned = mysql.createPool({ uri: servers.mysql, connectionLimit: 1 });
      try {
        zoned.on('connection', (conn) => {
          conn.query("SET time_zone = '+09:30'");
        });
        const report = await receiverOn(mysqlStore({ client: zoned, table })).health();
        assert.equal(check(report, 'clock')?.ok, true, JSON.stringify(report));
      } finally {
        await zoned.end();
      }
    });

    it('tables missing (autoCreate off, no migration run): unhealthy, and health() creates nothing', async () => {
      const missing = `onceonly_health_missing_${run}`;
      const report = await receiverOn(
        mysqlStore({ client: mysqlPool, table: missing, autoCreate: false }),
      ).health();
      assert.equal(report.ok, false, JSON.stringify(report));
      assert.equal(check(report, 'reachable')?.ok, true);
      assert.equal(check(report, 'clock')?.ok, true);
      assert.equal(check(report, 'tables')?.ok, false);
      assert.match(check(report, 'tables')?.detail ?? '', new RegExp(`missing: \`${missing}\``));
      const [rows] = await mysqlPool.query(
        'SELECT COUNT(*) AS n FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?',
        [missing],
      );
      assert.equal(Number((rows as { n: number }[])[0]!.n), 0);
    });

    it('inbox mode: the inbox table is checked too (autoCreate off: missing is unhealthy)', async () => {
      const creating = mysqlStore({ client: mysqlPool, table });
      await creating.ready();
      await mysqlPool.query(`DROP TABLE IF EXISTS ${table}_inbox`);
      const receiver = receiverOn(mysqlStore({ client: mysqlPool, table, autoCreate: false }), '2s', true);
      const missing = await receiver.health();
      assert.equal(missing.ok, false, JSON.stringify(missing));
      assert.match(check(missing, 'tables')?.detail ?? '', new RegExp(`missing: \`${table}_inbox\``));
      await creating.inbox.stats({ receiver: 'x' }); // its first use creates it
      const present = await receiver.health();
      assert.equal(present.ok, true, JSON.stringify(present));
    });

    it('autoCreate on and nothing created yet: healthy, the tables named as not created yet', async () => {
      const fresh = `onceonly_health_fresh_${run}`;
      const report = await receiverOn(mysqlStore({ client: mysqlPool, table: fresh })).health();
      assert.equal(report.ok, true, JSON.stringify(report));
      assert.match(check(report, 'tables')?.detail ?? '', /not created yet/);
    });

    it('no server running on its port: unhealthy within the timeout', async () => {
      const port = await freePort();
      const down = mysql.createPool({ uri: `mysql://root@127.0.0.1:${port}/test`, connectionLimit: 1 });
      try {
        const began = performance.now();
        const report = await receiverOn(mysqlStore({ client: down, table })).health({ timeout: '1s' });
        assert.ok(performance.now() - began < 3_000);
        assert.equal(report.ok, false);
        assert.equal(check(report, 'reachable')?.ok, false);
      } finally {
        await down.end();
      }
    });
  });
}

describe('health() with SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-health-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('tables present: healthy, and says its clock is the host own', async () => {
    const db = openSqlite(join(dir, 'ok.db'));
    try {
      const store = sqliteStore({ client: db.client });
      await store.ready();
      const report = await receiverOn(store).health();
      assert.equal(report.store, 'sqlite');
      assert.equal(report.ok, true, JSON.stringify(report));
      assert.equal(check(report, 'tables')?.ok, true);
      assert.equal(report.clockSkewMs, undefined);
      assert.match(check(report, 'clock')?.detail ?? '', /host's own/);
    } finally {
      db.close();
    }
  });

  it('tables missing (autoCreate off): unhealthy, and health() creates nothing', async () => {
    const db = openSqlite(join(dir, 'empty.db'));
    try {
      const report = await receiverOn(sqliteStore({ client: db.client, autoCreate: false })).health();
      assert.equal(report.ok, false, JSON.stringify(report));
      assert.equal(check(report, 'reachable')?.ok, true);
      assert.equal(check(report, 'tables')?.ok, false);
      assert.match(check(report, 'tables')?.detail ?? '', /missing: /);
      assert.equal(
        (db.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n,
        0,
      );
    } finally {
      db.close();
    }
  });

  it('inbox mode: the inbox table is checked too (autoCreate off: missing is unhealthy)', async () => {
    const db = openSqlite(join(dir, 'inbox.db'));
    try {
      const creating = sqliteStore({ client: db.client });
      await creating.ready();
      const receiver = receiverOn(sqliteStore({ client: db.client, autoCreate: false }), '2s', true);
      const missing = await receiver.health();
      assert.equal(missing.ok, false, JSON.stringify(missing));
      assert.match(check(missing, 'tables')?.detail ?? '', /missing: .*_inbox/);
      const lazy = await receiverOn(creating, '2s', true).health();
      assert.equal(lazy.ok, true, JSON.stringify(lazy));
      assert.match(check(lazy, 'tables')?.detail ?? '', /not created yet: .*_inbox/);
      await creating.inbox.stats({ receiver: 'x' }); // its first use creates it
      assert.equal((await receiver.health()).ok, true);
    } finally {
      db.close();
    }
  });

  it('a closed database: unhealthy', async () => {
    const db = openSqlite(join(dir, 'closed.db'));
    const store = sqliteStore({ client: db.client });
    await store.ready();
    const receiver = receiverOn(store);
    db.close();
    const report = await receiver.health();
    assert.equal(report.ok, false);
    assert.equal(check(report, 'reachable')?.ok, false);
  });
});
