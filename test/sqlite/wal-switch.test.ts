/**
 * The switch to WAL when several processes open one new file at once: SQLite may answer
 * SQLITE_BUSY at once, without its busy timeout (CI saw a fourth process of the inbox race die of
 * it at start-up). The store tries again, reading the mode each time, for up to the busy timeout.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { clientOf, type SqliteClientKind, sqliteCode } from '../../src/stores/sql/sqlite-clients.js';
import { toWal } from '../../src/stores/sql/sqlite-driver.js';

const kind = (db: unknown): SqliteClientKind => {
  const client = clientOf(db);
  assert.ok(client, 'a client recognized by its shape');
  return client;
};

/** A database whose WAL switch is refused `busy` times, as SQLite refuses it, then done. */
function contested(busy: number) {
  const calls: string[] = [];
  let mode = 'delete';
  return {
    calls,
    db: {
      inTransaction: false,
      prepare: () => {
        throw new Error('not used');
      },
      pragma(source: string) {
        calls.push(source);
        if (source === 'journal_mode') return mode;
        if (busy-- > 0) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
        mode = 'wal';
        return mode;
      },
    },
  };
}

describe('switching a new SQLite file to WAL', () => {
  it('tries again after SQLITE_BUSY, reading the mode each time, and switches', () => {
    const { db, calls } = contested(3);
    toWal(db, kind(db), 5_000);
    assert.equal(calls.filter((c) => c === 'journal_mode = WAL').length, 4);
    assert.equal(calls.filter((c) => c === 'journal_mode').length, 4);
  });

  it('stops at the busy timeout with the error, and never retries another error', () => {
    const { db } = contested(Number.POSITIVE_INFINITY);
    const started = Date.now();
    assert.throws(() => toWal(db, kind(db), 60), /database is locked/);
    assert.ok(Date.now() - started >= 60);
    const broken = {
      ...contested(0).db,
      pragma: () => {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      },
    };
    const at = Date.now();
    assert.throws(() => toWal(broken, kind(broken), 5_000), /disk I\/O error/);
    assert.ok(Date.now() - at < 50);
  });

  it("reads node:sqlite's busy error (its number errcode) as SQLITE_BUSY, with the pragmas as statements", () => {
    // A DatabaseSync's shape: no pragma(), isTransaction; errors with code ERR_SQLITE_ERROR and errcode.
    let busy = 2;
    let mode = 'delete';
    const run: string[] = [];
    const db = {
      isTransaction: false,
      exec() {},
      prepare: (sql: string) => ({
        run: () => ({ changes: 0 }),
        all() {
          run.push(sql);
          if (sql === 'PRAGMA journal_mode') return [{ journal_mode: mode }];
          if (busy-- > 0) {
            throw Object.assign(new Error('database is locked'), { code: 'ERR_SQLITE_ERROR', errcode: 5 });
          }
          mode = 'wal';
          return [{ journal_mode: mode }];
        },
      }),
    };
    assert.equal(kind(db).name, 'node:sqlite');
    toWal(db, kind(db), 5_000);
    assert.equal(mode, 'wal');
    assert.equal(run.filter((s) => s === 'PRAGMA journal_mode = WAL').length, 3);
  });
});

describe("SQLite's result codes whichever client threw", () => {
  it('names node:sqlite numbers as better-sqlite3 names them, and keeps a code that is already a name', () => {
    const node = (errcode: number) => ({ code: 'ERR_SQLITE_ERROR', errcode });
    assert.equal(sqliteCode(node(5)), 'SQLITE_BUSY');
    assert.equal(sqliteCode(node(773)), 'SQLITE_BUSY_TIMEOUT');
    assert.equal(sqliteCode(node(1032)), 'SQLITE_READONLY_DBMOVED');
    assert.equal(sqliteCode(node(264)), 'SQLITE_READONLY_RECOVERY');
    assert.equal(sqliteCode(node(14)), 'SQLITE_CANTOPEN');
    assert.equal(sqliteCode(node(26)), 'SQLITE_NOTADB');
    assert.equal(
      sqliteCode(node(10 | (3 << 8))),
      'SQLITE_IOERR',
      'an extended code not told apart: its primary',
    );
    assert.equal(
      sqliteCode({ code: 'SQLITE_BUSY', errno: 5 }),
      'SQLITE_BUSY',
      "better-sqlite3's and bun:sqlite's",
    );
    assert.equal(sqliteCode(node(0)), undefined);
    assert.equal(sqliteCode(new Error('no code')), undefined);
    assert.equal(sqliteCode(undefined), undefined);
  });
});
