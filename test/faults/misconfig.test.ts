/**
 * Permanent misconfiguration is not an outage. Each case makes the condition for real on a real
 * server (a role without privileges, a missing table with autoCreate off, a wrong password, a
 * database that does not exist, a read-only file, a Redis ACL user without a command) and checks the
 * store throws a StoreMisconfiguredError with its own code and a message naming the cause and the
 * fix, never the wrong hint; and that a transient fault (a closed port, a stopped server) still reads
 * `store_unavailable`, pointing at the server, not at tables or autoCreate.
 */
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import pg from 'pg';
import postgres from 'postgres';
import { createClient } from 'redis';
import {
  type MisconfigurationCode,
  StoreMisconfiguredError,
  StoreUnavailableError,
} from '../../src/errors.js';
import { createReceiver, type DeliveryResult, hmac } from '../../src/index.js';
import { mysqlMigration, mysqlStore } from '../../src/stores/mysql.js';
import { type PostgresClient, postgresMigration, postgresStore } from '../../src/stores/postgres.js';
import { type RedisClientLike, redisStore } from '../../src/stores/redis.js';
import { sqliteMigration, sqliteStore } from '../../src/stores/sqlite.js';
import { type PgInstance, pgBinaries, startPgInstance } from '../support/pg-instance.js';
import { redisBinaries, startRedisServer, type TestServer } from '../support/redis-cluster.js';
import { reachable, servers } from '../support/servers.js';

const run = randomBytes(4).toString('hex');
const LEASE = { leaseMs: 60_000 };

/** A port nothing listens on: connecting to it is refused at once. */
const CLOSED_PORT = 1;

/**
 * Checks a misconfiguration: its class, code and status, that the message names the cause (`cause`)
 * and the fix (`fix`), and that it says none of `wrong` (hints that belong to other faults).
 */
function misconfigured(
  code: MisconfigurationCode,
  cause: RegExp,
  fix: RegExp | RegExp[],
  wrong: RegExp[] = [],
): (err: unknown) => true {
  return (err: unknown) => {
    assert.ok(err instanceof StoreMisconfiguredError, `expected StoreMisconfiguredError, got ${String(err)}`);
    assert.ok(err instanceof StoreUnavailableError, 'still a StoreUnavailableError: callers fail closed');
    assert.equal(err.code, code, err.message);
    assert.equal(err.status, 503);
    assert.match(err.message, /^onceonly: /);
    assert.match(err.message, cause);
    for (const f of [fix].flat()) assert.match(err.message, f);
    for (const w of [/leave autoCreate on/, /retry later/i, ...wrong]) assert.doesNotMatch(err.message, w);
    assert.ok(err.cause !== undefined, 'the driver error is the cause');
    return true;
  };
}

/** Checks a transient fault: store_unavailable, pointing at the server and not at tables or autoCreate. */
function transient(cause: RegExp): (err: unknown) => true {
  return (err: unknown) => {
    assert.ok(err instanceof StoreUnavailableError, `expected StoreUnavailableError, got ${String(err)}`);
    assert.ok(!(err instanceof StoreMisconfiguredError), `not a misconfiguration: ${err.message}`);
    assert.equal(err.code, 'store_unavailable');
    assert.equal(err.status, 503);
    assert.match(err.message, cause);
    assert.match(err.message, /check that the server is running and reachable/);
    assert.doesNotMatch(err.message, /table|autoCreate|migration|privilege|password/i);
    return true;
  };
}

// -------------------------------------------------------------------------------------------------
// PostgreSQL, through pg and postgres.js.

interface PgDriver {
  name: string;
  open(url: string): { client: PostgresClient; end(): Promise<void> };
}

const pgDrivers: PgDriver[] = [
  {
    name: 'pg',
    open(url) {
      const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: 10_000 });
      pool.on('error', () => {});
      return { client: pool, end: () => pool.end() };
    },
  },
  {
    name: 'postgres.js',
    open(url) {
      const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
      return { client: sql, end: () => sql.end({ timeout: 5 }) };
    },
  },
];

/** The URL with another user, password, database or port. */
function withUrl(
  base: string,
  change: { user?: string; password?: string; database?: string; port?: number },
) {
  const u = new URL(base);
  if (change.user !== undefined) u.username = change.user;
  if (change.password !== undefined) u.password = change.password;
  if (change.database !== undefined) u.pathname = `/${change.database}`;
  if (change.port !== undefined) u.port = String(change.port);
  return u.toString();
}

const pgUp = await reachable('PostgreSQL (misconfiguration)', servers.postgres, async () => {
  const probe = new pg.Client({ connectionString: servers.postgres });
  await probe.connect();
  await probe.end();
});

