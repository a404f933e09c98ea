/**
 * What the SQL stores share: table names, what `purgeExpired()` deletes, in what batches, and how a
 * driver's error is read (a misconfiguration, the connection, or an error that may pass).
 */

import type { StoreHealth } from '../core/health.js';
import {
  ConfigError,
  type MisconfigurationCode,
  StoreMisconfiguredError,
  StoreUnavailableError,
} from '../errors.js';

export interface PurgeOptions {
  /**
   * A takeable record (released, or its lease ran out and nobody took over) is kept at least this
   * long past its lease's end, or its claim's `retentionMs` if that is longer, so that a takeover
   * still raises the attempt (the fencing number must never go back while a stale worker might still
   * write). Completed keys are deleted as soon as their retention ends.
   * @default 86_400_000 (one day)
   * @example store.purgeExpired({ leaseGraceMs: 3_600_000 })
   */
  leaseGraceMs?: number;
  /**
   * Also forget ordering-guard versions not advanced for this long. By default versions are kept.
   * @default undefined
   * @example store.purgeExpired({ versionsUnusedForMs: 30 * 86_400_000 })
   */
  versionsUnusedForMs?: number;
  /**
   * Rows deleted per statement; the purge repeats until a batch comes back short, so no statement
   * holds many row locks (or SQLite's write lock) for long.
   * @default 1_000
   * @example store.purgeExpired({ batchSize: 10_000 })
   */
  batchSize?: number;
}

