/**
 * `kyselyTx` and `drizzleTx` of the SQL stores, built once: a statement of the store run through
 * the caller's Kysely or Drizzle transaction. Each store's entry file only shapes the answer the way
 * its driver would have given it.
 */

import { type DrizzleSqlTag, drizzleStatement, requireDrizzleTx } from '../sql.js';

/** What a Kysely `Transaction` (or `Kysely` instance) is asked: a compiled raw query. */
export interface KyselyRawExecutor<R> {
  executeQuery(query: {
    readonly sql: string;
    readonly parameters: readonly unknown[];
    readonly query: {
      readonly kind: 'RawNode';
      readonly sqlFragments: readonly string[];
      readonly parameters: readonly [];
    };
    readonly queryId: { readonly queryId: string };
  }): Promise<R>;
}

/**
 * Runs a statement through Kysely as the compiled raw query `CompiledQuery.raw(text, values)` builds.
 * `next` numbers the queries (each needs its own id).
 */
export function kyselyRaw<R>(
  trx: KyselyRawExecutor<R>,
  next: () => number,
): (text: string, values: readonly unknown[]) => Promise<R> {
  return (text, values) =>
    trx.executeQuery({
      sql: text,
      parameters: values,
      query: { kind: 'RawNode', sqlFragments: [text], parameters: [] },
      queryId: { queryId: `onceonly-${next()}` },
    });
}

/** Numbers a transaction's queries from 1. */
export function counter(): () => number {
  let n = 0;
  return () => ++n;
}

/**
 * Runs a statement through a Drizzle transaction's own `method` (`execute`, or `all` on
 * better-sqlite3), built with Drizzle's `sql` tag so every value is a bound parameter. Checks first
 * that `tx` is a transaction and `sql` the tag; `from` names where the tx comes from, for the error.
 */
export function drizzleRaw<M extends 'execute' | 'all'>(
  tx: { [K in M]: (query: any) => unknown },
  sql: DrizzleSqlTag,
  method: M,
  from: string,
  placeholder: 'dollar' | 'question',
): (text: string, values: readonly unknown[]) => unknown {
  requireDrizzleTx(tx, sql, method, from);
  return (text, values) => tx[method](drizzleStatement(sql, text, values, placeholder));
}