if (pgUp) {
  describe('PostgreSQL store misconfiguration (shared server)', () => {
    const admin = new pg.Pool({ connectionString: servers.postgres, max: 2 });
    const role = `oo_mc_${run}`;
    const noLogin = `oo_mc_nologin_${run}`;
    const migrated = `oo_mc_migrated_${run}`;
    const dropped: string[] = [];
    before(async () => {
      await admin.query(`CREATE ROLE ${role} LOGIN`);
      await admin.query(`CREATE ROLE ${noLogin} NOLOGIN`);
      // Tables made by the owner; the role gets no privilege on them. Nor may it create tables in
      // public: PostgreSQL 15 and later grant CREATE there to the database owner only.
      await admin.query(postgresMigration(migrated));
    });
    after(async () => {
      for (const t of [migrated, ...dropped]) {
        await admin.query(`DROP TABLE IF EXISTS "${t}", "${t}_versions"`);
      }
      await admin.query(`DROP OWNED BY ${role}`).catch(() => {});
      await admin.query(`DROP ROLE IF EXISTS ${role}`);
      await admin.query(`DROP ROLE IF EXISTS ${noLogin}`);
      await admin.end();
    });

    for (const driver of pgDrivers) {
      const use = async (url: string, body: (client: PostgresClient) => Promise<void>) => {
        const { client, end } = driver.open(url);
        try {
          await body(client);
        } finally {
          await end();
        }
      };

      it(`a role that does not exist is store_auth_failed (${driver.name}, SQLSTATE 28000)`, async () => {
        await use(withUrl(servers.postgres, { user: `oo_nobody_${run}` }), async (client) => {
          const store = postgresStore({ client, table: migrated });
          await assert.rejects(
            store.claim('k', LEASE),
            misconfigured(
              'store_auth_failed',
              /SQLSTATE 28000.*role "oo_nobody_[0-9a-f]+" does not exist/,
              /check the user name and password/,
              [/table|autoCreate|reachable/i],
            ),
          );
        });
      });

      it(`a role that may not log in is store_auth_failed (${driver.name}, SQLSTATE 28000)`, async () => {
        await use(withUrl(servers.postgres, { user: noLogin }), async (client) => {
          const store = postgresStore({ client, table: migrated, autoCreate: false });
          await assert.rejects(
            store.claim('k', LEASE),
            misconfigured('store_auth_failed', /is not permitted to log in/, /LOGIN/, [
              /table|autoCreate|reachable/i,
            ]),
          );
        });
      });

      it(`a database that does not exist is store_unknown_database (${driver.name}, SQLSTATE 3D000)`, async () => {
        await use(withUrl(servers.postgres, { database: `oo_nodb_${run}` }), async (client) => {
          for (const autoCreate of [true, false]) {
            const store = postgresStore({ client, table: migrated, autoCreate });
            await assert.rejects(
              store.claim('k', LEASE),
              misconfigured(
                'store_unknown_database',
                /SQLSTATE 3D000.*database "oo_nodb_[0-9a-f]+" does not exist/,
                /check the database name/,
                [/table|autoCreate|reachable|password/i],
              ),
            );
          }
        });
      });

      it(`a role without privileges on the tables is store_permission_denied (${driver.name}, SQLSTATE 42501)`, async () => {
        await use(withUrl(servers.postgres, { user: role }), async (client) => {
          const store = postgresStore({ client, table: migrated });
          await assert.rejects(
            store.claim('k', LEASE),
            misconfigured(
              'store_permission_denied',
              /SQLSTATE 42501.*permission denied for table oo_mc_migrated_/,
              new RegExp(`GRANT SELECT, INSERT, UPDATE, DELETE ON "${migrated}", "${migrated}_versions" TO`),
              [/autoCreate|reachable|password/i],
            ),
          );
        });
      });

      it(`a role that may not create the missing tables is store_permission_denied (${driver.name}, autoCreate on)`, async () => {
        const table = `oo_mc_nocreate_${driver.name.replace(/\W/g, '')}_${run}`;
        dropped.push(table);
        await use(withUrl(servers.postgres, { user: role }), async (client) => {
          const store = postgresStore({ client, table });
          await assert.rejects(
            store.ready(),
            misconfigured(
              'store_permission_denied',
              /SQLSTATE 42501.*permission denied for schema public/,
              [new RegExp(`postgresMigration\\('${table}'\\)`), /CREATE on the schema/],
              [/reachable|password/i],
            ),
          );
        });
      });

      it(`missing tables with autoCreate off are store_missing_table (${driver.name}, SQLSTATE 42P01)`, async () => {
        const table = `oo_mc_missing_${run}`;
        await use(servers.postgres, async (client) => {
          const store = postgresStore({ client, table, autoCreate: false });
          for (const call of [() => store.claim('k', LEASE), () => store.advance('e', 1)]) {
            await assert.rejects(
              call(),
              misconfigured(
                'store_missing_table',
                new RegExp(`SQLSTATE 42P01.*"${table}"`),
                [new RegExp(`postgresMigration\\('${table}'\\)`), /turn autoCreate on/, /autoCreate is off/],
                [/reachable|privilege|password/i],
              ),
            );
          }
        });
      });

      it(`a table in a schema that does not exist is store_missing_table (${driver.name}, SQLSTATE 3F000)`, async () => {
        const schema = `oo_mc_noschema_${run}`;
        await use(servers.postgres, async (client) => {
          const store = postgresStore({ client, table: `${schema}.keys` });
          await assert.rejects(
            store.claim('k', LEASE),
            misconfigured(
              'store_missing_table',
              new RegExp(`SQLSTATE 3F000.*schema "${schema}" does not exist`),
              new RegExp(`CREATE SCHEMA ${schema}`),
              [/reachable|privilege|password|turn autoCreate on/i],
            ),
          );
        });
      });

      it(`tables dropped after the store created them are store_missing_table (${driver.name}, autoCreate on)`, async () => {
        const table = `oo_mc_dropped_${driver.name.replace(/\W/g, '')}_${run}`;
        dropped.push(table);
        await use(servers.postgres, async (client) => {
          const store = postgresStore({ client, table });
          assert.equal((await store.claim('a', LEASE)).status, 'acquired');
          await admin.query(`DROP TABLE "${table}", "${table}_versions"`);
          await assert.rejects(
            store.claim('b', LEASE),
            misconfigured(
              'store_missing_table',
              /SQLSTATE 42P01/,
              [/dropped after this process created them/, new RegExp(`postgresMigration\\('${table}'\\)`)],
              [/reachable|privilege|password|turn autoCreate on/i],
            ),
          );
        });
      });

      it(`a closed port stays store_unavailable and points at the server (${driver.name})`, async () => {
        await use(withUrl(servers.postgres, { port: CLOSED_PORT }), async (client) => {
          for (const autoCreate of [true, false]) {
            const store = postgresStore({ client, table: migrated, autoCreate });
            await assert.rejects(
              store.claim('k', LEASE),
              transient(/^onceonly: PostgreSQL store could not reach the server.*ECONNREFUSED/),
            );
          }
        });
      });
    }
  });

  // Password authentication: the shared server trusts every login from 127.0.0.1 (pg_hba.conf), so
  // a wrong password is tried on a throwaway instance of our own that asks for one.
  let binaries = false;
  try {
    await pgBinaries();
    binaries = true;
  } catch (err) {
    await reachable('initdb and pg_ctl', 'PATH', () => Promise.reject(err));
  }
  if (binaries) {
    describe('PostgreSQL store misconfiguration (own instance with password logins)', () => {
      let instance: PgInstance;
      const role = `oo_mc_pw_${run}`;
      before(async () => {
        instance = await startPgInstance({ password: `admin-${run}` });
        const admin = new pg.Client({ connectionString: instance.url });
        await admin.connect();
        await admin.query(`CREATE ROLE ${role} LOGIN PASSWORD 'right-${run}'`);
        await admin.end();
      });
      after(async () => {
        await instance?.destroy();
      });

      for (const driver of pgDrivers) {
        it(`a wrong password is store_auth_failed (${driver.name}, SQLSTATE 28P01)`, async () => {
          const { client, end } = driver.open(withUrl(instance.url, { user: role, password: 'wrong' }));
          try {
            const store = postgresStore({ client });
            await assert.rejects(
              store.claim('k', LEASE),
              misconfigured(
                'store_auth_failed',
                new RegExp(`SQLSTATE 28P01.*password authentication failed for user "${role}"`),
                /check the user name and password/,
                [/table|autoCreate|reachable/i],
              ),
            );
          } finally {
            await end();
          }
        });
      }
    });
  }
}

