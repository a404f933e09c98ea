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
 * - accept: one `INSERT ... ON CONFLICT DO NOTHING` (`INSERT IGNORE` on MySQL); on PostgreSQL and
 *   MySQL the plain accepts asked for while one is out go as one multi-row INSERT (`acceptMany`). A key
 *   already there is read back and reported (duplicate or conflict); a completed one past its
 *   retention is overwritten by one owner-free `UPDATE ... WHERE state = 1 AND due_at <= now`.
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
import { inboxErrorLine } from '../core/inbox.js';
import { storeKey } from '../core/keys.js';
import { createLease, type Lease } from '../core/types.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { inboxDdl } from './sql/inbox-ddl.js';
import {
  delivery,
  entryValues,
  jobReader,
  keysetValues,
  listed,
  num,
  stateOf,
  view,
} from './sql/inbox-rows.js';
import { inboxStatements, wasDue } from './sql/inbox-statements.js';
import {
  type Row,
  type SqlInboxOptions,
  type SqlInboxResult,
  type SqlInboxStatement,
  STATE,
} from './sql/inbox-types.js';
import {
  type AcceptRow,
  acceptInserts,
  completeMany,
  type InboxContext,
  takeInTransaction,
  takeReturning,
} from './sql/inbox-writes.js';
import { addStepsColumn, sqlStepStore, upgradeSteps } from './sql/steps.js';
import { sqlStoreError, type TableNames } from './sql.js';

export { inboxDdl, inboxNames } from './sql/inbox-ddl.js';
export type {
  InboxTableNames,
  SqlInboxDialect,
  SqlInboxDriver,
  SqlInboxOptions,
  SqlInboxQuery,
  SqlInboxResult,
  SqlInboxStatement,
} from './sql/inbox-types.js';

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

/** The values of a retry, in its placeholders' order: delay, error line, then the owner check. */
const retryValues = (delayMs: number, error: string, stored: string, token: string, attempt: number) => [
  delayMs,
  inboxErrorLine(error),
  stored,
  token,
  attempt,
];

