/**
 * The SQL stores' one mechanism: the {@link Store} methods written once over a dialect (what to
 * run, as data, and the claim and confirm sequences a database needs) and a driver (how its client
 * runs a statement). `postgresStore`, `mysqlStore` and `sqliteStore` only put the two together.
 *
 * A driver may answer synchronously (SQLite): the methods then do all their work before they
 * return, and every step is chained with {@link then} rather than awaited, so nothing of theirs runs
 * after they returned.
 */

import { newToken } from '../../core/crypto.js';
import type { HealthScope, StoreHealth } from '../../core/health.js';
import type { InboxStore } from '../../core/inbox.js';
import { storeKey } from '../../core/keys.js';
import type { Claim, ClaimOptions, Lease, RecordOptions, RecordView, StoreStats } from '../../core/types.js';
import { assertVersion, createLease, markBuiltin, sameFingerprint } from '../../core/types.js';
import { ConfigError, StoreUnavailableError } from '../../errors.js';
import { coalesced, watchHub } from '../inbox-watch.js';
import { type PurgeOptions, purgeSettings, sqlHealth, sqlStoreError, type TableNames } from '../sql.js';
import { type InboxTableNames, inboxNames, sqlInbox } from '../sql-inbox.js';
import { guarded, isLater, then } from './awaitable.js';
import { addStepsColumn, sqlStepStore } from './steps.js';
import type {
  Awaitable,
  Row,
  SqlCall,
  SqlCalls,
  SqlClaimStep,
  SqlDialect,
  SqlDriver,
  SqlExec,
  SqlFoundRow,
  SqlOutcome,
  SqlRun,
  SqlSession,
  SqlStatement,
} from './types.js';

/**
 * How a store reports a failed statement: `sqlStoreError` with the store's table and settings.
 * `setup`: while looking up or creating its tables.
 */
export type SqlFaults = (action: string, err: unknown, setup?: boolean) => StoreUnavailableError;

export function sqlFaults(dialect: SqlDialect, table: string, autoCreate: boolean): SqlFaults {
  const { names, defaultTable } = dialect;
  // A table of an older onceonly may lack the steps column: its error names the ALTER that adds it.
  const outdated = addStepsColumn(dialect.steps, names.keys);
  return (action, err, setup = false) =>
    sqlStoreError(dialect.errors, { action, setup, autoCreate, table, names, defaultTable, outdated }, err);
}

/**
 * Runs `create` once per client and table (many store objects over one pool run the DDL once); a
 * failure is forgotten, so the next use tries again.
 */
export function oncePerClient(
  created: WeakMap<object, Map<string, Promise<void>>>,
  client: object,
  table: string,
  create: () => Promise<void>,
): Promise<void> {
  const perClient = getOrMake(created, client, () => new Map<string, Promise<void>>());
  return getOrMake(perClient, table, () => {
    const pending = create();
    pending.catch(() => perClient.delete(table));
    return pending;
  });
}

/** The value of `key` in `map`, made by `make` (and kept) the first time. */
export function getOrMake<K, V>(
  map: { get(key: K): V | undefined; set(key: K, value: V): unknown },
  key: K,
  make: () => V,
): V {
  let value = map.get(key);
  if (value === undefined) {
    value = make();
    map.set(key, value);
  }
  return value;
}

/**
 * The calls of a dialect whose statements take the stored key first and the other values in the
 * order of the Store method (PostgreSQL, SQLite): all but `extend`, `confirmOwn` and `saveStep`.
 */
export function keyedCalls(
  s: Record<
    | 'release'
    | 'advance'
    | 'record'
    | 'inspect'
    | 'stats'
    | 'oldest'
    | 'purge'
    | 'purgeVersions'
    | 'loadSteps',
    SqlStatement
  >,
): Omit<SqlCalls, 'extend' | 'confirmOwn' | 'saveStep'> {
  return {
    release: (lease) => [s.release, [storeKey(lease.key), lease.token]],
    advance: (entity, version) => [s.advance, [storeKey(entity), version]],
    record: (key, token, fingerprint, retentionMs) => [
      s.record,
      [storeKey(key), token, fingerprint ?? null, retentionMs],
    ],
    inspect: (key) => [s.inspect, [storeKey(key)]],
    stats: () => [s.stats, []],
    oldest: (limit) => [s.oldest, [limit]],
    purge: (graceMs, batch) => [s.purge, [graceMs, batch]],
    purgeVersions: (unusedMs, batch) => [s.purgeVersions, [unusedMs, batch]],
    loadSteps: (lease) => [s.loadSteps, [storeKey(lease.key)]],
  };
}

