/**
 * The SQL inbox's statements, built from its dialect (see sql-inbox.ts). Each is made once per text
 * and named `inbox_<name>` (PostgreSQL's prepared statements are named after it and a hash of the
 * text); `?` placeholders, made `$n` for PostgreSQL.
 */

import { ENTRY } from './inbox-rows.js';
import {
  DUE_HEX,
  type InboxTableNames,
  type Row,
  type SqlInboxDialect,
  type SqlInboxStatement,
  STATE,
} from './inbox-types.js';

/** `?` placeholders as `$1, $2...` for PostgreSQL (the statements hold no `?` of their own). */
function placeholders(text: string, style: 'dollar' | 'question'): string {
  if (style === 'question') return text;
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

// Columns of a view, and of a job (the view's plus the delivery).
const VIEW = `entry_key, full_key, receiver, state, token, event_type, event_id, attempts, accepted_at, due_at, updated_at, last_error, (body IS NOT NULL) AS has_body, seq`;
const JOB = `entry_key, full_key, receiver, token, attempts, fingerprint, event_type, event_id, item, meta, body, accepted_at, due_at, seq`;
// The token's first hex digit says what the row was before this take (its old token, read by the
// SET): taken over from a run whose lease ran out (`1`), or pending (`0`).
const MARKER = `CASE WHEN token = '' THEN '0' ELSE '1' END`;

/** When a taken row was due before its take, from its token (`tokenOf`). */
export const wasDue = (row: Row): number => Number.parseInt(String(row.token).slice(1, 1 + DUE_HEX), 16);

/** Listing order across states: dead, pending, processing, completed (a sort of the rows). */
const RANK_OF = `CASE WHEN state = ${STATE.dead} THEN 0 WHEN state = ${STATE.completed} THEN 3 WHEN token = '' THEN 1 ELSE 2 END`;
const RANK = `${RANK_OF}, `;
/** Where a page continues after an entry at (due_at, seq): the first term bounds the index range, the second passes the ties. */
const AFTER = '(due_at >= ? AND (due_at > ? OR seq > ?))';

/**
 * A page of `list`: of one state in its index's order, so a page reads its rows from the index;
 * else by RANK. After an entry (keyset paging): one state continues in the index from its
 * (due_at, seq) (values: due_at twice, seq); every state from its rank, then (due_at, seq) within
 * it (values: rank twice first).
 */
function listSql(T: string, where: string[], limit: number, oneState: boolean, after: boolean): string {
  const from = after ? [oneState ? AFTER : `(${RANK_OF} > ? OR (${RANK_OF} = ? AND ${AFTER}))`] : [];
  return `SELECT ${VIEW} FROM ${T} WHERE ${[...where, ...from].join(' AND ')}
ORDER BY ${oneState ? '' : RANK}due_at, seq LIMIT ${limit} OFFSET ?`;
}

/**
 * Requeues, due now: one key (dead, or pending with its next attempt ahead: retry now; never a
 * processing one), or the dead (of a receiver).
 */
function requeueSql(T: string, NOW: string): { one: string; dead: string } {
  const wake = `UPDATE ${T} SET state = ${STATE.queued}, token = '', due_at = ${NOW}, updated_at = ${NOW}
WHERE body IS NOT NULL`;
  const dead = `state = ${STATE.dead}`;
  const waiting = `(state = ${STATE.queued} AND token = '' AND due_at > ${NOW})`;
  return { one: `${wake} AND entry_key = ? AND (${dead} OR ${waiting})`, dead: `${wake} AND ${dead}` };
}

/**
 * A take's re-check of the rows it chose (and a purge's, alike), its columns under a unary `+`, which no index serves: else
 * SQLite reads the rows through the due index, every due row a take (14 ms a take under 5,000
 * pending entries, against 0.16 ms empty), instead of by their keys.
 */
const stillDue = (NOW: string) => `+state = ${STATE.queued} AND +due_at <= ${NOW}`;

/**
 * The owner checks of `n` leases at once: one entry's run each. The state is compared as an
 * expression (`+state`): each lease names its row by key, but PostgreSQL without fresh statistics
 * read `state = 0` as selective and scanned the due index instead (a batch of 8 under 36,000 queued
 * entries: 1.6 ms, against 0.15 ms by key).
 */
const owners = (n: number) =>
  `+state = ${STATE.queued} AND (${Array.from({ length: n }, () => '(entry_key = ? AND token = ? AND attempts = ?)').join(' OR ')})`;

/** Makes each statement once (by name and text), its placeholders in the dialect's form. */
function statementMaker(d: SqlInboxDialect) {
  const cache = new Map<string, SqlInboxStatement>();
  return (name: string, text: string, rows: boolean): SqlInboxStatement => {
    const key = `${name}\n${text}`;
    let s = cache.get(key);
    if (!s) {
      s = { name: `inbox_${name}`, text: placeholders(text, d.placeholder), rows };
      cache.set(key, s);
    }
    return s;
  };
}

/** An accept's INSERT of `n` rows into `T` (values: key, the entry, then the claim's ms, per row). */
const acceptInsert = (d: SqlInboxDialect, T: string, n: number) =>
  `${d.insertIgnore.head} ${T} (entry_key, ${ENTRY}, accepted_at, due_at, updated_at)
VALUES ${Array.from({ length: n }, () => `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${d.now}, ${d.now} + ?, ${d.now})`).join(',\n')}${d.insertIgnore.tail}`;