async function accept(
  c: InboxContext,
  input: InboxAcceptInput,
  acceptOptions: InboxAcceptOptions,
  inserts: ((row: AcceptRow) => Promise<number>) | undefined,
): Promise<InboxAccepted> {
  const { exec, s, store } = c;
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
      ({ rows } = await exec('accept an inbox entry', s.leaseEnd, [stored, token]));
    } catch {
      // Written (durable: accepted), but its lease could not be read back, so not ours to run.
      // Handed to the workers at once, best effort, so its first run is not a takeover of a
      // claim that nobody ran (which on a last attempt would bury it unrun).
      await exec(
        'retry an inbox entry',
        s.retry,
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
  // The first INSERT of a plain accept may go with others' (`acceptMany`).
  for (let round = 1; round <= 10; round++) {
    const values = [stored, ...entry, claimMs ?? 0];
    const changes =
      round === 1 && claimMs === undefined && inserts
        ? await inserts({ stored, values })
        : (await exec('accept an inbox entry', s.insert, values)).changes;
    if (changes === 1) return accepted();
    const { rows } = await exec('accept an inbox entry', s.found, [stored]);
    const row = rows[0];
    if (!row) continue;
    if (num(row.state) !== STATE.completed || num(row.due_at) > num(row.now_ms)) {
      return {
        status: String(row.fingerprint) === input.fingerprint ? 'duplicate' : 'conflict',
        state: stateOf(row),
      };
    }
    const renewed = await exec('accept an inbox entry', s.renew, [...entry, claimMs ?? 0, stored]);
    if (renewed.changes === 1) return accepted();
  }
  throw new StoreUnavailableError(
    `onceonly: ${c.d.errors.store} store could not accept "${input.key}" into its inbox: it changed under every one of 10 tries; retry the delivery later`,
  );
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

async function stats(c: InboxContext, o: { receiver?: string }): Promise<InboxStats> {
  const { where, values } = filters(o);
  const row =
    (await c.exec('count inbox entries', c.s.stats(o.receiver !== undefined, where), values)).rows[0] ?? {};
  return {
    pending: num(row.pending ?? 0),
    processing: num(row.processing ?? 0),
    completed: num(row.completed ?? 0),
    dead: num(row.dead ?? 0),
    scheduled: num(row.scheduled ?? 0),
    oldestDueMs: row.oldest == null ? 0 : Math.max(0, num(row.now_ms) - num(row.oldest)),
  };
}

/** The context of an inbox: its statements, its table made on first use, the store's errors. */
function inboxContext(options: SqlInboxOptions): InboxContext {
  const { dialect: d, driver, names: n, store } = options;
  const T = n.table;
  const errorNames: TableNames = { keys: T, versions: T, index: n.receiverIndex, bareKeys: n.indexOn };
  // A table of an older onceonly may lack the steps column: its error names the ALTER that adds it.
  const outdated = addStepsColumn(d.steps, T);
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
        outdated,
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
          // A table made by an older onceonly has no steps column.
          await upgradeSteps(d.steps, d.errors, T, (text) =>
            driver.query({ name: 'inbox_steps_column', text, rows: false }, []),
          );
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

  return { d, driver, store, s: inboxStatements(d, n), ready, exec, fail };
}

/** The inbox over a SQL store: see the module comment. */
export function sqlInbox(options: SqlInboxOptions): InboxStore & { ready(): Promise<void> } {
  const c = inboxContext(options);
  const { d, exec, s, store } = c;
  const { job, storedOf } = jobReader();
  const inserts = d.acceptMany === undefined ? undefined : acceptInserts(c, d.acceptMany);

  let lastPurge = 0;
  const purgeBatch = async (batch: number): Promise<number> =>
    (await exec('purge completed inbox entries', s.purge(batch), [])).changes;
  /** An owner-checked write: whether the lease's owner, of its run, changed the entry. */
  const owned = async (action: string, st: SqlInboxStatement, lease: Lease, before: unknown[]) =>
    (await exec(action, st, [...before, storedOf(lease), lease.token, lease.attempt])).changes > 0;

  return {
    /** Creates the table now (when `autoCreate`), instead of on first use. */
    ready: c.ready,

    accept: (input: InboxAcceptInput, acceptOptions: InboxAcceptOptions = {}) =>
      accept(c, input, acceptOptions, inserts),

    steps: sqlStepStore(
      async (lease) => (await exec('load steps', s.loadSteps, [storedOf(lease)])).rows[0]?.steps,
      (lease, name, value) => owned('save a step', s.saveStep, lease, [name, value]),
    ),

    async take({ limit, leaseMs, receiver }: InboxTakeOptions): Promise<InboxJob[]> {
      const n = count(limit, 'take limit', store);
      const lease = ms(leaseMs, 'leaseMs', store, 1);
      if (n === 0) return [];
      const rows = d.returning
        ? await takeReturning(c, receiver, n, lease)
        : await takeInTransaction(c, receiver, n, lease);
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
      return owned('extend an inbox lease', s.extend, lease, [ms(leaseMs, 'leaseMs', store, 1)]);
    },

    async complete(lease: Lease, { retentionMs, dropBody }: { retentionMs: number; dropBody?: boolean }) {
      if (lease.token === '') return false;
      const retention = ms(retentionMs, 'retentionMs', store, 0);
      return owned('complete an inbox entry', dropBody ? s.completeDrop : s.complete, lease, [retention]);
    },

    ...(d.returning || c.driver.transaction
      ? {
          completeMany: (leases: readonly Lease[], o: { retentionMs: number; dropBody?: boolean }) => {
            const retention = ms(o.retentionMs, 'retentionMs', store, 0);
            const drop = o.dropBody === true;
            const one = (l: Lease) =>
              owned('complete an inbox entry', drop ? s.completeDrop : s.complete, l, [retention]);
            return completeMany(c, leases, { retention, drop, storedOf, one });
          },
        }
      : {}),

    async retry(lease: Lease, { delayMs, error }: { delayMs: number; error: string }): Promise<boolean> {
      if (lease.token === '') return false;
      const delay = ms(delayMs, 'delayMs', store, 0);
      return owned('retry an inbox entry', s.retry, lease, [delay, inboxErrorLine(error)]);
    },

    async bury(lease: Lease, { error }: { error: string }): Promise<boolean> {
      if (lease.token === '') return false;
      return owned('bury an inbox entry', s.bury, lease, [inboxErrorLine(error)]);
    },

    stats: async (o: { receiver?: string } = {}): Promise<InboxStats> => stats(c, o),

    async list(o: InboxListOptions = {}): Promise<InboxEntryView[]> {
      const limit = count(o.limit ?? 100, 'list limit', store);
      const offset = count(o.offset ?? 0, 'list offset', store);
      const { where, values } = filters(o);
      const oneState = o.state !== undefined;
      const after = keysetValues(o.after, oneState, store);
      // The offset is a value, not text (one prepared statement per filter and page size), and a
      // string: MySQL 8.0.22+ takes no DOUBLE parameter in LIMIT/OFFSET, a string it converts.
      const all = [...values, ...after, String(offset)];
      return (
        await exec('list inbox entries', s.list(where, limit, oneState, after.length > 0), all)
      ).rows.map(listed);
    },

    async get(key: string) {
      const row = (await exec('read an inbox entry', s.get, [storeKey(key)])).rows[0];
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
      if ('key' in target) {
        return (await exec('requeue an inbox entry', s.requeueOne, [storeKey(target.key)])).changes;
      }
      const values = target.receiver === undefined ? [] : [target.receiver];
      return (await exec('requeue dead inbox entries', s.requeueDead(target.receiver !== undefined), values))
        .changes;
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
