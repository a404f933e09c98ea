import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import postgres from 'postgres';
import { reachable, servers } from '../../test/support/servers.js';
import { SCHEMA_TABLES, sqlInboxSchemaSpec } from '../../test/support/sql-inbox-schema.js';
import { checkHealth } from '../core/health.js';
import { runInboxConformance } from '../testing/index.js';
import { postgresInboxMigration, postgresStore } from './postgres.js';

// A table of this run (`<table>_inbox`), created by the first inbox, dropped at the end.
const table = `oo_inbox_${randomBytes(4).toString('hex')}`;

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL', servers.postgres, () => probe.query('SELECT 1'));

if (up) {
  const pool = new pg.Pool({ connectionString: servers.postgres, max: 6 });
  const sql = postgres(servers.postgres, { max: 6, onnotice: () => {} });
  after(async () => {
    for (const t of [table, ...SCHEMA_TABLES.map((name) => `${table}_${name}`)])
      await probe.query(`DROP TABLE IF EXISTS ${t}_inbox, ${t}, ${t}_versions`);
    await probe.end();
    await pool.end();
    await sql.end();
  });

  await runInboxConformance({
    name: 'postgresStore inbox conformance (pg Pool)',
    factory: () => postgresStore({ client: pool, table }).inbox,
    runner: { describe, it },
  });
  await runInboxConformance({
    name: 'postgresStore inbox conformance (postgres.js)',
    factory: () => postgresStore({ client: sql, table }).inbox,
    runner: { describe, it },
  });
  sqlInboxSchemaSpec({
    label: 'postgresStore',
    migrationName: 'postgresInboxMigration',
    migration: postgresInboxMigration,
    apply: async (ddl) => void (await pool.query(ddl)),
    inbox: (t, autoCreate) => postgresStore({ client: pool, table: t, autoCreate }).inbox,
    ready: (t, options) => postgresStore({ client: pool, table: t }).ready(options),
    table: (name) => `${table}_${name}`,
    setColumn: async (t, key, column, value) =>
      void (await pool.query(`UPDATE "${t}_inbox" SET ${column} = $1 WHERE entry_key = $2`, [value, key])),
  });

  describe('postgresStore on postgres.js with a column-name transform', () => {
    for (const [label, transform] of [
      ['postgres.camel', postgres.camel],
      ['postgres.toPascal (every column renamed)', postgres.toPascal],
    ] as const) {
      it(`${label}: the inbox and the store's health read their rows by the names their statements give`, async () => {
        const client = postgres(servers.postgres, { max: 2, onnotice: () => {}, transform });
        try {
          const store = postgresStore({ client, table });
          const inbox = store.inbox;
          const receiver = `tr-${randomBytes(4).toString('hex')}`;
          const key = `${receiver}:evt_1`;
          const body = Buffer.from('{"id":"evt_1"}');
          const input = { key, fingerprint: 'f'.repeat(64), receiver, type: 'thing.done', id: 'evt_1' };
          const accepted = await inbox.accept({
            ...input,
            headers: [['x-a', '1']],
            body,
            receivedAt: new Date(),
          });
          assert.equal(accepted.status, 'accepted');
          assert.equal(
            (await inbox.accept({ ...input, headers: [], body, receivedAt: new Date() })).status,
            'duplicate',
          );
          const [job] = await inbox.take({ limit: 5, leaseMs: 60_000, receiver });
          assert.ok(job, 'the entry was taken');
          assert.equal(job.unreadable, undefined);
          assert.deepEqual(
            [job.key, job.receiver, job.type, job.id, job.lease.attempt],
            [key, receiver, 'thing.done', 'evt_1', 1],
          );
          assert.equal(Buffer.from(job.body).toString(), '{"id":"evt_1"}');
          assert.deepEqual(job.headers, [['x-a', '1']]);
          assert.equal((await inbox.list({ receiver, state: 'processing' }))[0]?.key, key);
          assert.equal(await inbox.complete(job.lease, { retentionMs: 60_000 }), true);
          const seen = await inbox.get(key);
          assert.deepEqual([seen?.state, seen?.attempts, seen?.hasBody], ['completed', 1, true]);
          assert.equal((await inbox.stats({ receiver })).completed, 1);
          const health = await checkHealth(store, { timeoutMs: 5_000, maxClockSkewMs: 60_000, inbox: true });
          assert.ok(
            health.clockSkewMs !== undefined && Number.isFinite(health.clockSkewMs),
            'the clock was read',
          );
          assert.deepEqual(
            health.checks.filter((check) => !check.ok),
            [],
            'the tables were found',
          );
        } finally {
          await client.end();
        }
      });
    }
    it('postgres.camel on a table whose name ends in `_` (camel throws on that name): the store still reads its rows', async () => {
      const client = postgres(servers.postgres, { max: 2, onnotice: () => {}, transform: postgres.camel });
      const t = `${table}_tail_`;
      try {
        const store = postgresStore({ client, table: t });
        const claim = await store.claim('k', { leaseMs: 60_000, fingerprint: 'f'.repeat(64) });
        assert.equal(claim.status, 'acquired');
        const receiver = `tail-${randomBytes(4).toString('hex')}`;
        const accepted = await store.inbox.accept({
          key: `${receiver}:evt_1`,
          fingerprint: 'f'.repeat(64),
          receiver,
          type: 'thing.done',
          id: 'evt_1',
          headers: [],
          body: Buffer.from('{}'),
          receivedAt: new Date(),
        });
        assert.equal(accepted.status, 'accepted');
        const jobs = await store.inbox.take({ limit: 5, leaseMs: 60_000, receiver });
        assert.deepEqual(
          jobs.map((job) => [job.key, job.lease.attempt]),
          [[`${receiver}:evt_1`, 1]],
        );
      } finally {
        await client.end();
        await probe.query(`DROP TABLE IF EXISTS ${t}_inbox, ${t}, ${t}_versions`);
      }
    });
  });

  describe('postgresStore inbox on a big table', () => {
    it('take, purge, stats and list compare due_at with a clock read once, so the index bounds the scan (before, clock_timestamp() was a per-row filter: every idle take read every entry not yet due)', async () => {
      const spy = new pg.Pool({ connectionString: servers.postgres, max: 2 });
      after(() => spy.end());
      const seen: { text: string; values: unknown[] }[] = [];
      const query = spy.query.bind(spy) as (config: { text: string; values?: unknown[] }) => Promise<unknown>;
      (spy as unknown as { query: typeof query }).query = (config) => {
        if (typeof config === 'object' && config !== null && 'text' in config) {
          seen.push({ text: config.text, values: config.values ?? [] });
        }
        return query(config);
      };
      const inbox = postgresStore({ client: spy, table }).inbox;
      const receiver = `big-${randomBytes(4).toString('hex')}`;
      await inbox.take({ limit: 10, leaseMs: 60_000, receiver });
      await inbox.take({ limit: 10, leaseMs: 60_000 });
      await inbox.purge();
      await inbox.stats({ receiver });
      await inbox.list({ receiver, state: 'pending' });
      const statements = seen.filter(
        (s) =>
          /\b(UPDATE|DELETE|SELECT)\b[\s\S]*_inbox"/.test(s.text) && !/to_regclass|CREATE TABLE/.test(s.text),
      );
      assert.ok(
        statements.length >= 5,
        `the inbox statements were seen: ${statements.map((s) => s.text.slice(0, 30)).join(' | ')}`,
      );
      for (const { text, values } of statements) {
        const { rows } = await probe.query(`EXPLAIN ${text}`, values);
        const plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n');
        const perRow = plan.split('\n').filter((line) => /(Filter|Cond):.*clock_timestamp/.test(line));
        assert.deepEqual(perRow, [], `the clock is read per row in:\n${text}\n${plan}`);
      }
    });
  });
} else {
  await probe.end();
}
