/**
 * The inbox of the SQL stores (`postgresStore(...).inbox`, `mysqlStore(...).inbox`,
 * `sqliteStore(...).inbox`): one mechanism, with what differs between the dialects as data
 * ({@link SqlInboxDialect}) and each store supplying only its driver calls ({@link SqlInboxDriver}).
 *
 * One table, `<table>_inbox`, one row per entry. `state` is 0 while the entry is queued (pending
 * when it has no owner, `token = ''`; processing while a run holds it, `token` its owner), 1
 * completed, 2 dead. `due_at` is, like the memory inbox's: pending, when it is due; processing, when
 * its lease runs out (so a run whose process died is due again); completed, when it is forgotten.
 * Every time is the server's clock in ms since the epoch, read in the statement that uses it.
 *
 * - accept: one `INSERT ... ON CONFLICT DO NOTHING` (`INSERT IGNORE` on MySQL). A key already there
 *   is read back and reported (duplicate or conflict); a completed one past its retention is
 *   overwritten by one owner-free `UPDATE ... WHERE state = 1 AND due_at <= now`.
 * - take: `UPDATE ... WHERE entry_key IN (SELECT ... ORDER BY due_at, seq LIMIT n FOR UPDATE SKIP
 *   LOCKED) RETURNING ...` on PostgreSQL (concurrent takers skip each other's rows) and SQLite (no
 *   `FOR UPDATE`: a write statement holds the database's single write lock from its first read);
 *   MySQL, which has no `UPDATE ... RETURNING`, runs the `SELECT ... FOR UPDATE SKIP LOCKED` and
 *   the `UPDATE` in one short READ COMMITTED transaction. Every row taken gets its own owner token,
 *   attempt + 1 and a lease ending at now + leaseMs.
 * - extend / complete / retry / bury: one `UPDATE ... WHERE entry_key = ? AND state = 0 AND token
 *   = ? AND attempts = ?`: only the current owner, of the current run, changes anything.
 * - purge: bounded `DELETE`s of completed rows past their retention, until a batch comes back short;
 *   `take` also runs one batch at most once a minute per inbox object (lazy retention).
 */

import { newToken } from '../core/crypto.js';
import type {
  InboxAccepted,
  InboxAcceptInput,
  InboxAcceptOptions,
  InboxDelivery,
  InboxEntryView,
  InboxJob,
  InboxListOptions,
  InboxState,
  InboxStats,
  InboxStore,
  InboxTakeOptions,
} from '../core/inbox.js';
import { inboxErrorLine, isStoredDelivery, unreadableJob, wellFormed } from '../core/inbox.js';
import { storeKey } from '../core/keys.js';
import { createLease, type Lease } from '../core/types.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { type SqlErrorDialect, sqlStoreError, type TableNames } from './sql.js';

type Row = Record<string, unknown>;

/** Hex digits of a taken row's old due time in its token: milliseconds up to the year 10889. */
const DUE_HEX = 13;

/** What differs between the SQL dialects, as data. */
export interface SqlInboxDialect {
  /** The error table of the store, and the function that prints the inbox table's DDL. */
  readonly errors: SqlErrorDialect;
  /** `$1, $2...` (PostgreSQL) or `?`. The statements below are written with `?`. */
  readonly placeholder: 'dollar' | 'question';
  /** The server's clock in ms since the epoch, as an integer expression. */
  readonly now: string;
  /** Column types. */
  readonly types: {
    /** The primary key (a stored key: at most 512 printable ASCII characters). */
    readonly key: string;
    /** The acceptance sequence, ties between equal due times (an auto-increment). */
    readonly seq: string;
    readonly receiver: string;
    readonly token: string;
    readonly text: string;
    /** The delivery's headers, url and receivedAt as JSON. */
    readonly meta: string;
    readonly bytes: string;
    readonly int: string;
    readonly bigint: string;
  };
  /** `CREATE TABLE` ends with this (`ENGINE=InnoDB`). */
  readonly tableSuffix: string;
  /** Indexes inside `CREATE TABLE` (MySQL has no `CREATE INDEX IF NOT EXISTS`), or apart. */
  readonly inlineIndexes: boolean;
  /**
   * `marker || hex13(due_at) || prefix || hex(seq)`: one token per row of a take, from the take's
   * random prefix `?`, after a hex digit of what the row was (`0` pending, `1` taken over from a run
   * whose lease ran out) and when it was due before the take, as 13 hex digits (`wasDue`).
   */
  tokenOf(marker: string, prefix: string): string;
  /** `INSERT ... ` that does nothing on a duplicate key: the statement's head and tail. */
  readonly insertIgnore: { readonly head: string; readonly tail: string };
  /** Row locks a concurrent taker skips (PostgreSQL, MySQL), or '' (SQLite's single writer). */
  readonly skipLocked: string;
  /**
   * `UPDATE ... RETURNING` (PostgreSQL, SQLite): take is one statement. Without it (MySQL), take
   * runs a SELECT ... FOR UPDATE SKIP LOCKED and the UPDATE in one transaction (`driver.transaction`).
   */
  readonly returning: boolean;
  /** `DELETE ... LIMIT n` (MySQL), or through a subquery on the key. */
  readonly deleteLimit: boolean;
}

