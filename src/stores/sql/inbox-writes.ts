/**
 * The SQL inbox's writes of several rows at once (see sql-inbox.ts): a take, in one statement where
 * the dialect has `RETURNING`, else a locking read and an `UPDATE` in one transaction; the
 * transaction of `completeMany` where there is no `RETURNING` (MySQL); and the accepts that go
 * together (`acceptMany`).
 */

import { coalesce } from '../../core/coalesce.js';
import { newToken } from '../../core/crypto.js';
import type { Lease } from '../../core/types.js';
import type { StoreUnavailableError } from '../../errors.js';
import { num } from './inbox-rows.js';
import type { InboxStatements } from './inbox-statements.js';
import {
  DUE_HEX,
  type Row,
  type SqlInboxDialect,
  type SqlInboxDriver,
  type SqlInboxResult,
  type SqlInboxStatement,
} from './inbox-types.js';

/** What the inbox's operations share: its dialect, driver, statements, and the store's errors. */
export interface InboxContext {
  readonly d: SqlInboxDialect;
  readonly driver: SqlInboxDriver;
  readonly store: string;
  readonly s: InboxStatements;
  ready(): Promise<void>;
  exec(action: string, s: SqlInboxStatement, values: unknown[]): Promise<SqlInboxResult>;
  fail(action: string, err: unknown): StoreUnavailableError;
}

/** The rows of a take in one statement: `UPDATE ... RETURNING`. */
export async function takeReturning(
  c: InboxContext,
  receiver: string | undefined,
  limit: number,
  leaseMs: number,
): Promise<Row[]> {
  const values = [...(receiver === undefined ? [] : [receiver]), newToken(), leaseMs];
  return (await c.exec('take inbox entries', c.s.take(receiver !== undefined, limit), values)).rows;
}

/** The rows of a take without `RETURNING`: a locking read and an UPDATE in one transaction. */
export async function takeInTransaction(
  c: InboxContext,
  receiver: string | undefined,
  limit: number,
  leaseMs: number,
): Promise<Row[]> {
  const { driver } = c;
  if (!driver.transaction) throw new TypeError('onceonly: this SQL inbox needs a driver transaction');
  const select = c.s.takeSelect(receiver !== undefined, limit);
  await c.ready();
  try {
    return await driver.transaction(async (query): Promise<Row[]> => {
      const { rows } = await query(select, receiver === undefined ? [] : [receiver]);
      if (rows.length === 0) return [];
      const prefix = newToken();
      const expires = num(rows[0]!.now_ms) + leaseMs;
      const update = c.s.takeUpdate(rows.length);
      await query(update, [prefix, expires, num(rows[0]!.now_ms), ...rows.map((r) => r.entry_key)]);
      // The rows are locked until commit: what the UPDATE wrote follows from what was read.
      return rows.map((r) => ({
        ...r,
        token:
          (r.token === '' ? '0' : '1') +
          num(r.due_at).toString(16).padStart(DUE_HEX, '0') +
          prefix +
          BigInt(String(r.seq)).toString(16),
        attempts: num(r.attempts) + 1,
        due_at: expires,
      }));
    });
  } catch (err) {
    throw c.fail('take inbox entries', err);
  }
}

/**
 * The rows `completeMany`'s statement changed (values: retention, then key, token, attempt per
 * lease): from `RETURNING`, else (MySQL) the owned rows read and locked, then completed, in one
 * transaction.
 */
async function completeRows(c: InboxContext, n: number, drop: boolean, values: unknown[]): Promise<Row[]> {
  if (c.d.returning) return (await c.exec('complete inbox entries', c.s.completeMany(n, drop), values)).rows;
  await c.ready();
  try {
    return await c.driver.transaction!(async (query): Promise<Row[]> => {
      const { rows } = await query(c.s.ownedRows(n), values.slice(1));
      // Locked until commit: the UPDATE changes exactly the rows read.
      if (rows.length > 0) await query(c.s.completeMany(n, drop), values);
      return rows;
    });
  } catch (err) {
    throw c.fail('complete inbox entries', err);
  }
}

/**
 * `completeMany`: completes in one statement, each under its own owner check (a row comes back for
 * each it changed: its key and attempt, which the lease's token and attempt matched). Without
 * `RETURNING` (MySQL), the rows whose owner check holds are read and locked first, then completed,
 * in one transaction: exactly those change. Up to 64 a statement; a batch naming one key twice goes
 * one by one (`one`).
 */
export async function completeMany(
  c: InboxContext,
  leases: readonly Lease[],
  o: {
    retention: number;
    drop: boolean;
    storedOf: (lease: Lease) => string;
    one: (lease: Lease) => Promise<boolean>;
  },
): Promise<boolean[]> {
  const keys = leases.map((l) => o.storedOf(l));
  if (new Set(keys).size !== keys.length) return Promise.all(leases.map((l) => l.token !== '' && o.one(l)));
  const done = new Set<string>();
  for (let at = 0; at < leases.length; at += 64) {
    const part = leases.slice(at, at + 64).filter((l) => l.token !== '');
    if (part.length === 0) continue;
    const values: unknown[] = [o.retention];
    for (const l of part) values.push(o.storedOf(l), l.token, l.attempt);
    for (const row of await completeRows(c, part.length, o.drop, values))
      done.add(`${String(row.entry_key)}\n${num(row.attempts)}`);
  }
  return leases.map((l, i) => l.token !== '' && done.has(`${keys[i]}\n${l.attempt}`));
}

/** One accept's first INSERT: the stored key, and `insert`'s values (the key first). */
export interface AcceptRow {
  readonly stored: string;
  readonly values: readonly unknown[];
}
/** An INSERT's outcome for one accept: the rows it wrote (1 or 0), or why it failed. */
type Inserted = { changes: number } | { error: unknown };

