/**
 * The SQL inbox's writes of several rows at once (see sql-inbox.ts): a take, in one statement where
 * the dialect has `RETURNING`, else a locking read and an `UPDATE` in one transaction; and the
 * transaction of `completeMany` where there is no `RETURNING` (MySQL).
 */

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