/** The names of an inbox table and its indexes. */
export interface InboxTableNames {
  readonly table: string;
  /** Takes and stats of one receiver: (receiver, state, due_at, seq). */
  readonly receiverIndex: string;
  /** Takes of every receiver and purges: (state, due_at, seq). */
  readonly dueIndex: string;
  /** The table as `CREATE INDEX ... ON` names it (SQLite: without its schema, the index has it). */
  readonly indexOn: string;
}

/** The inbox's names from a store's `table` option (already checked by the store). */
export function inboxNames(table: string, quote: '"' | '`', indexInSchema: boolean): InboxTableNames {
  const parts = table.split('.');
  const last = parts[parts.length - 1]!;
  const q = (p: string) => `${quote}${p}${quote}`;
  const schema = parts.length === 2 ? `${q(parts[0]!)}.` : '';
  const index = indexInSchema ? schema : '';
  return {
    table: schema + q(`${last}_inbox`),
    receiverIndex: index + q(`${last}_ibx_rcv`),
    dueIndex: index + q(`${last}_ibx_due`),
    indexOn: indexInSchema ? q(`${last}_inbox`) : schema + q(`${last}_inbox`),
  };
}

/** The DDL of an inbox table, statement by statement (each idempotent). */
export function inboxDdl(d: SqlInboxDialect, n: InboxTableNames): string[] {
  const y = d.types;
  const rcv = `(receiver, state, due_at, seq)`;
  const due = `(state, due_at, seq)`;
  const indexes = d.inlineIndexes ? `,\n  KEY ${n.receiverIndex} ${rcv},\n  KEY ${n.dueIndex} ${due}` : '';
  const table = `CREATE TABLE IF NOT EXISTS ${n.table} (
  entry_key ${y.key},
  seq ${y.seq},
  full_key ${y.text} NULL, -- the key as given (JSON), when the stored one is its hash
  receiver ${y.receiver} NOT NULL,
  state ${y.int} NOT NULL, -- 0 queued (pending: token = '', processing: token is the owner), 1 completed, 2 dead
  token ${y.token} NOT NULL,
  attempts ${y.int} NOT NULL,
  fingerprint ${y.text} NOT NULL,
  event_type ${y.text} NULL,
  event_id ${y.text} NULL,
  item ${y.text} NULL,
  meta ${y.meta} NULL, -- JSON [headers, url, receivedAt, type, id, item], NULL once the body is dropped
  body ${y.bytes} NULL,
  accepted_at ${y.bigint} NOT NULL, -- ms since the epoch, the server's clock
  due_at ${y.bigint} NOT NULL, -- pending: due, processing: lease end, completed: forgotten after
  updated_at ${y.bigint} NOT NULL,
  last_error ${y.text} NULL${indexes}
)${d.tableSuffix}`;
  if (d.inlineIndexes) return [table];
  return [
    table,
    `CREATE INDEX IF NOT EXISTS ${n.receiverIndex} ON ${n.indexOn} ${rcv}`,
    `CREATE INDEX IF NOT EXISTS ${n.dueIndex} ON ${n.indexOn} ${due}`,
  ];
}

/** A statement: its text with `?` placeholders (made `$n` for PostgreSQL), and whether it returns rows. */
export interface SqlInboxStatement {
  readonly name: string;
  readonly text: string;
  readonly rows: boolean;
}

/** What a statement gave back: its rows, or how many rows it changed (matched). */
export interface SqlInboxResult {
  readonly rows: Row[];
  readonly changes: number;
}