/**
 * The most a multi-row INSERT carries, in bytes of its values: a batch of larger deliveries goes as
 * several statements, one after another. (64 bodies of the receiver's default 1 MiB limit would pass
 * MySQL's default `max_allowed_packet` of 16 MiB, and the server drops a connection that sends more.)
 */
const STATEMENT_BYTES = 4 * 1024 * 1024;

/** About how many bytes a row's values take on the wire (a string's UTF-8 at most). */
const bytesOf = (row: AcceptRow): number =>
  row.values.reduce<number>(
    (n, v) => n + (typeof v === 'string' ? v.length * 3 : v instanceof Uint8Array ? v.byteLength : 8),
    0,
  );

/** `rows` cut into runs of at most STATEMENT_BYTES (a larger row alone), in their order. */
function byBytes(rows: AcceptRow[]): AcceptRow[][] {
  const parts: AcceptRow[][] = [];
  let part: AcceptRow[] = [];
  let bytes = 0;
  for (const row of rows) {
    const size = bytesOf(row);
    if (part.length > 0 && bytes + size > STATEMENT_BYTES) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(row);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/**
 * The row counts a multi-row INSERT is sent with (a batch is padded up to the next): a server keeps
 * each prepared text's plans on every connection for as long as it lives, and one text per count
 * from 2 to 64 held 39 to 63 MB a PostgreSQL connection; these few, at most a third more rows.
 */
const SIZES = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];

/**
 * How long the accepts asked for after a statement wait for it at most: far above a statement's
 * round trip (about a millisecond), far below a store deadline.
 */
const OVERDUE_MS = 250;

/** A statement that did not write all its rows (`all-or-nothing`): rolled back, sent again one by one. */
const PARTIAL = new Error('onceonly: some rows of the accepts were there already');

/**
 * The first INSERT of plain accepts (`acceptMany`): one asked for while another is out waits for it
 * to land, then goes with every one asked for meanwhile as one multi-row INSERT (at most 64 rows),
 * so under load the accepts share a round trip and, above all, a commit. A lone accept goes at
 * once. Each accept learns whether its own row was written, and goes on as after its own INSERT
 * (read back, renewed...). Within a statement:
 * - a key given twice is written once, by its first row: the others read 0, are read back and
 *   reported (duplicate or conflict) as any later accept of the key is;
 * - the rows go in key order, so two batches of two processes that share keys wait for each other
 *   in one order and never deadlock;
 * - `returning` (PostgreSQL): the keys it wrote come back; `all-or-nothing` (MySQL, no RETURNING):
 *   it runs in a transaction, committed only when it wrote every row (fresh keys, the common case),
 *   else rolled back;
 * - a statement that fails or is rolled back is sent again as one INSERT per accept, so a row the
 *   server refuses (or a key already there) costs its own accept's round trip, no other's outcome;
 * - a statement carries at most STATEMENT_BYTES of values: large deliveries go in several.
 */
export function acceptInserts(
  c: InboxContext,
  mode: 'returning' | 'all-or-nothing',
): (row: AcceptRow) => Promise<number> {
  const one = async (row: AcceptRow): Promise<Inserted> => {
    try {
      return { changes: (await c.exec('accept an inbox entry', c.s.insert, [...row.values])).changes };
    } catch (error) {
      return { error };
    }
  };
  /** The keys the statement wrote, of `firsts` (each key once, in key order). */
  const written = async (firsts: AcceptRow[]): Promise<Set<string>> => {
    // Padded to the next of SIZES by its last row again (written once: the repeats do nothing).
    const size = SIZES.find((n) => n >= firsts.length) ?? firsts.length;
    const statement = c.s.insertMany(size);
    const values = firsts.flatMap((r) => r.values);
    for (let n = firsts.length; n < size; n++) values.push(...firsts[firsts.length - 1]!.values);
    if (mode === 'returning') {
      const { rows } = await c.exec('accept inbox entries', statement, values);
      // Named `k` (the driver also undoes a client's column-name transform: postgres.js `camel`).
      return new Set(rows.map((r) => String(r.k)));
    }
    await c.ready();
    await c.driver.transaction!(async (query) => {
      if ((await query(statement, values)).changes !== firsts.length) throw PARTIAL;
    });
    return new Set(firsts.map((r) => r.stored));
  };
  const insert = coalesce<AcceptRow, Inserted>(
    async (rows) => {
      if (rows.length === 1) return [await one(rows[0]!)];
      const firstOf = new Map<string, AcceptRow>();
      for (const r of rows) if (!firstOf.has(r.stored)) firstOf.set(r.stored, r);
      const firsts = [...firstOf.values()].sort((a, b) =>
        a.stored < b.stored ? -1 : a.stored > b.stored ? 1 : 0,
      );
      // One statement per STATEMENT_BYTES of rows, one after another; a key whose statement failed
      // is sent again one accept at a time.
      const wrote = new Set<string>();
      const failed = new Set<string>();
      for (const part of byBytes(firsts)) {
        try {
          for (const key of await written(part)) wrote.add(key);
        } catch {
          for (const r of part) failed.add(r.stored);
        }
      }
      return Promise.all(
        rows.map((r) =>
          failed.has(r.stored)
            ? one(r)
            : { changes: firstOf.get(r.stored) === r && wrote.has(r.stored) ? 1 : 0 },
        ),
      );
    },
    // A statement out longer than OVERDUE_MS (one that waits for a row lock: another process's
    // uncommitted accept of one of its keys) no longer holds up the accepts asked for after it.
    { most: 64, overdueMs: OVERDUE_MS },
  );
  return async (row) => {
    const done = await insert(row);
    if ('error' in done) throw done.error;
    return done.changes;
  };
}