// -------------------------------------------------------------------------------------------------
// MySQL / MariaDB, through mysql2.

const myUp = await reachable('MySQL/MariaDB (misconfiguration)', servers.mysql, async () => {
  const probe = await mysql.createConnection(servers.mysql);
  await probe.end();
});

if (myUp) {
  describe('MySQL store misconfiguration', () => {
    const admin = mysql.createPool({ uri: servers.mysql, connectionLimit: 2, multipleStatements: true });
    const database = new URL(servers.mysql).pathname.slice(1);
    const tables: string[] = [];
    const table = (label: string) => {
      const name = `oo_mc_${label}_${run}`;
      tables.push(name, `${name}_versions`);
      return name;
    };
    const users: string[] = [];
    /** A user with a password and the grants given (none by default), dropped at the end. */
    const user = async (label: string, grants: string[] = []) => {
      const name = `oo_mc_${label}_${run}`;
      users.push(name);
      await admin.query(`CREATE USER '${name}'@'%' IDENTIFIED BY 'right-${run}'`);
      for (const grant of grants) await admin.query(`GRANT ${grant} TO '${name}'@'%'`);
      return name;
    };
    const pools: mysql.Pool[] = [];
    const open = (url: string) => {
      const pool = mysql.createPool({ uri: url, connectionLimit: 1 });
      pools.push(pool);
      return pool;
    };
    const migrated = table('migrated');
    before(async () => {
      await admin.query(mysqlMigration(migrated));
    });
    after(async () => {
      for (const pool of pools) await pool.end();
      for (const name of users) await admin.query(`DROP USER IF EXISTS '${name}'@'%'`);
      for (const t of tables) await admin.query(`DROP TABLE IF EXISTS \`${t}\``);
      await admin.end();
    });

    it('a wrong password or an unknown user is store_auth_failed (1045)', async () => {
      const name = await user('auth', [`SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.* `]);
      for (const [who, password] of [
        [name, 'wrong'],
        [`oo_mc_nobody_${run}`, 'wrong'],
      ] as const) {
        const store = mysqlStore({
          client: open(withUrl(servers.mysql, { user: who, password })),
          table: migrated,
        });
        await assert.rejects(
          store.claim('k', LEASE),
          misconfigured(
            'store_auth_failed',
            new RegExp(`ER_ACCESS_DENIED(?:_NO_PASSWORD)?_ERROR.*Access denied for user '${who}'`),
            /check the user name and password/,
            [/table|autoCreate|reachable/i],
          ),
        );
      }
    });

    it('a user without any grant is store_permission_denied (1044)', async () => {
      const name = await user('nogrants');
      const client = open(withUrl(servers.mysql, { user: name, password: `right-${run}` }));
      for (const autoCreate of [true, false]) {
        const store = mysqlStore({ client, table: migrated, autoCreate });
        await assert.rejects(
          store.claim('k', LEASE),
          misconfigured(
            'store_permission_denied',
            new RegExp(`ER_DBACCESS_DENIED_ERROR.*to database '${database}'`),
            new RegExp(`SELECT, INSERT, UPDATE, DELETE ON \`${migrated}\``, 'i'),
            [/reachable|password|autoCreate is off/i],
          ),
        );
      }
    });

    it('a user who may only read the tables is store_permission_denied (1142)', async () => {
      const name = await user('readonly', [
        `SELECT ON \`${database}\`.\`${migrated}\``,
        `SELECT ON \`${database}\`.\`${migrated}_versions\``,
      ]);
      const store = mysqlStore({
        client: open(withUrl(servers.mysql, { user: name, password: `right-${run}` })),
        table: migrated,
      });
      await assert.rejects(
        store.claim('k', LEASE),
        misconfigured(
          'store_permission_denied',
          /ER_TABLEACCESS_DENIED_ERROR.*INSERT command denied/,
          new RegExp(
            `GRANT SELECT, INSERT, UPDATE, DELETE ON \`${migrated}\` TO that user, and the same ON \`${migrated}_versions\``,
          ),
          [/reachable|password|autoCreate|mysqlMigration/i],
        ),
      );
    });

    it('a user who may read only some columns is store_permission_denied (1143)', async () => {
      const t = table('columns');
      await admin.query(mysqlMigration(t));
      const name = await user('columns', [
        `SELECT (id), INSERT, UPDATE, DELETE ON \`${database}\`.\`${t}\``,
        `SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.\`${t}_versions\``,
      ]);
      const store = mysqlStore({
        client: open(withUrl(servers.mysql, { user: name, password: `right-${run}` })),
        table: t,
      });
      // A free key is one INSERT; the held key must be read, and SELECT covers one column only.
      assert.equal((await store.claim('k', LEASE)).status, 'acquired');
      await assert.rejects(
        store.claim('k', LEASE),
        misconfigured('store_permission_denied', /ER_COLUMNACCESS_DENIED_ERROR/, /GRANT SELECT, INSERT/, [
          /reachable|password|autoCreate/i,
        ]),
      );
    });

    it('a user who may not create the missing tables is store_permission_denied (1142, autoCreate on)', async () => {
      const t = table('nocreate');
      const name = await user('nocreate', [`SELECT, INSERT, UPDATE, DELETE ON \`${database}\`.*`]);
      const store = mysqlStore({
        client: open(withUrl(servers.mysql, { user: name, password: `right-${run}` })),
        table: t,
      });
      await assert.rejects(
        store.ready(),
        misconfigured(
          'store_permission_denied',
          /ER_TABLEACCESS_DENIED_ERROR.*CREATE command denied/,
          [new RegExp(`mysqlMigration\\('${t}'\\)`), /CREATE on the database/],
          [/reachable|password/i],
        ),
      );
    });

    it('missing tables with autoCreate off are store_missing_table (1146)', async () => {
      const t = `oo_mc_missing_${run}`;
      const store = mysqlStore({ client: admin, table: t, autoCreate: false });
      for (const call of [() => store.claim('k', LEASE), () => store.advance('e', 1)]) {
        await assert.rejects(
          call(),
          misconfigured(
            'store_missing_table',
            new RegExp(`ER_NO_SUCH_TABLE.*${t}`),
            [new RegExp(`mysqlMigration\\('${t}'\\)`), /turn autoCreate on/, /autoCreate is off/],
            [/reachable|privilege|password/i],
          ),
        );
      }
    });

    it('tables dropped after the store created them are store_missing_table (1146, autoCreate on)', async () => {
      const t = table('dropped');
      const store = mysqlStore({ client: admin, table: t });
      assert.equal((await store.claim('a', LEASE)).status, 'acquired');
      await admin.query(`DROP TABLE \`${t}\`, \`${t}_versions\``);
      await assert.rejects(
        store.claim('b', LEASE),
        misconfigured(
          'store_missing_table',
          /ER_NO_SUCH_TABLE/,
          [/dropped after this process created them/, new RegExp(`mysqlMigration\\('${t}'\\)`)],
          [/reachable|privilege|password|turn autoCreate on/i],
        ),
      );
    });

    it('a database that does not exist is store_unknown_database (1049)', async () => {
      const missing = `oo_mc_nodb_${run}`;
      // In the connection settings.
      const store = mysqlStore({
        client: open(withUrl(servers.mysql, { database: missing })),
        table: migrated,
      });
      await assert.rejects(
        store.claim('k', LEASE),
        misconfigured(
          'store_unknown_database',
          new RegExp(`ER_BAD_DB_ERROR.*Unknown database '${missing}'`),
          /check the database name/,
          [/reachable|password|autoCreate|privilege/i],
        ),
      );
      // In the table option, where autoCreate creates the tables.
      const qualified = mysqlStore({ client: admin, table: `${missing}.keys` });
      await assert.rejects(
        qualified.claim('k', LEASE),
        misconfigured('store_unknown_database', /ER_BAD_DB_ERROR/, /check the database name/, [
          /reachable|password|privilege/i,
        ]),
      );
    });

    it('a closed port stays store_unavailable and points at the server', async () => {
      const client = open(withUrl(servers.mysql, { port: CLOSED_PORT }));
      for (const autoCreate of [true, false]) {
        const store = mysqlStore({ client, table: migrated, autoCreate });
        await assert.rejects(
          store.claim('k', LEASE),
          transient(/^onceonly: MySQL store could not reach the server.*ECONNREFUSED/),
        );
      }
    });
  });
}