/** The purge options with their defaults, checked once. */
export function purgeSettings(options: PurgeOptions = {}): {
  graceMs: number;
  batch: number;
  unusedMs: number | undefined;
} {
  const graceMs = options.leaseGraceMs ?? 86_400_000;
  const batch = options.batchSize ?? 1_000;
  const unusedMs = options.versionsUnusedForMs;
  if (
    !(graceMs >= 0) ||
    !Number.isInteger(batch) ||
    batch < 1 ||
    (unusedMs !== undefined && !(unusedMs >= 0))
  ) {
    throw new ConfigError(
      'invalid_option',
      'onceonly: purgeExpired needs leaseGraceMs >= 0, versionsUnusedForMs >= 0 and a positive integer batchSize',
    );
  }
  return { graceMs, batch, unusedMs };
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The quoted names of a SQL store's tables and index, from a `table` or `schema.table` option. */
export interface TableNames {
  /** The keys table, schema-qualified when a schema was given. */
  keys: string;
  versions: string;
  /** The expiry index; schema-qualified only where the dialect wants it (`indexInSchema`). */
  index: string;
  /** The keys table without its schema, as SQLite's `CREATE INDEX ... ON` wants it. */
  bareKeys: string;
}

/**
 * Checks a `table` option (a plain identifier, or two joined by a dot) and quotes the names derived
 * from it. Only plain identifiers pass, so the names are safe to put into SQL text.
 */
export function tableNames(
  table: string,
  dialect: {
    store: string;
    qualifier: 'schema' | 'database';
    quote: '"' | '`';
    maxLength: number;
    indexInSchema?: boolean;
  },
): TableNames {
  const parts = table.split('.');
  if (parts.length > 2 || !parts.every((p) => IDENTIFIER.test(p) && p.length <= dialect.maxLength)) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: ${dialect.store} table must be a plain identifier or ${dialect.qualifier}.table (letters, digits, underscores, at most ${dialect.maxLength} characters each), got ${JSON.stringify(table)}`,
    );
  }
  const quote = (p: string) => `${dialect.quote}${p}${dialect.quote}`;
  const last = parts[parts.length - 1]!;
  const schema = parts.length === 2 ? `${quote(parts[0]!)}.` : '';
  return {
    keys: schema + quote(last),
    versions: schema + quote(`${last}_versions`),
    index: (dialect.indexInSchema ? schema : '') + quote(`${last}_expires_at_idx`),
    bareKeys: quote(last),
  };
}

/**
 * The tables of an error message, joined by `and` (or `joiner`): one name when the context names a
 * single table (an inbox's, passed as both `keys` and `versions`).
 */
export function tableList(t: TableNames, joiner = ' and '): string {
  return t.keys === t.versions ? t.keys : `${t.keys}${joiner}${t.versions}`;
}

/** Drizzle's `sql` tag (`import { sql } from 'drizzle-orm'`), called as a function. */
export type DrizzleSqlTag = (strings: TemplateStringsArray, ...params: unknown[]) => unknown;

/**
 * A statement with placeholders (`$1` or `?`, as `placeholder` matches) as a call of Drizzle's
 * `sql` tag: the SQL between placeholders becomes the template's parts and each value a bound
 * parameter, so nothing is ever spliced into the SQL text.
 */
export function drizzleStatement(
  sql: DrizzleSqlTag,
  text: string,
  values: readonly unknown[],
  placeholder: 'dollar' | 'question',
): unknown {
  const strings: string[] = [];
  const params: unknown[] = [];
  if (placeholder === 'dollar') {
    const pieces = text.split(/\$(\d+)/);
    for (let i = 0; i < pieces.length; i++) {
      if (i % 2 === 0) strings.push(pieces[i]!);
      else params.push(values[Number(pieces[i]) - 1]);
    }
  } else {
    const pieces = text.split('?');
    strings.push(...pieces);
    params.push(...values.slice(0, pieces.length - 1));
  }
  const template = Object.assign([...strings], { raw: [...strings] }) as unknown as TemplateStringsArray;
  return sql(template, ...params);
}

/**
 * Checks the arguments of a store's `drizzleTx(tx, sql)`: `sql` must be Drizzle's tag, and `tx` a
 * Drizzle transaction, which has `method` (`execute`, or `all` on better-sqlite3) and `rollback()`;
 * the database object has no `rollback()`, and outside the transaction the dedup row would commit
 * on its own. `from` names where the tx comes from, for the error.
 */
export function requireDrizzleTx<M extends 'execute' | 'all'>(
  tx: unknown,
  sql: unknown,
  method: M,
  from: string,
): void {
  if (typeof sql !== 'function') {
    throw new ConfigError(
      'invalid_option',
      "onceonly: drizzleTx(tx, sql) needs Drizzle's sql tag as its second argument: import { sql } from 'drizzle-orm'",
    );
  }
  const t = tx as Partial<Record<M | 'rollback', unknown>> | null;
  if (
    typeof t !== 'object' ||
    t === null ||
    typeof t[method] !== 'function' ||
    typeof t.rollback !== 'function'
  ) {
    throw new ConfigError(
      'invalid_option',
      `onceonly: drizzleTx(tx, sql) needs the tx of ${from}, not the db itself: outside the transaction the dedup row would not join your writes`,
    );
  }
}

/**
 * What a failed statement means. A {@link MisconfigurationCode} stays until someone fixes it;
 * `unreachable` is the connection (refused, lost, timed out, the server shutting down or full);
 * `transient` is the server answering an error that may pass (a deadlock, a lock timeout).
 */
export type SqlFault = MisconfigurationCode | 'unreachable' | 'transient';

/** One line of a dialect's error table: which driver codes mean which fault. */
export interface SqlErrorRule {
  /** The driver's code (SQLSTATE, errno, SQLite's code), or a pattern of it (a SQLSTATE class). */
  readonly code: string | RegExp;
  /** Only when the message matches as well (SQLite tells `no such table` apart by message alone). */
  readonly message?: RegExp;
  readonly fault: SqlFault;
  /**
   * What to do, when this code needs other words than its fault's usual fix; `migration` is the
   * call that prints the DDL for this table.
   */
  readonly fix?: string | ((context: SqlErrorContext, migration: string) => string);
}

/** How one SQL dialect's driver errors read: the data {@link sqlStoreError} works from. */
export interface SqlErrorDialect {
  /** The store's name in messages. */
  readonly store: 'PostgreSQL' | 'MySQL' | 'SQLite';
  /** The exported function that prints the tables' DDL. */
  readonly migration:
    | 'postgresMigration'
    | 'mysqlMigration'
    | 'sqliteMigration'
    | 'postgresInboxMigration'
    | 'mysqlInboxMigration'
    | 'sqliteInboxMigration';
  /** The code the rules are matched on; undefined when the driver gave none. */
  key(err: unknown): string | undefined;
  /** How the error is named in messages (`SQLSTATE 42P01`, `ER_NO_SUCH_TABLE`), if at all. */
  shown(err: unknown): string | undefined;
  /** The first matching rule decides. */
  readonly rules: readonly SqlErrorRule[];
  /** The fault of an error without a code: on a networked server, the connection. */
  readonly codeless: SqlFault;
  /** The fixes, in this dialect's words. */
  readonly fixes: {
    readonly auth: string;
    readonly unknownDatabase: string;
    /** `setup`: while looking up or creating the tables (autoCreate). */
    permission(names: TableNames, setup: boolean, migration: string): string;
    /** An error that may pass. */
    readonly transient: string;
  };
}

/** What the store was doing when the statement failed. */
export interface SqlErrorContext {
  /** In the words of "could not ...": `claim a key`. */
  readonly action: string;
  /** Looking up or creating its tables, before any statement of the caller's. */
  readonly setup?: boolean;
  readonly autoCreate: boolean;
  /** The `table` option as given, and its quoted names. */
  readonly table: string;
  readonly names: TableNames;
  /** Whether `table` is the store's default (then the migration call needs no argument). */
  readonly defaultTable: boolean;
  /** The ALTER that adds the `steps` column (durable steps) to a table an older onceonly made. */
  readonly outdated?: string | undefined;
}

/**
 * The fix for a table created by an older onceonly that lacks a column this one writes: the
 * statement failed on an unknown column. Only the steps column is added by autoCreate (on first use).
 */
export function outdatedTableFix(
  { names, outdated, autoCreate }: SqlErrorContext,
  migration: string,
): string {
  // An inbox's context names its one table as both (it has no grace_ms).
  const keys = names.keys !== names.versions;
  const adds = [
    ...(outdated === undefined ? [] : [`for durable steps (ctx.step): ${outdated}`]),
    ...(keys
      ? [
          `for the released-record grace: ALTER TABLE ${names.keys} ADD COLUMN grace_ms BIGINT NOT NULL DEFAULT 0`,
        ]
      : []),
  ];
  const autoCreates =
    outdated !== undefined && !autoCreate
      ? ' (or turn autoCreate on, which adds the steps column on first use)'
      : '';
  return `the table ${names.keys} was created by an older onceonly and lacks a column this version writes: compare it with ${migration} and add what is missing (${adds.join('; ')})${autoCreates}, or drop and recreate it`;
}

/** What a driver's error means, by the dialect's rules. */
export const sqlFault = (dialect: SqlErrorDialect, err: unknown): SqlFault => ruleFor(dialect, err).fault;

function ruleFor(dialect: SqlErrorDialect, err: unknown): Pick<SqlErrorRule, 'fault' | 'fix'> {
  const key = dialect.key(err);
  if (key === undefined) return { fault: dialect.codeless };
  const message = err instanceof Error ? err.message : String(err);
  for (const rule of dialect.rules) {
    const code = typeof rule.code === 'string' ? rule.code === key : rule.code.test(key);
    if (code && (!rule.message || rule.message.test(message))) return rule;
  }
  return { fault: 'transient' };
}

/**
 * A SQL store's driver error as the error onceonly throws: a {@link StoreMisconfiguredError} with
 * its own code and fix when the store is set up wrongly, else a {@link StoreUnavailableError} that
 * points at the server (never at tables or autoCreate). The driver's error is the cause.
 */
export function sqlStoreError(
  dialect: SqlErrorDialect,
  context: SqlErrorContext,
  err: unknown,
): StoreUnavailableError {
  if (err instanceof StoreUnavailableError) return err;
  const rule = ruleFor(dialect, err);
  const fault = rule.fault;
  const migration = `${dialect.migration}(${context.defaultTable ? '' : `'${context.table}'`})`;
  const fix = typeof rule.fix === 'function' ? rule.fix(context, migration) : rule.fix;
  const shown = dialect.shown(err);
  const said = `${shown ? ` (${shown})` : ''}: ${err instanceof Error ? err.message : String(err)}`;
  const store = `onceonly: ${dialect.store} store`;
  const { names } = context;
  // One table (an inbox's) or the two of the claims.
  const tables =
    names.keys === names.versions ? `table ${names.keys}` : `tables ${names.keys} and ${names.versions}`;
  const misconfigured = (code: MisconfigurationCode, message: string) =>
    new StoreMisconfiguredError(code, message, { cause: err });
  switch (fault) {
    case 'unreachable':
      return new StoreUnavailableError(
        `${store} could not reach the server${context.setup ? '' : ` to ${context.action}`}${said}; ${fix ?? 'check that the server is running and reachable from this process, and accepts connections'}`,
        { cause: err },
      );
    case 'transient':
      return new StoreUnavailableError(
        `${store} could not ${context.action}${said}; ${fix ?? dialect.fixes.transient}`,
        {
          cause: err,
        },
      );
    case 'store_auth_failed':
      return misconfigured(
        fault,
        `${store} could not log in to the server${said}; ${fix ?? dialect.fixes.auth}`,
      );
    case 'store_unknown_database':
      return misconfigured(
        fault,
        `${store} could not open its database${said}; ${fix ?? dialect.fixes.unknownDatabase}`,
      );
    case 'store_permission_denied':
      return misconfigured(
        fault,
        `${store} could not ${context.action}${said}; ${fix ?? dialect.fixes.permission(names, context.setup === true, migration)}`,
      );
    case 'store_missing_table': {
      let why: string;
      if (fix) why = fix;
      else if (!context.autoCreate)
        why = `its ${tables} must exist, and autoCreate is off: create them with ${migration} in your migrations, or turn autoCreate on`;
      else
        why = `its ${tables} ${names.keys === names.versions ? 'is missing although autoCreate is on: it was' : 'are missing although autoCreate is on: they were'} dropped after this process created them. Create them again with ${migration}, or restart the process`;
      return misconfigured(fault, `${store} could not ${context.action}${said}; ${why}`);
    }
    default:
      return misconfigured(fault, `${store} could not ${context.action}${said}`);
  }
}

/**
 * A SQL store's health from one round trip: the server's clock (ms since the epoch; NaN when the
 * store has no clock of its own) and whether each of its tables was found. With `autoCreate` a
 * missing table is named but not unhealthy: the store makes it on first use, and a readiness probe
 * that failed until then would keep away the very deliveries that make it.
 */
export function sqlHealth(nowMs: number, tables: Record<string, unknown>, autoCreate = false): StoreHealth {
  const missing = Object.entries(tables)
    .filter(([, found]) => !(found === true || found === 1 || found === '1' || found === 't'))
    .map(([name]) => name);
  return {
    now: Number.isFinite(nowMs) ? new Date(nowMs) : undefined,
    checks: [
      missing.length === 0
        ? { name: 'tables', ok: true, detail: Object.keys(tables).join(', ') }
        : autoCreate
          ? {
              name: 'tables',
              ok: true,
              detail: `not created yet: ${missing.join(', ')} (autoCreate makes them on first use)`,
            }
          : {
              name: 'tables',
              ok: false,
              detail: `missing: ${missing.join(', ')} (create them with the store's migration, or let autoCreate make them on first use)`,
            },
    ],
  };
}
