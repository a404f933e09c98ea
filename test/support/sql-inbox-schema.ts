/**
 * The inbox table of a SQL store, one spec for the three: with `autoCreate: false` and no table a
 * call fails with `store_missing_table` naming the store's inbox migration; once the exported
 * migration ran (twice: it is idempotent), the inbox works without creating anything. And its
 * edges: a row damaged outside onceonly is handed out as unreadable (never failing the take), and a
 * receiver name is refused past the one length every SQL store keeps whole.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { ConfigError, StoreMisconfiguredError } from '../../src/core/errors.js';
import type { InboxStore } from '../../src/core/inbox.js';
import { storeKey } from '../../src/core/keys.js';

/** The names this suite passes to `spec.table()`: a store's test drops each of them afterwards. */
export const SCHEMA_TABLES = ['missing', 'migrated', 'damaged', 'hashed', 'names', 'ready'] as const;

export interface SqlInboxSchemaSpec {
  /** The store, in test names. */
  label: string;
  /** The exported function's name, which the missing-table error must name. */
  migrationName: string;
  migration(table: string): string;
  /** Runs a migration's text (several statements). */
  apply(ddl: string): Promise<void>;
  inbox(table: string, autoCreate: boolean): InboxStore;
  /** The store's `ready(options)` (autoCreate on) over `table`. */
  ready(table: string, options?: { inbox?: boolean }): Promise<void>;
  /** A table name unique to this run and case. */
  table(name: (typeof SCHEMA_TABLES)[number]): string;
  /** Writes a column of the entry stored under `key` in `<table>_inbox` as is (damage from outside). */
  setColumn(table: string, key: string, column: 'meta' | 'full_key', value: string | null): Promise<void>;
}