// -------------------------------------------------------------------------------------------------
// SQLite, through better-sqlite3.

describe('SQLite store misconfiguration', () => {
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-misconfig-'));
  const open: Database.Database[] = [];
  const db = (file: string, options?: Database.Options) => {
    const d = new Database(file, options);
    open.push(d);
    return d;
  };
  /** A database file with the store's tables, made by a connection of its own, in WAL mode. */
  const migratedFile = (name: string) => {
    const file = join(dir, name);
    const owner = new Database(file);
    owner.pragma('journal_mode = WAL');
    owner.exec(sqliteMigration());
    owner.close();
    return file;
  };
  after(() => {
    for (const d of open) if (d.open) d.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a database opened read-only is store_permission_denied (SQLITE_READONLY)', async () => {
    const file = migratedFile('readonly.db');
    for (const autoCreate of [true, false]) {
      const store = sqliteStore({ client: db(file, { readonly: true }), autoCreate });
      await assert.rejects(
        store.claim('k', LEASE),
        misconfigured(
          'store_permission_denied',
          /SQLITE_READONLY.*attempt to write a readonly database/,
          [/read-only/, /readonly: true/, /writable/],
          [/autoCreate|reachable|migration|password/i],
        ),
      );
    }
    // Without the tables too: creating them is a write.
    const empty = join(dir, 'readonly-empty.db');
    new Database(empty).close();
    await assert.rejects(
      sqliteStore({ client: db(empty, { readonly: true }) }).ready(),
      misconfigured('store_permission_denied', /SQLITE_READONLY/, /readonly: true/),
    );
  });

  it('a file this process may not write is store_permission_denied (chmod 0444)', async () => {
    const file = migratedFile('chmod.db');
    chmodSync(file, 0o444);
    if (process.getuid?.() !== 0) {
      const store = sqliteStore({ client: db(file) });
      await assert.rejects(
        store.claim('k', LEASE),
        misconfigured('store_permission_denied', /SQLITE_READONLY/, /writable/, [/autoCreate|migration/i]),
      );
      return;
    }
    // Root writes a file whatever its mode: the same claim runs in a child that loads its modules as
    // root, then drops to the unprivileged user \`nobody\`, which reads the file but may not write it.
    // The child reads nothing of the checkout after the drop, so a checkout in a 0700 directory works.
    chmodSync(dir, 0o755);
    const script = `
      import Database from 'better-sqlite3';
      import { sqliteStore } from ${JSON.stringify(new URL('../../src/stores/sqlite.ts', import.meta.url).pathname)};
      new Database(':memory:').close(); // loads the native addon while the checkout is readable
      process.setgid(65534);
      process.setuid(65534);
      const store = sqliteStore({ client: new Database(${JSON.stringify(file)}) });
      try { await store.claim('k', { leaseMs: 60000 }); console.log(JSON.stringify({ uid: process.getuid(), ok: true })); }
      catch (e) { console.log(JSON.stringify({ uid: process.getuid(), name: e.name, code: e.code, message: e.message })); }
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: new URL('../..', import.meta.url).pathname,
      env: { ...process.env, TSX_TSCONFIG_PATH: undefined },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(child.status, 0, `the child ran: ${child.stderr}`);
    const out = JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as {
      uid?: number;
      name?: string;
      code?: string;
      message?: string;
    };
    assert.equal(out.uid, 65534, 'the claim ran as nobody');
    assert.equal(out.name, 'StoreMisconfiguredError', child.stdout);
    assert.equal(out.code, 'store_permission_denied');
    assert.match(out.message ?? '', /SQLITE_READONLY/);
    assert.match(out.message ?? '', /writable/);
  });

  it('missing tables with autoCreate off are store_missing_table', async () => {
    for (const [file, table] of [
      [':memory:', undefined],
      [join(dir, 'empty.db'), 'webhook_keys'],
    ] as const) {
      const store = sqliteStore({ client: db(file), table, autoCreate: false });
      const name = table ?? 'onceonly';
      for (const call of [() => store.claim('k', LEASE), () => store.advance('e', 1)]) {
        await assert.rejects(
          call(),
          misconfigured(
            'store_missing_table',
            /SQLITE_ERROR.*no such table/,
            [
              new RegExp(`"${name}" and "${name}_versions"`),
              new RegExp(`sqliteMigration\\(${table ? `'${table}'` : ''}\\)`),
              /turn autoCreate on/,
              /autoCreate is off/,
            ],
            [/reachable|read-only|password/i],
          ),
        );
      }
    }
  });

  it('tables dropped after the store created them are store_missing_table (autoCreate on)', async () => {
    const client = db(join(dir, 'dropped.db'));
    const store = sqliteStore({ client });
    assert.equal((await store.claim('a', LEASE)).status, 'acquired');
    client.exec('DROP TABLE onceonly; DROP TABLE onceonly_versions');
    await assert.rejects(
      store.claim('b', LEASE),
      misconfigured(
        'store_missing_table',
        /no such table/,
        [/dropped after this process created them/, /sqliteMigration\(\)/],
        [/reachable|read-only|turn autoCreate on/i],
      ),
    );
  });

  it('a schema that is not attached is store_unknown_database (autoCreate on)', async () => {
    const store = sqliteStore({ client: db(':memory:'), table: 'archive.keys' });
    await assert.rejects(
      store.claim('k', LEASE),
      misconfigured('store_unknown_database', /SQLITE_ERROR.*unknown database "?archive/, /ATTACH DATABASE/, [
        /reachable|read-only|autoCreate/i,
      ]),
    );
  });

  it('a database file deleted after it was opened is store_unknown_database (SQLITE_READONLY_DBMOVED)', async () => {
    const gone = join(dir, 'gone');
    mkdirSync(gone);
    const client = db(join(gone, 'moved.db'));
    client.exec('CREATE TABLE probe (a)');
    rmSync(gone, { recursive: true });
    await assert.rejects(
      sqliteStore({ client }).claim('k', LEASE),
      misconfigured(
        'store_unknown_database',
        /SQLITE_READONLY_DBMOVED/,
        /moved or deleted after it was opened/,
        [/reachable|autoCreate|readonly: true/i],
      ),
    );
  });

  it('a database whose WAL file cannot be opened is store_unknown_database (SQLITE_CANTOPEN)', async () => {
    // Running as root, no file mode stops SQLite: a directory where its -wal file must go does.
    const file = migratedFile('cantopen.db');
    mkdirSync(`${file}-wal`);
    await assert.rejects(
      sqliteStore({ client: db(file) }).claim('k', LEASE),
      misconfigured('store_unknown_database', /SQLITE_CANTOPEN/, /its directory exists/, [
        /reachable|autoCreate|readonly: true/i,
      ]),
    );
  });

  it('a write lock held past the busy timeout stays store_unavailable and blames neither tables nor autoCreate', async () => {
    const file = migratedFile('busy.db');
    const holder = db(file);
    holder.prepare('BEGIN IMMEDIATE').run();
    try {
      const store = sqliteStore({ client: db(file), busyTimeout: 20, autoCreate: false });
      await assert.rejects(store.claim('k', LEASE), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError && !(err instanceof StoreMisconfiguredError));
        assert.equal(err.code, 'store_unavailable');
        assert.match(err.message, /SQLITE_BUSY.*raise busyTimeout/);
        assert.doesNotMatch(err.message, /table|autoCreate|migration|read-only/i);
        return true;
      });
    } finally {
      holder.prepare('ROLLBACK').run();
    }
  });

  it('SQLITE_READONLY_RECOVERY and _CANTLOCK (another connection recovering the WAL) stay store_unavailable, not read-only', async () => {
    // These arise only in a race with another process's WAL recovery, so the driver's own error is
    // raised from the statement the store runs, on a real database.
    const real = db(migratedFile('recovery.db'));
    for (const code of ['SQLITE_READONLY_RECOVERY', 'SQLITE_READONLY_CANTLOCK']) {
      const client = new Proxy(real, {
        get: (target, name, receiver) =>
          name === 'prepare'
            ? () => {
                throw new Database.SqliteError('attempt to write a readonly database', code);
              }
            : Reflect.get(target, name, receiver),
      });
      const store = sqliteStore({ client, autoCreate: false });
      await assert.rejects(store.claim('k', LEASE), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError && !(err instanceof StoreMisconfiguredError), code);
        assert.equal(err.code, 'store_unavailable');
        assert.doesNotMatch(err.message, /permission|read-only database|chmod/i);
        return true;
      });
    }
  });
});

// -------------------------------------------------------------------------------------------------
// Redis, through node-redis and ioredis, on a redis-server of our own: a password for the default
// user, and ACL users that each lack something the store needs.

let redisServer = false;
try {
  await redisBinaries();
  redisServer = true;
} catch (err) {
  await reachable('redis-server binary (misconfiguration)', 'redis-server on PATH', () =>
    Promise.reject(err),
  );
}

if (redisServer) {
  describe('Redis store misconfiguration (own server)', () => {
    let server: TestServer & { stop(): Promise<void> };
    const password = `pw-${run}`;
    const prefix = `oo-mc-${run}:`;
    const users = {
      noScripts: `noscripts_${run}`, // may not run EVAL / EVALSHA
      noSet: `noset_${run}`, // may not run SET, not even from a script
      otherKeys: `otherkeys_${run}`, // may touch only keys under other:
    };
    before(async () => {
      server = await startRedisServer();
      await server.cli('ACL', 'SETUSER', users.noScripts, 'on', `>${password}`, '~*', '+@all', '-@scripting');
      await server.cli('ACL', 'SETUSER', users.noSet, 'on', `>${password}`, '~*', '+@all', '-set');
      await server.cli('ACL', 'SETUSER', users.otherKeys, 'on', `>${password}`, '~other:*', '+@all');
      // Last: from now on the default user needs the password.
      await server.cli('CONFIG', 'SET', 'requirepass', password);
    });
    after(async () => {
      await server?.stop();
    });

    const closers: Array<() => unknown> = [];
    after(async () => {
      for (const close of closers) await Promise.resolve(close()).catch(() => {});
    });
    const url = (user?: string, pass?: string) =>
      `redis://${user !== undefined || pass !== undefined ? `${user ?? ''}:${pass ?? ''}@` : ''}127.0.0.1:${server.port}`;
    /** A node-redis client that fails fast while disconnected instead of queueing. */
    const nodeRedis = async (user?: string, pass?: string) => {
      const client = createClient({ url: url(user, pass), disableOfflineQueue: true });
      client.on('error', () => {});
      await client.connect();
      closers.push(() => client.destroy());
      return client;
    };
    const ioredis = (user?: string, pass?: string) => {
      const client = new Redis({
        port: server.port,
        host: '127.0.0.1',
        ...(user === undefined ? {} : { username: user }),
        ...(pass === undefined ? {} : { password: pass }),
        maxRetriesPerRequest: 0,
      });
      client.on('error', () => {});
      closers.push(() => client.disconnect());
      return client;
    };
    const store = (client: RedisClientLike) => redisStore({ client, prefix, checkEvictionPolicy: false });
    const clients: Array<[string, (user?: string, pass?: string) => Promise<RedisClientLike>]> = [
      ['node-redis', nodeRedis],
      ['ioredis', async (user, pass) => ioredis(user, pass)],
    ];

    for (const [name, connect] of clients) {
      it(`a client without the password is store_auth_failed (${name}, NOAUTH)`, async () => {
        await assert.rejects(
          store(await connect()).claim('k', LEASE),
          misconfigured('store_auth_failed', /NOAUTH/, /give the client the right username and password/, [
            /reachable|ACL SETUSER|prefix/i,
          ]),
        );
      });

      it(`an ACL user without scripting is store_permission_denied (${name}, NOPERM)`, async () => {
        const s = store(await connect(users.noScripts, password));
        // A free key is one plain SET, which this user may run; the confirm is a script.
        const claim = await s.claim(`noscripts-${name}`, LEASE);
        assert.equal(claim.status, 'acquired');
        if (claim.status !== 'acquired') return;
        await assert.rejects(
          s.confirm(claim.lease, { retentionMs: 60_000 }),
          misconfigured(
            'store_permission_denied',
            /NOPERM.*'eval(sha)?' command/,
            [/ACL SETUSER/, /\+evalsha/, new RegExp(`~${prefix}\\*`)],
            [/reachable|password/i],
          ),
        );
      });

      it(`an ACL user without SET is store_permission_denied (${name}, NOPERM, also inside a script)`, async () => {
        const s = store(await connect(users.noSet, password));
        await assert.rejects(
          s.claim('noset', LEASE),
          misconfigured(
            'store_permission_denied',
            /NOPERM.*'set' command/,
            [/ACL SETUSER/, /\+set/],
            [/reachable|password/i],
          ),
        );
        // record() is a script; its SET is refused inside it.
        await assert.rejects(
          s.record('noset', { retentionMs: 60_000 }),
          misconfigured('store_permission_denied', /can't run this command|NOPERM/, /ACL SETUSER/, [
            /reachable|password/i,
          ]),
        );
      });

      it(`an ACL user without the store's keys is store_permission_denied (${name}, NOPERM keys)`, async () => {
        const s = store(await connect(users.otherKeys, password));
        await assert.rejects(
          s.claim('k', LEASE),
          misconfigured(
            'store_permission_denied',
            /NOPERM.*no permissions to access one of the keys/,
            new RegExp(`~${prefix}\\*`),
            [/reachable|password/i],
          ),
        );
      });

      it(`a key holding a value onceonly did not write is store_foreign_value (${name})`, async () => {
        const admin = await connect('default', password);
        const s = store(admin);
        await server.cli('--no-auth-warning', '-a', password, 'SET', `${prefix}k:foreign-${name}`, 'hello');
        await assert.rejects(
          s.claim(`foreign-${name}`, LEASE),
          misconfigured(
            'store_foreign_value',
            /holds a value onceonly did not write/,
            /give redisStore a prefix/,
            [/reachable|password|ACL/i],
          ),
        );
      });
    }

    it('a wrong password is store_auth_failed (ioredis, WRONGPASS)', async () => {
      // node-redis never finishes connect() with a wrong password (it retries the login), so its
      // store never sees one; ioredis connects and answers the first command with the refusal.
      for (const user of [undefined, users.noSet]) {
        await assert.rejects(
          store(ioredis(user, 'wrong')).claim('k', LEASE),
          misconfigured('store_auth_failed', /WRONGPASS/, /give the client the right username and password/, [
            /reachable|ACL SETUSER/i,
          ]),
        );
      }
    });

    it('a server without scripting (EVAL and EVALSHA renamed away, as some proxies do) is store_permission_denied (both clients)', async () => {
      const bare = await startRedisServer([
        '--rename-command',
        'EVALSHA',
        '',
        '--rename-command',
        'EVAL',
        '',
      ]);
      try {
        const probe = createClient({ url: `redis://127.0.0.1:${bare.port}`, disableOfflineQueue: true });
        probe.on('error', () => {});
        await probe.connect();
        closers.push(() => probe.destroy());
        // The fault first: this server really refuses scripts.
        await assert.rejects(probe.sendCommand(['EVAL', 'return 1', '0']), /unknown command/i);
        const io = new Redis({
          port: bare.port,
          lazyConnect: true,
          enableOfflineQueue: false,
          maxRetriesPerRequest: 0,
        });
        io.on('error', () => {});
        await io.connect();
        closers.push(() => io.disconnect());
        for (const client of [probe, io]) {
          const s = store(client);
          // A free key's claim is a plain SET NX; the owner-checked confirm needs a script.
          const claim = await s.claim(`no-scripts-${client === probe ? 'n' : 'i'}`, LEASE);
          assert.equal(claim.status, 'acquired');
          await assert.rejects(
            s.confirm(claim.status === 'acquired' ? claim.lease : (undefined as never), {
              retentionMs: 60_000,
            }),
            misconfigured('store_permission_denied', /unknown command/i, /does not run Lua scripts/, [
              /reachable/i,
            ]),
          );
        }
      } finally {
        await bare.stop();
      }
    });

    it('an error the server answers with stays store_unavailable (OOM)', async () => {
      const admin = await nodeRedis('default', password);
      await admin.configSet('maxmemory', '1');
      try {
        await assert.rejects(store(admin).claim('oom', LEASE), (err: unknown) => {
          assert.ok(err instanceof StoreUnavailableError && !(err instanceof StoreMisconfiguredError));
          assert.equal(err.code, 'store_unavailable');
          assert.match(err.message, /the server answered an error \(OOM/);
          assert.doesNotMatch(err.message, /password|ACL|prefix|reachable/i);
          return true;
        });
      } finally {
        await admin.configSet('maxmemory', '0');
      }
    });

    it('a stopped server stays store_unavailable and points at the server (both clients)', async () => {
      const stores = [store(await nodeRedis('default', password)), store(ioredis('default', password))];
      for (const s of stores)
        assert.equal((await s.claim(`before-stop-${stores.indexOf(s)}`, LEASE)).status, 'acquired');
      await server.stop();
      for (const s of stores) {
        await assert.rejects(
          s.claim('after-stop', LEASE),
          transient(/^onceonly: Redis claim failed: the server could not be reached/),
        );
      }
    });
  });
}

// -------------------------------------------------------------------------------------------------
// The receiver: a misconfigured store is still answered like an outage (fail-closed 503, so the
// provider retries once it is fixed), with the misconfiguration's code in the body.

describe('a receiver over a misconfigured store', () => {
  it('answers 503 store-unavailable with the misconfiguration code, and runs no handler', async () => {
    const secret = `secret-${run}`;
    const outcomes: DeliveryResult[] = [];
    let runs = 0;
    const client = new Database(':memory:');
    const receiver = createReceiver({
      provider: hmac<{ id: string }>({
        name: 'acme',
        secret,
        signatureHeader: 'x-acme-signature',
        signaturePrefix: 'sha256=',
        id: (event) => event.id,
      }),
      store: sqliteStore({ client, autoCreate: false }),
      handler: () => {
        runs++;
      },
      onOutcome: (result) => {
        outcomes.push(result);
      },
    });
    const body = JSON.stringify({ id: 'evt_1' });
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    try {
      const res = await receiver.fetch(
        new Request('http://localhost/webhooks', {
          method: 'POST',
          body,
          headers: { 'x-acme-signature': `sha256=${signature}`, 'content-type': 'application/json' },
        }),
      );
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('onceonly-outcome'), 'store-unavailable');
      assert.ok(res.headers.get('retry-after'), 'Retry-After is set');
      const json = (await res.json()) as { outcome: string; code: string; message: string };
      assert.equal(json.outcome, 'store-unavailable');
      assert.equal(json.code, 'store_missing_table');
      assert.doesNotMatch(
        JSON.stringify(json),
        /onceonly_versions|sqliteMigration/,
        'no store detail leaves',
      );
      assert.equal(runs, 0);
      assert.equal(outcomes[0]?.code, 'store_missing_table');
      assert.ok(outcomes[0]?.error instanceof StoreMisconfiguredError, 'onOutcome gets the error itself');
    } finally {
      client.close();
    }
  });
});