/** The statements of one inbox table. */
export function inboxStatements(d: SqlInboxDialect, n: InboxTableNames) {
  const T = n.table;
  const NOW = d.now;
  const st = statementMaker(d);
  const live = `(state <> ${STATE.completed} OR due_at > ${NOW})`;
  /** A write that may make an entry due: it tells the watchers where the dialect can (`wake`). */
  const waking = (name: string, write: string): SqlInboxStatement =>
    d.wake ? st(name, d.wake(write, n), true) : st(name, write, false);

  // Owner-checked writes: the current owner of the current run only.
  const OWNED = `WHERE entry_key = ? AND state = ${STATE.queued} AND token = ? AND attempts = ?`;
  const ownedWrite = (name: string, set: string, wakes = false) =>
    (wakes ? waking : (a: string, b: string) => st(a, b, false))(name, `UPDATE ${T} SET ${set} ${OWNED}`);

  /** The due entries of a take, oldest due first; `limit` is a checked integer. */
  const dueRows = (receiver: boolean, limit: number, columns: string) =>
    `SELECT ${columns} FROM ${T} WHERE ${receiver ? 'receiver = ? AND ' : ''}state = ${STATE.queued} AND due_at <= ${NOW}
ORDER BY due_at, seq LIMIT ${limit}${d.skipLocked}`;
  const COMPLETE = `state = ${STATE.completed}, token = '', due_at = ${NOW} + ?, updated_at = ${NOW}, steps = NULL`;
  const COMPLETE_DROP = `${COMPLETE}, body = NULL, meta = NULL`;
  const TAKE_SET = `token = ${d.tokenOf(MARKER, '?')}, attempts = attempts + 1, due_at = ${NOW} + ?, updated_at = ${NOW}`;
  const requeue = requeueSql(T, NOW);
  const insertOf = (rows: number) => acceptInsert(d, T, rows);

  return {
    insert: st('insert', insertOf(1), false),
    /**
     * `n` accepts in one statement (`acceptMany`), the rows in the order given, as `insert`'s values
     * one row after another; with `returning`, the keys of the rows it wrote come back.
     */
    insertMany: (n: number, returning = d.acceptMany === 'returning') =>
      st(`insert_many_${n}`, `${insertOf(n)}${returning ? ' RETURNING entry_key AS k' : ''}`, returning),
    found: st(
      'found',
      `SELECT state, token, fingerprint, due_at, ${NOW} AS now_ms FROM ${T} WHERE entry_key = ?`,
      true,
    ),
    // A completed entry past its retention reads as absent: the key is accepted anew, over it.
    renew: st(
      'renew',
      `UPDATE ${T} SET ${ENTRY.split(', ')
        .map((c) => `${c} = ?`)
        .join(
          ', ',
        )}, accepted_at = ${NOW}, due_at = ${NOW} + ?, updated_at = ${NOW}, last_error = NULL, steps = NULL
WHERE entry_key = ? AND state = ${STATE.completed} AND due_at <= ${NOW}`,
      false,
    ),
    leaseEnd: st('lease_end', `SELECT due_at FROM ${T} WHERE entry_key = ? AND token = ?`, true),
    extend: ownedWrite('extend', `due_at = ${NOW} + ?, updated_at = ${NOW}`),
    complete: ownedWrite('complete', COMPLETE),
    completeDrop: ownedWrite('complete_drop', COMPLETE_DROP),
    /**
     * `n` completes in one statement, each row under its own owner check; with `RETURNING`, the rows
     * it changed come back. Without it (MySQL), `ownedRows` reads and locks those rows first, in the
     * same transaction. Values: retention, then key, token, attempt per lease.
     */
    completeMany: (n: number, drop: boolean) =>
      st(
        `complete_many${drop ? '_drop' : ''}_${n}`,
        `UPDATE ${T} SET ${drop ? COMPLETE_DROP : COMPLETE} WHERE ${owners(n)}${d.returning ? ' RETURNING entry_key, attempts' : ''}`,
        d.returning,
      ),
    /** Values: key, token, attempt per lease. */
    ownedRows: (n: number) =>
      st(`owned_rows_${n}`, `SELECT entry_key, attempts FROM ${T} WHERE ${owners(n)} FOR UPDATE`, true),
    /** Values: delay, error line, then the owner check. */
    retry: ownedWrite('retry', `token = '', due_at = ${NOW} + ?, updated_at = ${NOW}, last_error = ?`, true),
    bury: ownedWrite(
      'bury',
      `state = ${STATE.dead}, token = '', due_at = ${NOW}, updated_at = ${NOW}, last_error = ?`,
    ),

    // Durable steps (values of a save: name, result, the owner check); complete and renew drop them.
    loadSteps: st('load_steps', `SELECT steps FROM ${T} WHERE entry_key = ?`, true),
    saveStep: ownedWrite('save_step', `steps = ${d.steps.merge('?', '?')}, updated_at = ${NOW}`),
    /** A take in one statement (`returning`): the due rows taken, given back. */
    take: (receiver: boolean, limit: number) =>
      st(
        `take_${receiver ? 'one' : 'all'}`,
        // The due rows in a CTE, evaluated once: PostgreSQL may run a `LIMIT` subquery of `IN (...)`
        // again for every row it joins (and so take more than `limit`), never a CTE that reads the clock.
        `WITH due AS (${dueRows(receiver, limit, 'entry_key')})
UPDATE ${T} SET ${TAKE_SET}
WHERE entry_key IN (SELECT entry_key FROM due) AND ${stillDue(NOW)}
RETURNING ${JOB}`,
        true,
      ),
    /** A take in a transaction: the due rows locked and read, then `takeUpdate` of as many. */
    takeSelect: (receiver: boolean, limit: number) =>
      st(
        `take_select_${receiver ? 'one' : 'all'}`,
        dueRows(receiver, limit, `${JOB}, ${NOW} AS now_ms`),
        true,
      ),
    takeUpdate: (rows: number) =>
      st(
        `take_update_${rows}`,
        `UPDATE ${T} SET token = ${d.tokenOf(MARKER, '?')}, attempts = attempts + 1, due_at = ?, updated_at = ?
WHERE entry_key IN (${Array.from({ length: rows }, () => '?').join(', ')})`,
        false,
      ),

    purge(batch: number) {
      const where = `state = ${STATE.completed} AND due_at <= ${NOW}`;
      return d.deleteLimit
        ? st('purge', `DELETE FROM ${T} WHERE ${where} ORDER BY due_at LIMIT ${batch}`, false)
        : st(
            'purge',
            `DELETE FROM ${T} WHERE entry_key IN (
  SELECT entry_key FROM ${T} WHERE ${where} ORDER BY due_at LIMIT ${batch}${d.skipLocked}
) AND +state = ${STATE.completed} AND +due_at <= ${NOW}`,
            false,
          );
    },

    stats(receiver: boolean, where: string[]) {
      const q = STATE.queued;
      return st(
        `stats_${receiver ? 'one' : 'all'}`,
        `SELECT
  COALESCE(SUM(CASE WHEN state = ${q} AND token = '' THEN 1 ELSE 0 END), 0) AS pending,
  COALESCE(SUM(CASE WHEN state = ${q} AND token <> '' THEN 1 ELSE 0 END), 0) AS processing,
  COALESCE(SUM(CASE WHEN state = ${STATE.completed} AND due_at > c.ms THEN 1 ELSE 0 END), 0) AS completed,
  COALESCE(SUM(CASE WHEN state = ${STATE.dead} THEN 1 ELSE 0 END), 0) AS dead,
  COALESCE(SUM(CASE WHEN state = ${q} AND token = '' AND due_at > c.ms THEN 1 ELSE 0 END), 0) AS scheduled,
  MIN(CASE WHEN state = ${q} AND due_at <= c.ms THEN due_at END) AS oldest,
  MAX(c.ms) AS now_ms
FROM (SELECT ${NOW} AS ms) c LEFT JOIN ${T} ON ${where.length > 0 ? where.join(' AND ') : '1 = 1'}`,
        true,
      );
    },
    // Values: the filters', the cursor's (see listSql), then the offset.
    list: (where: string[], limit: number, oneState: boolean, after: boolean) =>
      st(
        `${oneState ? 'list_state' : 'list'}${after ? '_after' : ''}`,
        listSql(T, [live, ...where], limit, oneState, after),
        true,
      ),

    get: st('get', `SELECT ${VIEW}, meta, body FROM ${T} WHERE entry_key = ? AND ${live}`, true),

    requeueOne: waking('requeue_one', requeue.one),
    requeueDead: (receiver: boolean) =>
      waking(`requeue_${receiver ? 'one' : 'all'}`, `${requeue.dead}${receiver ? ' AND receiver = ?' : ''}`),
  };
}

export type InboxStatements = ReturnType<typeof inboxStatements>;