export type SqlInboxQuery = (statement: SqlInboxStatement, values: unknown[]) => Promise<SqlInboxResult>;

/** The driver calls a store supplies. Errors are thrown as the driver raised them. */
export interface SqlInboxDriver {
  /** One statement on the store's client, on its own (autocommit). */
  readonly query: SqlInboxQuery;
  /** Runs `fn` inside one transaction on one connection (needed when the dialect has no `returning`). */
  transaction?<T>(fn: (query: SqlInboxQuery) => Promise<T>): Promise<T>;
  /** Whether the inbox table exists (looked up before creating it, so a role without CREATE works). */
  exists(): Promise<boolean>;
  /** Runs the DDL, the store's way (PostgreSQL under an advisory lock, SQLite under its write lock). */
  create(ddl: string[]): Promise<void>;
}

export interface SqlInboxOptions {
  readonly dialect: SqlInboxDialect;
  readonly driver: SqlInboxDriver;
  /** The store's `table` option as given, and whether it is the default. */
  readonly table: string;
  readonly defaultTable: boolean;
  readonly names: InboxTableNames;
  readonly autoCreate: boolean;
  /** Store name for messages: `postgresStore`. */
  readonly store: string;
}

const STATE = { queued: 0, completed: 1, dead: 2 } as const;
const LAZY_PURGE_EVERY_MS = 60_000;
const LAZY_PURGE_BATCH = 500;
const MAX_MS = 1e13;
/** The longest receiver name (characters) an SQL inbox keeps. */
const RECEIVER_MAX = 191;

function ms(value: number, name: string, store: string, min: number): number {
  if (!Number.isFinite(value) || value < min || value > MAX_MS) {
    throw new ConfigError(
      'invalid_duration',
      `onceonly: ${store} inbox ${name} must be between ${min} ms and ${MAX_MS} ms, got ${value}`,
    );
  }
  return Math.ceil(value);
}