describe('a table created by an older onceonly (no grace_ms column) is store_missing_table, naming the ALTER', () => {
  const fix = [/older onceonly/, /ALTER TABLE .* ADD COLUMN grace_ms BIGINT NOT NULL DEFAULT 0/];
  const wrong = [/reachable/i];

  it('PostgreSQL (SQLSTATE 42703)', async (t) => {
    const pool = new pg.Pool({ connectionString: servers.postgres, max: 2 });
    const table = `oo_mc_old_${run}`;
    t.after(async () => {
      await pool.query(`DROP TABLE IF EXISTS "${table}", "${table}_versions"`);
      await pool.end();
    });
    await pool.query(postgresMigration(table));
    await pool.query(`ALTER TABLE "${table}" DROP COLUMN grace_ms`);
    const store = postgresStore({ client: pool, table });
    await assert.rejects(
      store.claim('k', LEASE),
      misconfigured('store_missing_table', /SQLSTATE 42703.*grace_ms/, fix, wrong),
    );
  });

  it('MySQL (1054)', async (t) => {
    const pool = mysql.createPool({ uri: servers.mysql, connectionLimit: 2, multipleStatements: true });
    const table = `oo_mc_old_${run}`;
    t.after(async () => {
      await pool.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_versions\``);
      await pool.end();
    });
    for (const statement of mysqlMigration(table)
      .split(';')
      .filter((x) => x.trim()))
      await pool.query(statement);
    await pool.query(`ALTER TABLE \`${table}\` DROP COLUMN grace_ms`);
    const store = mysqlStore({ client: pool, table });
    await assert.rejects(
      store.claim('k', LEASE),
      misconfigured('store_missing_table', /ER_BAD_FIELD_ERROR.*grace_ms/, fix, wrong),
    );
  });

  it('SQLite (no such column / has no column named)', async () => {
    const db = new Database(':memory:');
    db.exec(sqliteMigration());
    db.exec('ALTER TABLE "onceonly" DROP COLUMN grace_ms');
    const store = sqliteStore({ client: db });
    await assert.rejects(
      store.claim('k', LEASE),
      misconfigured('store_missing_table', /grace_ms/, fix, wrong),
    );
    db.close();
  });
});