export function sqlInboxSchemaSpec(spec: SqlInboxSchemaSpec): void {
  const entry = (key: string) => ({
    key,
    receiver: 'schema',
    fingerprint: 'f'.repeat(64),
    body: new Uint8Array([0, 1, 2, 255]),
    headers: [['content-type', 'application/octet-stream']] as [string, string][],
    receivedAt: new Date(),
  });

  describe(`${spec.label} inbox table`, () => {
    it('with autoCreate off and no table, fails with store_missing_table and names the inbox migration', async () => {
      const inbox = spec.inbox(spec.table('missing'), false);
      await assert.rejects(inbox.accept(entry('schema:evt_1')), (err: unknown) => {
        assert.ok(err instanceof StoreMisconfiguredError, String(err));
        assert.equal(err.code, 'store_missing_table');
        assert.match(err.message, new RegExp(`${spec.migrationName}\\('`));
        return true;
      });
    });

    it('store.ready() creates the claims tables only; ready({ inbox: true }) the inbox table too, before any inbox call', async () => {
      const table = spec.table('ready');
      const missing = (err: unknown) =>
        err instanceof StoreMisconfiguredError && err.code === 'store_missing_table';
      await spec.ready(table);
      await assert.rejects(spec.inbox(table, false).accept(entry('schema:evt_r0')), missing);
      await spec.ready(table, { inbox: true });
      assert.equal((await spec.inbox(table, false).accept(entry('schema:evt_r1'))).status, 'accepted');
    });

    it("the exported migration (run twice: idempotent) makes a table the inbox uses as it is; a take without a receiver takes every receiver's", async () => {
      const table = spec.table('migrated');
      await spec.apply(spec.migration(table));
      await spec.apply(spec.migration(table));
      const inbox = spec.inbox(table, false);
      assert.equal((await inbox.accept(entry('schema:evt_1'))).status, 'accepted');
      const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: 'schema' });
      assert.deepEqual([...job!.body], [0, 1, 2, 255]);
      assert.equal(await inbox.complete(job!.lease, { retentionMs: 60_000 }), true);
      // A take without a receiver takes the due entries of every receiver.
      await inbox.accept({ ...entry('schema:evt_2'), receiver: 'one' });
      await inbox.accept({ ...entry('other:evt_3'), receiver: 'two' });
      const all = await inbox.take({ limit: 10, leaseMs: 60_000 });
      assert.deepEqual(all.map((j) => j.receiver).sort(), ['one', 'two']);
      assert.deepEqual(
        { ...(await inbox.stats()), oldestDueMs: 0 },
        { pending: 0, processing: 2, completed: 1, dead: 0, scheduled: 0, oldestDueMs: 0 },
      );
    });

    it('a row damaged outside onceonly (meta not JSON, or gone) is handed out as unreadable and can be buried; the rest of the take runs', async () => {
      const table = spec.table('damaged');
      const inbox = spec.inbox(table, true);
      for (const id of ['bad', 'gone', 'shape', 'good']) {
        assert.equal(
          (await inbox.accept({ ...entry(`damaged:${id}`), receiver: 'damaged' })).status,
          'accepted',
        );
      }
      await spec.setColumn(table, 'damaged:bad', 'meta', '[[["content-type", "application/json"]], nul');
      await spec.setColumn(table, 'damaged:gone', 'meta', null);
      await spec.setColumn(table, 'damaged:shape', 'meta', '{"headers": []}');
      assert.equal((await inbox.get('damaged:bad'))?.delivery, undefined, 'shown, without its delivery');
      const jobs = await inbox.take({ limit: 10, leaseMs: 60_000, receiver: 'damaged' });
      const byKey = new Map(jobs.map((j) => [j.key, j]));
      assert.deepEqual([...byKey.keys()].sort(), [
        'damaged:bad',
        'damaged:gone',
        'damaged:good',
        'damaged:shape',
      ]);
      assert.match(byKey.get('damaged:bad')!.unreadable ?? '', /^the stored entry could not be read back: /);
      assert.match(byKey.get('damaged:gone')!.unreadable ?? '', /body or meta is gone/);
      assert.match(byKey.get('damaged:shape')!.unreadable ?? '', /meta is not \[headers, url, receivedAt/);
      const good = byKey.get('damaged:good')!;
      assert.equal(good.unreadable, undefined);
      assert.deepEqual([...good.body], [0, 1, 2, 255]);
      // Its lease is the row's: the owner-checked bury lands.
      const bad = byKey.get('damaged:bad')!;
      assert.equal(bad.lease.attempt, 1);
      assert.equal(await inbox.bury(bad.lease, { error: bad.unreadable! }), true);
      assert.equal((await inbox.get('damaged:bad'))?.state, 'dead');
      assert.match((await inbox.get('damaged:bad'))?.lastError ?? '', /could not be read back/);
    });

    it('an unreadable row under a hashed key (the key as given damaged too) is buried by its owner, not taken again every lease', async () => {
      const table = spec.table('hashed');
      const inbox = spec.inbox(table, true);
      const key = `hashed:${'x'.repeat(600)}`; // past 512 characters: stored as its hash
      assert.equal((await inbox.accept({ ...entry(key), receiver: 'hashed' })).status, 'accepted');
      await spec.setColumn(table, storeKey(key), 'full_key', 'not JSON');
      const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: 'hashed' });
      assert.match(job?.unreadable ?? '', /could not be read back/);
      assert.equal(job!.key, storeKey(key), 'named by the stored key');
      // Before, the bury ran the stored key through storeKey again and found no row.
      assert.equal(await inbox.bury(job!.lease, { error: job!.unreadable! }), true, 'buried by its owner');
      const { processing, dead } = await inbox.stats({ receiver: 'hashed' });
      assert.deepEqual({ processing, dead }, { processing: 0, dead: 1 });
    });

    it('a receiver name of 191 characters is kept whole; a longer one is refused (MySQL would cut it short)', async () => {
      const inbox = spec.inbox(spec.table('names'), true);
      const name = 'é'.repeat(191);
      assert.equal((await inbox.accept({ ...entry('names:ok'), receiver: name })).status, 'accepted');
      assert.equal((await inbox.get('names:ok'))?.receiver, name);
      const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: name });
      assert.equal(job?.receiver, name);
      await assert.rejects(inbox.accept({ ...entry('names:long'), receiver: `${name}x` }), (err: unknown) => {
        assert.ok(err instanceof ConfigError, String(err));
        assert.equal(err.code, 'invalid_option');
        assert.match(err.message, /at most 191 characters, got 192/);
        return true;
      });
    });
  });
}