function count(value: unknown, name: string, store: string): number {
  if (!Number.isInteger(value) || (value as number) < 0) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${store} inbox ${name} must be a non-negative integer, got ${String(value)}`,
    );
  }
  return value as number;
}

/** `?` placeholders as `$1, $2...` for PostgreSQL (the statements hold no `?` of their own). */
function placeholders(text: string, style: 'dollar' | 'question'): string {
  if (style === 'question') return text;
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
}

const num = (v: unknown): number => Number(v);
const opt = (v: unknown): string | undefined => (v == null ? undefined : String(v));
const truthy = (v: unknown): boolean => v === true || Number(v) === 1;

function bytesOf(v: unknown): Uint8Array {
  if (v instanceof Uint8Array) return new Uint8Array(v);
  // A driver that hands bytes back as a hex string (never the built-in clients): read it as such.
  if (typeof v === 'string' && v.startsWith('\\x')) return new Uint8Array(Buffer.from(v.slice(2), 'hex'));
  throw new TypeError(`onceonly: inbox body came back as ${typeof v}, not bytes`);
}

/** The copy of a free text (type, id, item) in its column: any store keeps it, its meta has it exactly. */
const readable = (v: string | undefined): string | null =>
  v === undefined ? null : wellFormed(v.length > TEXT_MAX ? v.slice(0, TEXT_MAX) : v);
const TEXT_MAX = 1_000;

const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

function stateOf(row: Row): InboxState {
  const s = num(row.state);
  if (s === STATE.completed) return 'completed';
  if (s === STATE.dead) return 'dead';
  return row.token === '' ? 'pending' : 'processing';
}

/** The inbox over a SQL store: see the module comment. */
export function sqlInbox(options: SqlInboxOptions): InboxStore {
  const { dialect: d, driver, names: n, store } = options;
  const T = n.table;
  const NOW = d.now;
  const cache = new Map<string, SqlInboxStatement>();
  const st = (name: string, text: string, rows: boolean): SqlInboxStatement => {
    const key = `${name}\n${text}`;
    let s = cache.get(key);
    if (!s) {
      s = { name: `inbox_${name}`, text: placeholders(text, d.placeholder), rows };
      cache.set(key, s);
    }
    return s;
  };
  const errorNames: TableNames = { keys: T, versions: T, index: n.receiverIndex, bareKeys: n.indexOn };
  const fail = (action: string, err: unknown, setup = false) =>
    sqlStoreError(
      d.errors,
      {
        action,
        setup,
        autoCreate: options.autoCreate,
        table: options.table,
        names: errorNames,
        defaultTable: options.defaultTable,
      },
      err,
    );

  let created: Promise<void> | undefined;
  function ready(): Promise<void> {
    if (!options.autoCreate) return Promise.resolve();
    if (!created) {
      created = (async () => {
        try {
          if (!(await driver.exists())) await driver.create(inboxDdl(d, n));
        } catch (err) {
          throw fail(`create its inbox table ${T}`, err, true);
        }
      })();
      created.catch(() => {
        created = undefined;
      });
    }
    return created;
  }

  async function exec(action: string, s: SqlInboxStatement, values: unknown[]): Promise<SqlInboxResult> {
    await ready();
    try {
      return await driver.query(s, values);
    } catch (err) {
      throw fail(action, err);
    }
  }

  // Columns of a view, and of a job (the view's plus the delivery).
  const VIEW = `entry_key, full_key, receiver, state, token, event_type, event_id, attempts, accepted_at, due_at, updated_at, last_error, (body IS NOT NULL) AS has_body`;
  const JOB = `entry_key, full_key, receiver, token, attempts, fingerprint, event_type, event_id, item, meta, body, accepted_at, due_at, seq`;
  const live = `(state <> ${STATE.completed} OR due_at > ${NOW})`;
  const keyOf = (row: Row, stored = String(row.entry_key)): string =>
    row.full_key == null ? stored : (JSON.parse(String(row.full_key)) as string);

  const view = (row: Row): InboxEntryView => ({
    key: keyOf(row),
    receiver: String(row.receiver),
    state: stateOf(row),
    type: opt(row.event_type),
    id: opt(row.event_id),
    attempts: num(row.attempts),
    acceptedAt: new Date(num(row.accepted_at)),
    dueAt: new Date(num(row.due_at)),
    updatedAt: new Date(num(row.updated_at)),
    lastError: opt(row.last_error),
    hasBody: truthy(row.has_body),
  });

  type Meta = [
    [string, string][],
    string | null,
    number,
    (string | null)?,
    (string | null)?,
    (string | null)?,
  ];
  const delivery = (row: Row): InboxDelivery | undefined => {
    if (row.meta == null || row.body == null) return undefined;
    const meta: unknown = JSON.parse(String(row.meta));
    if (!isStoredDelivery(meta)) throw new Error('its meta is not [headers, url, receivedAt, ...]');
    const [headers, url, receivedAt] = meta;
    return { body: bytesOf(row.body), headers, url: url ?? undefined, receivedAt: new Date(receivedAt) };
  };

  // The stored key of each unreadable job's lease: its key as given may be the damaged part, and a
  // stored key run through storeKey again (a hashed one) would name no row, so it could never be
  // buried.
  const storedKeys = new WeakMap<Lease, string>();
  const storedOf = (lease: Lease): string => storedKeys.get(lease) ?? storeKey(lease.key);

  const job = (row: Row): InboxJob => {
    const stored = String(row.entry_key);
    const fingerprint = String(row.fingerprint);
    const leaseOf = (key: string) =>
      createLease({
        key,
        token: String(row.token),
        attempt: num(row.attempts),
        fingerprint,
        expiresAt: new Date(num(row.due_at)),
      });
    try {
      const key = keyOf(row);
      const kept = delivery(row);
      if (!kept) throw new Error('its body or meta is gone (NULL) while it is queued');
      // The exact type, id and item are in meta (JSON escapes NUL and lone surrogates, which a text
      // column refuses or mangles); the columns hold a readable copy for operators and listings.
      const meta = JSON.parse(String(row.meta)) as Meta;
      const exact = meta.length >= 6;
      return {
        ...kept,
        key,
        receiver: String(row.receiver),
        type: exact ? opt(meta[3]) : opt(row.event_type),
        id: exact ? opt(meta[4]) : opt(row.event_id),
        item: exact ? opt(meta[5]) : opt(row.item),
        fingerprint,
        acceptedAt: new Date(num(row.accepted_at)),
        takenOver: String(row.token).startsWith('1'),
        lease: leaseOf(key),
      };
    } catch (error) {
      // Changed or damaged outside onceonly: handed out as unreadable (the worker buries it,
      // reported), so the rest of the take runs. Its lease names the stored key when the key as
      // given cannot be read either; the owner-checked writes find its row through storedKeys.
      let key = stored;
      try {
        key = keyOf(row);
      } catch {}
      const lease = leaseOf(key);
      storedKeys.set(lease, stored);
      return unreadableJob(
        {
          key,
          receiver: String(row.receiver),
          fingerprint,
          acceptedAt: new Date(num(row.accepted_at)),
          lease,
          type: opt(row.event_type),
          id: opt(row.event_id),
        },
        error,
      );
    }
  };

  // The entry as accept writes it: everything but the times (the server's).
  const ENTRY =
    'full_key, receiver, state, token, attempts, fingerprint, event_type, event_id, item, meta, body';
  const entryValues = (input: InboxAcceptInput, stored: string, token: string): unknown[] => [
    input.key === stored ? null : JSON.stringify(input.key),
    input.receiver,
    STATE.queued,
    token,
    token === '' ? 0 : 1,
    input.fingerprint,
    readable(input.type),
    readable(input.id),
    readable(input.item),
    JSON.stringify([
      input.headers,
      input.url ?? null,
      input.receivedAt.getTime(),
      input.type ?? null,
      input.id ?? null,
      input.item ?? null,
    ]),
    asBuffer(input.body),
  ];
  const insert = st(
    'insert',
    `${d.insertIgnore.head} ${T} (entry_key, ${ENTRY}, accepted_at, due_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${NOW}, ${NOW} + ?, ${NOW})${d.insertIgnore.tail}`,
    false,
  );
  const found = st(
    'found',
    `SELECT state, token, fingerprint, due_at, ${NOW} AS now_ms FROM ${T} WHERE entry_key = ?`,
    true,
  );
  // A completed entry past its retention reads as absent: the key is accepted anew, over it.
  const renew = st(
    'renew',
    `UPDATE ${T} SET ${ENTRY.split(', ')
      .map((c) => `${c} = ?`)
      .join(', ')}, accepted_at = ${NOW}, due_at = ${NOW} + ?, updated_at = ${NOW}, last_error = NULL
WHERE entry_key = ? AND state = ${STATE.completed} AND due_at <= ${NOW}`,
    false,
  );
  const leaseEnd = st('lease_end', `SELECT due_at FROM ${T} WHERE entry_key = ? AND token = ?`, true);

  // Owner-checked writes: the current owner of the current run only.
  const OWNED = `WHERE entry_key = ? AND state = ${STATE.queued} AND token = ? AND attempts = ?`;
  const ownedWrite = (name: string, set: string) => st(name, `UPDATE ${T} SET ${set} ${OWNED}`, false);
  const extendSt = ownedWrite('extend', `due_at = ${NOW} + ?, updated_at = ${NOW}`);
  const completeSt = ownedWrite(
    'complete',
    `state = ${STATE.completed}, token = '', due_at = ${NOW} + ?, updated_at = ${NOW}`,
  );
  const completeDropSt = ownedWrite(
    'complete_drop',
    `state = ${STATE.completed}, token = '', due_at = ${NOW} + ?, updated_at = ${NOW}, body = NULL, meta = NULL`,
  );
  const retrySt = ownedWrite('retry', `token = '', due_at = ${NOW} + ?, updated_at = ${NOW}, last_error = ?`);
  /** The values of {@link retrySt}, in its placeholders' order: delay, error line, then the owner check. */
  const retryValues = (delayMs: number, error: string, stored: string, token: string, attempt: number) => [
    delayMs,
    inboxErrorLine(error),
    stored,
    token,
    attempt,
  ];
  const burySt = ownedWrite(
    'bury',
    `state = ${STATE.dead}, token = '', due_at = ${NOW}, updated_at = ${NOW}, last_error = ?`,
  );

  /** The due entries of a take, oldest due first; `limit` is a checked integer. */
  const dueRows = (receiver: boolean, limit: number, columns: string) =>
    `SELECT ${columns} FROM ${T} WHERE ${receiver ? 'receiver = ? AND ' : ''}state = ${STATE.queued} AND due_at <= ${NOW}
ORDER BY due_at, seq LIMIT ${limit}${d.skipLocked}`;
  // The token's first hex digit says what the row was before this take (its old token, read by the
  // SET): taken over from a run whose lease ran out (`1`), or pending (`0`).
  const MARKER = `CASE WHEN token = '' THEN '0' ELSE '1' END`;
  /** When a taken row was due before its take, from its token (`tokenOf`). */
  const wasDue = (row: Row): number => Number.parseInt(String(row.token).slice(1, 1 + DUE_HEX), 16);
  const TAKE_SET = `token = ${d.tokenOf(MARKER, '?')}, attempts = attempts + 1, due_at = ${NOW} + ?, updated_at = ${NOW}`;

  async function takeReturning(receiver: string | undefined, limit: number, leaseMs: number): Promise<Row[]> {
    const s = st(
      `take_${receiver === undefined ? 'all' : 'one'}`,
      // The due rows in a CTE, evaluated once: PostgreSQL may run a `LIMIT` subquery of `IN (...)`
      // again for every row it joins (and so take more than `limit`), never a CTE that reads the clock.
      `WITH due AS (${dueRows(receiver !== undefined, limit, 'entry_key')})
UPDATE ${T} SET ${TAKE_SET}
WHERE entry_key IN (SELECT entry_key FROM due) AND state = ${STATE.queued} AND due_at <= ${NOW}
RETURNING ${JOB}`,
      true,
    );
    const values = [...(receiver === undefined ? [] : [receiver]), newToken(), leaseMs];
    return (await exec('take inbox entries', s, values)).rows;
  }

  async function takeInTransaction(
    receiver: string | undefined,
    limit: number,
    leaseMs: number,
  ): Promise<Row[]> {
    if (!driver.transaction) throw new TypeError('onceonly: this SQL inbox needs a driver transaction');
    const select = st(
      `take_select_${receiver === undefined ? 'all' : 'one'}`,
      dueRows(receiver !== undefined, limit, `${JOB}, ${NOW} AS now_ms`),
      true,
    );
    await ready();
    try {
      return await driver.transaction(async (query): Promise<Row[]> => {
        const { rows } = await query(select, receiver === undefined ? [] : [receiver]);
        if (rows.length === 0) return [];
        const prefix = newToken();
        const expires = num(rows[0]!.now_ms) + leaseMs;
        const update = st(
          `take_update_${rows.length}`,
          `UPDATE ${T} SET token = ${d.tokenOf(MARKER, '?')}, attempts = attempts + 1, due_at = ?, updated_at = ?
WHERE entry_key IN (${rows.map(() => '?').join(', ')})`,
          false,
        );
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
      throw fail('take inbox entries', err);
    }
  }

  let lastPurge = 0;
  async function purgeBatch(batch: number): Promise<number> {
    const where = `state = ${STATE.completed} AND due_at <= ${NOW}`;
    const s = d.deleteLimit
      ? st('purge', `DELETE FROM ${T} WHERE ${where} ORDER BY due_at LIMIT ${batch}`, false)
      : st(
          'purge',
          `DELETE FROM ${T} WHERE entry_key IN (
  SELECT entry_key FROM ${T} WHERE ${where} ORDER BY due_at LIMIT ${batch}${d.skipLocked}
) AND ${where}`,
          false,
        );
    return (await exec('purge completed inbox entries', s, [])).changes;
  }

  const filters = (o: { receiver?: string | undefined; state?: InboxState | undefined }) => {
    const where: string[] = [];
    const values: unknown[] = [];
    if (o.receiver !== undefined) {
      where.push('receiver = ?');
      values.push(o.receiver);
    }
    if (o.state !== undefined) {
      where.push(
        o.state === 'pending'
          ? `state = ${STATE.queued} AND token = ''`
          : o.state === 'processing'
            ? `state = ${STATE.queued} AND token <> ''`
            : `state = ${o.state === 'completed' ? STATE.completed : STATE.dead}`,
      );
    }
    return { where, values };
  };

  return {
    async accept(input: InboxAcceptInput, acceptOptions: InboxAcceptOptions = {}): Promise<InboxAccepted> {
      const claimMs =
        acceptOptions.claimMs === undefined ? undefined : ms(acceptOptions.claimMs, 'claimMs', store, 1);
      // One limit for every SQL store (MySQL's receiver column holds 191 characters, and its
      // INSERT IGNORE would cut a longer name short without an error): a receiver moved from one
      // store to another keeps working.
      // (Code points: never more than UTF-16 units, so only a long name is counted.)
      if (input.receiver.length > RECEIVER_MAX && [...input.receiver].length > RECEIVER_MAX) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${store} inbox receiver names are at most ${RECEIVER_MAX} characters, got ${[...input.receiver].length}; give the receiver a shorter name`,
        );
      }
      const stored = storeKey(input.key);
      const token = claimMs === undefined ? '' : newToken();
      const entry = entryValues(input, stored, token);
      const accepted = async (): Promise<InboxAccepted> => {
        if (claimMs === undefined) return { status: 'accepted' };
        let rows: Row[];
        try {
          ({ rows } = await exec('accept an inbox entry', leaseEnd, [stored, token]));
        } catch {
          // Written (durable: accepted), but its lease could not be read back, so not ours to run.
          // Handed to the workers at once, best effort, so its first run is not a takeover of a
          // claim that nobody ran (which on a last attempt would bury it unrun).
          await exec(
            'retry an inbox entry',
            retrySt,
            retryValues(0, 'accepted, but its claim could not be read back', stored, token, 1),
          ).catch(() => undefined);
          return { status: 'accepted' };
        }
        // The claim ran out before it was read back (a claimMs shorter than a round trip) and a
        // worker took the entry: accepted, but not ours to run.
        if (rows.length === 0) return { status: 'accepted' };
        return {
          status: 'accepted',
          lease: createLease({
            key: input.key,
            token,
            attempt: 1,
            fingerprint: input.fingerprint,
            expiresAt: new Date(num(rows[0]?.due_at)),
          }),
        };
      };
      // A key nobody holds costs one statement. A held key is read and reported; a completed one
      // past its retention is taken over by one conditional UPDATE. Repeats only while the row
      // keeps vanishing or changing under it (a purge, a concurrent accept after its retention).
      for (let round = 1; round <= 10; round++) {
        const fresh = await exec('accept an inbox entry', insert, [stored, ...entry, claimMs ?? 0]);
        if (fresh.changes === 1) return accepted();
        const { rows } = await exec('accept an inbox entry', found, [stored]);
        const row = rows[0];
        if (!row) continue;
        if (num(row.state) !== STATE.completed || num(row.due_at) > num(row.now_ms)) {
          return {
            status: String(row.fingerprint) === input.fingerprint ? 'duplicate' : 'conflict',
            state: stateOf(row),
          };
        }
        const renewed = await exec('accept an inbox entry', renew, [...entry, claimMs ?? 0, stored]);
        if (renewed.changes === 1) return accepted();
      }
      throw new StoreUnavailableError(
        `onceonly: ${d.errors.store} store could not accept "${input.key}" into its inbox: it changed under every one of 10 tries; retry the delivery later`,
      );
    },

    async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
      const n = count(limit, 'take limit', store);
      const lease = ms(leaseMs, 'leaseMs', store, 1);
      if (n === 0) return [];
      const rows = d.returning
        ? await takeReturning(receiver, n, lease)
        : await takeInTransaction(receiver, n, lease);
      // Lazy retention: one bounded purge batch now and then, never failing the take. (The host's
      // clock only spaces the batches out; what is past its retention is the server's to say.)
      const at = Date.now();
      if (at - lastPurge >= LAZY_PURGE_EVERY_MS) {
        lastPurge = at;
        await purgeBatch(LAZY_PURGE_BATCH).catch(() => 0);
      }
      // Oldest due first, as the take chose them: every row now shares its lease end as due_at, so
      // the order comes from when each was due before the take, which its token carries.
      return rows.sort((a, b) => wasDue(a) - wasDue(b) || num(a.seq) - num(b.seq)).map(job);
    },

    async extend(lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> {
      if (lease.token === '') return false;
      const values = [ms(leaseMs, 'leaseMs', store, 1), storedOf(lease), lease.token, lease.attempt];
      return (await exec('extend an inbox lease', extendSt, values)).changes > 0;
    },

    async complete(lease: Lease, { retentionMs, dropBody }: { retentionMs: number; dropBody?: boolean }) {
      if (lease.token === '') return false;
      const values = [ms(retentionMs, 'retentionMs', store, 0), storedOf(lease), lease.token, lease.attempt];
      return (
        (await exec('complete an inbox entry', dropBody ? completeDropSt : completeSt, values)).changes > 0
      );
    },

    async retry(lease: Lease, { delayMs, error }: { delayMs: number; error: string }): Promise<boolean> {
      if (lease.token === '') return false;
      const values = retryValues(
        ms(delayMs, 'delayMs', store, 0),
        error,
        storedOf(lease),
        lease.token,
        lease.attempt,
      );
      return (await exec('retry an inbox entry', retrySt, values)).changes > 0;
    },

    async bury(lease: Lease, { error }: { error: string }): Promise<boolean> {
      if (lease.token === '') return false;
      const values = [inboxErrorLine(error), storedOf(lease), lease.token, lease.attempt];
      return (await exec('bury an inbox entry', burySt, values)).changes > 0;
    },

    async stats(o: { receiver?: string } = {}): Promise<InboxStats> {
      const { where, values } = filters(o);
      const q = STATE.queued;
      const s = st(
        `stats_${o.receiver === undefined ? 'all' : 'one'}`,
        `SELECT
  COALESCE(SUM(CASE WHEN state = ${q} AND token = '' THEN 1 ELSE 0 END), 0) AS pending,
  COALESCE(SUM(CASE WHEN state = ${q} AND token <> '' THEN 1 ELSE 0 END), 0) AS processing,
  COALESCE(SUM(CASE WHEN state = ${STATE.completed} AND due_at > c.ms THEN 1 ELSE 0 END), 0) AS completed,
  COALESCE(SUM(CASE WHEN state = ${STATE.dead} THEN 1 ELSE 0 END), 0) AS dead,
  MIN(CASE WHEN state = ${q} AND due_at <= c.ms THEN due_at END) AS oldest,
  MAX(c.ms) AS now_ms
FROM (SELECT ${NOW} AS ms) c LEFT JOIN ${T} ON ${where.length > 0 ? where.join(' AND ') : '1 = 1'}`,
        true,
      );
      const row = (await exec('count inbox entries', s, values)).rows[0] ?? {};
      return {
        pending: num(row.pending ?? 0),
        processing: num(row.processing ?? 0),
        completed: num(row.completed ?? 0),
        dead: num(row.dead ?? 0),
        oldestDueMs: row.oldest == null ? 0 : Math.max(0, num(row.now_ms) - num(row.oldest)),
      };
    },

    async list(o: InboxListOptions = {}): Promise<InboxEntryView[]> {
      const limit = count(o.limit ?? 100, 'list limit', store);
      const { where, values } = filters(o);
      const s = st(
        'list',
        `SELECT ${VIEW} FROM ${T} WHERE ${[live, ...where].join(' AND ')}
ORDER BY CASE WHEN state = ${STATE.dead} THEN 0 WHEN state = ${STATE.completed} THEN 3 WHEN token = '' THEN 1 ELSE 2 END, due_at, seq
LIMIT ${limit}`,
        true,
      );
      return (await exec('list inbox entries', s, values)).rows.map(view);
    },

    async get(key: string) {
      const s = st('get', `SELECT ${VIEW}, meta, body FROM ${T} WHERE entry_key = ? AND ${live}`, true);
      const row = (await exec('read an inbox entry', s, [storeKey(key)])).rows[0];
      if (!row) return undefined;
      let kept: InboxDelivery | undefined;
      try {
        kept = delivery(row);
      } catch {
        kept = undefined; // damaged outside onceonly: shown without its delivery (a take buries it)
      }
      return { ...view(row), key, delivery: kept };
    },

    async requeue(target: { key: string } | { dead: true; receiver?: string }): Promise<number> {
      const base = `UPDATE ${T} SET state = ${STATE.queued}, token = '', due_at = ${NOW}, updated_at = ${NOW}
WHERE state = ${STATE.dead} AND body IS NOT NULL`;
      if ('key' in target) {
        const s = st('requeue_one', `${base} AND entry_key = ?`, false);
        return (await exec('requeue an inbox entry', s, [storeKey(target.key)])).changes;
      }
      const s = st(
        `requeue_${target.receiver === undefined ? 'all' : 'one'}`,
        `${base}${target.receiver === undefined ? '' : ' AND receiver = ?'}`,
        false,
      );
      const values = target.receiver === undefined ? [] : [target.receiver];
      return (await exec('requeue dead inbox entries', s, values)).changes;
    },

    async purge(o: { batchSize?: number } = {}): Promise<number> {
      const batch = o.batchSize ?? 1_000;
      if (!Number.isInteger(batch) || batch < 1) {
        throw new ConfigError(
          'invalid_option',
          `onceonly: ${store} inbox purge batchSize must be a positive integer, got ${batch}`,
        );
      }
      let deleted = 0;
      for (;;) {
        const n = await purgeBatch(batch);
        deleted += n;
        if (n < batch) return deleted;
      }
    },
  };
}
