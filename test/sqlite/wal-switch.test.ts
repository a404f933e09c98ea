/**
 * The switch to WAL when several processes open one new file at once: SQLite may answer
 * SQLITE_BUSY at once, without its busy timeout (CI saw a fourth process of the inbox race die of
 * it at start-up). The store tries again, reading the mode each time, for up to the busy timeout.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { toWal } from '../../src/stores/sql/sqlite-driver.js';

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
    toWal(db, 5_000);
    assert.equal(calls.filter((c) => c === 'journal_mode = WAL').length, 4);
    assert.equal(calls.filter((c) => c === 'journal_mode').length, 4);
  });

  it('stops at the busy timeout with the error, and never retries another error', () => {
    const { db } = contested(Number.POSITIVE_INFINITY);
    const started = Date.now();
    assert.throws(() => toWal(db, 60), /database is locked/);
    assert.ok(Date.now() - started >= 60);
    const broken = {
      ...contested(0).db,
      pragma: () => {
        throw Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
      },
    };
    const at = Date.now();
    assert.throws(() => toWal(broken, 5_000), /disk I\/O error/);
    assert.ok(Date.now() - at < 50);
  });
});