/**
 * What a claim makes of a row it found: the step when the row keeps the key (live, or takeable but
 * processing under another fingerprint, which it keeps), undefined when the claim may take it.
 */
export function heldBy(row: SqlFoundRow, fingerprint: string | undefined): SqlClaimStep | undefined {
  const same = sameFingerprint(row.fingerprint, fingerprint);
  if (!row.live && (row.completed || same)) return undefined;
  return { acquired: false, completed: row.completed, attempt: row.attempt, expiresMs: row.expiresMs, same };
}

/** A column that holds text, or UTF-8 bytes (MySQL's VARBINARY), as a string. */
export function toText(v: unknown): string | undefined {
  if (v == null) return undefined;
  if (v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
  return String(v);
}

/**
 * Runs `step` until it gives an answer: a plain loop while its steps answer at once (SQLite, however
 * many rounds), a promise chain once one does not.
 */
function repeat<T>(step: () => Awaitable<T | undefined>): Awaitable<T> {
  for (;;) {
    const value = step();
    if (isLater(value)) {
      return Promise.resolve(value).then((answer) => (answer === undefined ? repeat(step) : answer));
    }
    if (value !== undefined) return value as T;
  }
}

/** The `table` option's default, in every SQL store. */
export const DEFAULT_TABLE = 'onceonly';

/**
 * What a dialect derives alike from the `table` option: its table names, its inbox's (quoted with
 * `quote`, indexes in the schema where `indexInSchema`), and whether it is the default table.
 */
export function tableParts<N extends TableNames>(
  table: string,
  names: N,
  quote: '"' | '`',
  indexInSchema: boolean,
): { names: N; inboxNames: InboxTableNames; defaultTable: boolean } {
  return {
    names,
    inboxNames: inboxNames(table, quote, indexInSchema),
    defaultTable: table === DEFAULT_TABLE,
  };
}

/** The rounds of a claim that loses to a write it could not see before it gives up. */
const CLAIM_ROUNDS = 10;

/** The parts of a SQL store. */
export interface SqlStoreParts {
  readonly dialect: SqlDialect;
  readonly driver: SqlDriver;
  /** The `table` option as given. */
  readonly table: string;
  readonly autoCreate: boolean;
}

/** What the operations of one store share. */
interface Context extends SqlStoreParts {
  readonly exec: SqlExec;
  readonly session: SqlSession;
  /** Makes the tables ready; errors as the store throws them (under `action`). */
  ready(action: string): Awaitable<void>;
}

function context(parts: SqlStoreParts): Context {
  const { dialect, driver, table, autoCreate } = parts;
  const unavailable = sqlFaults(dialect, table, autoCreate);
  /** The store's error for a failed step of `action` (a ConfigError goes through as it is). */
  const fail =
    (action: string) =>
    (err: unknown): never => {
      if (err instanceof ConfigError) throw err;
      throw unavailable(action, err);
    };
  // On every statement of every claim: no closure made unless the driver answers later or fails.
  const exec: SqlExec = (action, call) => {
    let value: Awaitable<SqlOutcome>;
    try {
      const ready = driver.ready();
      value = isLater(ready)
        ? Promise.resolve(ready).then(() => driver.run(call[0], call[1]))
        : driver.run(call[0], call[1]);
    } catch (err) {
      return fail(action)(err);
    }
    return isLater(value) ? Promise.resolve(value).catch(fail(action)) : value;
  };
  return {
    ...parts,
    exec,
    session: { exec, locked: (fn) => driver.locked(fn) },
    ready: (action) => guarded(() => driver.ready(), fail(action)),
  };
}

/** A row of `inspect` or `oldest` as a record's view. */
function view({ columns }: SqlDialect, row: Row, key: string): RecordView {
  return {
    key,
    state:
      String(row.state) === columns.completed
        ? 'completed'
        : Number(row.released) === 1
          ? 'released'
          : 'processing',
    attempt: Number(row.attempt),
    fingerprint: toText(row.fingerprint),
    expiresAt: new Date(Number(row[columns.expires])),
    updatedAt: new Date(Number(row[columns.updated])),
  };
}

function claimed(
  dialect: SqlDialect,
  key: string,
  input: ClaimOptions,
  token: string,
  step: SqlClaimStep,
): Claim {
  if (step.acquired) {
    const { fingerprint } = input;
    const expiresAt = new Date(step.expiresMs);
    const lease = createLease({ key, token, attempt: step.attempt, fingerprint, expiresAt });
    dialect.leased?.(lease, step.rowId);
    return { status: 'acquired', lease };
  }
  if (step.completed) return { status: 'completed', sameFingerprint: step.same };
  return {
    status: 'in-flight',
    attempt: step.attempt,
    expiresAt: new Date(step.expiresMs),
    sameFingerprint: step.same,
  };
}

function claim({ dialect, session }: Context, key: string, options: ClaimOptions): Awaitable<Claim> {
  const { leaseMs, fingerprint, retentionMs } = options;
  const token = newToken();
  const round = dialect.claimRound({ key, token, leaseMs, fingerprint, graceMs: retentionMs ?? 0 }, session);
  let rounds = 0;
  return repeat(() => {
    if (++rounds > CLAIM_ROUNDS) {
      throw new StoreUnavailableError(
        `onceonly: ${dialect.errors.store} store could not claim "${key}": it changed under every one of ${CLAIM_ROUNDS} tries; retry the delivery later`,
      );
    }
    return then(round(), (step) => (step ? claimed(dialect, key, options, token, step) : undefined));
  });
}

function confirm({ dialect, exec, session }: Context, lease: Lease, retentionMs: number): Awaitable<boolean> {
  // No real token is empty: '' marks a released row, which nobody owns.
  if (lease.token === '') return false;
  const own = dialect.calls.confirmOwn?.(lease, retentionMs);
  if (!own) return dialect.confirm(lease, retentionMs, session);
  // Not (or no longer) a row with our token: vanished, ran out, or another owner's. Tokens are
  // unique, so nothing can make the row ours between the two steps.
  return then(exec('confirm a lease', own), (r) => r.done || dialect.confirm(lease, retentionMs, session));
}

/** `record`, synchronous where the driver is (SQLite's `recordSync`). */
function record(
  c: Context,
  key: string,
  { retentionMs, fingerprint, tx }: RecordOptions,
): Awaitable<{ duplicate: boolean }> {
  const call = c.dialect.calls.record(key, newToken(), fingerprint, retentionMs);
  if (tx === undefined) return then(c.exec('record a key', call), (r) => ({ duplicate: !r.done }));
  const run: SqlRun = c.driver.joining(tx);
  // No retry and no wrapping inside the caller's transaction: their own error handling (a retry
  // of a serialization failure or a deadlock) sees the driver's error as for any of their statements.
  return then(c.ready('create its tables'), () =>
    then(run(call[0], call[1]), (r: SqlOutcome) => ({ duplicate: !r.done })),
  );
}

/** Runs a purge statement in batches until one comes back short; how many rows it deleted. */
function drain(
  { exec }: Context,
  action: string,
  call: (batch: number) => SqlCall,
  batch: number,
): Awaitable<number> {
  let deleted = 0;
  return repeat(() =>
    then(exec(action, call(batch)), ({ count }) => {
      deleted += count;
      return count < batch ? deleted : undefined;
    }),
  );
}

function purgeExpired(c: Context, purge: PurgeOptions = {}): Awaitable<number> {
  const { calls, purgeVersionsAction } = c.dialect;
  const { graceMs, batch, unusedMs } = purgeSettings(purge);
  return then(
    drain(c, 'purge expired keys', (n) => calls.purge(graceMs, n), batch),
    (keys) =>
      unusedMs === undefined
        ? keys
        : then(
            drain(c, purgeVersionsAction, (n) => calls.purgeVersions(unusedMs, n), batch),
            (versions) => keys + versions,
          ),
  );
}

/**
 * Reachable, the server's clock, and the store's tables present (looked up, never created): the
 * inbox's too when the caller uses it.
 */
function health({ dialect, driver, autoCreate }: Context, scope?: HealthScope): Awaitable<StoreHealth> {
  const t = dialect.names;
  const names = [t.keys, t.versions, ...(scope?.inbox === true ? [dialect.inboxNames.table] : [])];
  return then(driver.health(names), ({ nowMs, tables }) => {
    const facts = sqlHealth(nowMs, tables, autoCreate);
    if (!dialect.localClock) return facts;
    return {
      checks: [
        {
          name: 'clock',
          ok: true,
          detail: "the host's own: SQLite runs in this process, nothing to compare",
        },
        ...facts.checks,
      ],
    };
  });
}

function stats({ exec, dialect }: Context): Awaitable<StoreStats> {
  return then(exec('count keys', dialect.calls.stats()), ({ rows }) => {
    const row = rows[0] ?? {};
    return {
      processing: Number(row.processing ?? 0),
      takeable: Number(row.takeable ?? 0),
      completed: Number(row.completed ?? 0),
    };
  });
}

/** A SQL store's methods, before its entry file adds what is its own; and its `record`, unwrapped. */
export function sqlStore(parts: SqlStoreParts) {
  const c = context(parts);
  const { dialect, exec } = c;
  const { calls, columns, names: t } = dialect;
  const done = (action: string, call: SqlCall) => then(exec(action, call), (r) => r.done);
  // PostgreSQL's watch: one LISTEN per store hears what the writes that make an entry due notify.
  const { watch, notify } = parts.driver.inbox;
  const hub = watch ? watchHub(watch) : undefined;
  const sqlBox = sqlInbox({
    dialect: dialect.inbox,
    names: dialect.inboxNames,
    table: parts.table,
    defaultTable: dialect.defaultTable,
    autoCreate: parts.autoCreate,
    store: `${dialect.kind}Store`,
    driver: parts.driver.inbox,
  });
  // An accept notifies after it resolves, not inside its statement: PostgreSQL serialises the
  // commits of every transaction that notifies (a lock held through the commit's flush), which cut
  // the accepts of 32 in flight to 0.37x of a raw INSERT. Coalesced: one in flight per receiver.
  const told = notify && coalesced(notify);
  const { ready: _, ...box } = sqlBox;
  const inbox: InboxStore = box;
  if (hub) inbox.watch = hub.watch;
  if (told) {
    inbox.accept = async (input, acceptOptions) => {
      const accepted = await sqlBox.accept(input, acceptOptions);
      if (accepted.status === 'accepted' && acceptOptions?.claimMs === undefined) told(input.receiver);
      return accepted;
    };
  }

  const store = {
    tables: { keys: t.keys, versions: t.versions },
    inbox,
    health: async (scope?: HealthScope): Promise<StoreHealth> => health(c, scope),
    /** Creates the tables now instead of on first use (a no-op after the first success). */
    ready: async (options?: { inbox?: boolean }): Promise<void> => {
      await c.ready('create its tables');
      if (options?.inbox === true) await sqlBox.ready();
    },
    claim: async (key: string, options: ClaimOptions): Promise<Claim> => claim(c, key, options),
    confirm: async (lease: Lease, { retentionMs }: { retentionMs: number }): Promise<boolean> =>
      confirm(c, lease, retentionMs),
    release: async (lease: Lease): Promise<boolean> =>
      lease.token !== '' && done('release a lease', calls.release(lease)),
    extend: async (lease: Lease, { leaseMs }: { leaseMs: number }): Promise<boolean> =>
      lease.token !== '' && done('extend a lease', calls.extend(lease, leaseMs)),
    record: async (key: string, options: RecordOptions): Promise<{ duplicate: boolean }> =>
      record(c, key, options),
    advance: async (entity: string, version: number): Promise<boolean> => {
      assertVersion(version);
      return done('advance a version', calls.advance(entity, version));
    },
    inspect: async (key: string): Promise<RecordView | undefined> =>
      then(exec('read a key', calls.inspect(key)), ({ rows }) =>
        rows[0] ? view(dialect, rows[0], key) : undefined,
      ),
    stats: async (): Promise<StoreStats> => stats(c),
    oldestLeases: async (limit: number): Promise<RecordView[]> =>
      then(exec('list leases', calls.oldest(limit)), ({ rows }) =>
        rows.map((row) => ({
          ...view(dialect, row, toText(row[columns.key]) ?? ''),
          state: Number(row.released) === 1 ? ('released' as const) : ('processing' as const),
        })),
      ),
    purgeExpired: async (options?: PurgeOptions): Promise<number> => purgeExpired(c, options),
    steps: sqlStepStore(
      (lease) => then(exec('load steps', calls.loadSteps(lease)), ({ rows }) => rows[0]?.steps),
      (lease, name, value) => then(exec('save a step', calls.saveStep(lease, name, value)), (r) => r.done),
    ),
    close: async (): Promise<void> => {
      // The client is the caller's: only the inbox's own watch connection is ours to close.
      await hub?.close();
    },
  };
  return {
    store: markBuiltin(dialect.kind, parts.driver.client, t.keys, store),
    record: (key: string, options: RecordOptions) => record(c, key, options),
  };
}

/** A migration's SQL: its statements, each ended by `;`, apart by `joiner`, and a line break at the end. */
export function migrationText(statements: readonly string[], joiner = '\n\n'): string {
  return `${statements.join(`;${joiner}`)};\n`;
}

/** A dialect's statement texts as statements, each named after its key, with the flags `flags` gives it. */
export function named<K extends string>(
  texts: Readonly<Record<K, string>>,
  flags: (name: K) => Omit<SqlStatement, 'name' | 'text'>,
): Record<K, SqlStatement> {
  const out = {} as Record<K, SqlStatement>;
  for (const name of Object.keys(texts) as K[]) out[name] = { name, text: texts[name], ...flags(name) };
  return out;
}
