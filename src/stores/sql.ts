/** What the SQL stores share: table names and what `purgeExpired()` deletes, in what batches. */
import { ConfigError } from '../errors.js';

export interface PurgeOptions {
  /**
   * A lease that ran out and nobody took over is kept this long past its expiry, so that a takeover
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
