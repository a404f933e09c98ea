/**
 * Durable steps in the SQL stores (see StepStore in core/steps.ts): a nullable `steps` column in the
 * claims table and in the inbox table, holding a JSON object of step name to result. A save is one
 * UPDATE that checks the owner and merges the one name into the object on the server (concurrent
 * saves of other names all land); a load reads the column. What differs between the databases (the
 * column's type, the merge, the errors of a missing or duplicate column) is {@link SqlStepsDialect}.
 */

import type { StepStore } from '../../core/steps.js';
import type { Lease } from '../../core/types.js';
import { type SqlErrorDialect, sqlFault } from '../sql.js';
import { type Awaitable, guarded, then } from './awaitable.js';

/** A database's words for the `steps` column. */
export interface SqlStepsDialect {
  /** The column's type (nullable: NULL is no steps). */
  readonly type: string;
  /**
   * The column with one more name set: `name` and `value` are the placeholders of the two. Built by
   * the database's JSON functions, never as a JSON path from the name.
   */
  merge(name: string, value: string): string;
  /** The error of a statement that names a column the table lacks. */
  missing(err: unknown): boolean;
  /** The error of adding a column the table has already (another process added it first). */
  duplicate(err: unknown): boolean;
}

/** The statement that adds the column to a table made by an older onceonly, without it. */
export const addStepsColumn = (steps: SqlStepsDialect, table: string): string =>
  `ALTER TABLE ${table} ADD COLUMN steps ${steps.type}`;

/**
 * Adds the `steps` column to `table` when it lacks it (autoCreate, on first use): looked up first,
 * so a table that has it is never altered, and another process adding it at the same time is no
 * error. An ALTER refused for good (a role that may not alter a table it does not own) is left to
 * the statements that need the column, which then fail naming the ALTER to run. Errors that
 * may pass (the connection) are thrown, so the next use tries again; any other error of the look-up
 * is left to the statements that meet it.
 */
export function upgradeSteps(
  steps: SqlStepsDialect,
  errors: SqlErrorDialect,
  table: string,
  run: (text: string) => Awaitable<unknown>,
): Awaitable<void> {
  const passing = (err: unknown) => {
    const fault = sqlFault(errors, err);
    return fault === 'unreachable' || fault === 'transient';
  };
  return guarded(
    () => then(run(`SELECT steps FROM ${table} WHERE 1 = 0`), () => undefined),
    (err) => {
      if (!steps.missing(err)) {
        // Refused for good (a role without privileges on the table): the store's own statements
        // report it, as without the look-up.
        if (passing(err)) throw err;
        return;
      }
      return guarded(
        () => then(run(addStepsColumn(steps, table)), () => undefined),
        (refused) => {
          if (!steps.duplicate(refused) && passing(refused)) throw refused;
        },
      );
    },
  );
}

const EMPTY: ReadonlyMap<string, string> = new Map();

/** The steps of a `steps` column's value (JSON text, or NULL for none), by name. */
export function stepsOf(column: unknown): ReadonlyMap<string, string> {
  if (column == null) return EMPTY;
  const text = column instanceof Uint8Array ? Buffer.from(column).toString('utf8') : String(column);
  const object: unknown = JSON.parse(text);
  const steps = new Map<string, string>();
  if (typeof object === 'object' && object !== null) {
    for (const [name, value] of Object.entries(object)) if (typeof value === 'string') steps.set(name, value);
  }
  return steps;
}

/**
 * A store's steps over its two statements: `load` gives the `steps` column of the lease's key (or
 * undefined: no row), `save` whether the owner's merge was written. No real token is empty.
 */
export function sqlStepStore(
  load: (lease: Lease) => Awaitable<unknown>,
  save: (lease: Lease, name: string, value: string) => Awaitable<boolean>,
): StepStore {
  return {
    load: async (lease) => stepsOf(await load(lease)),
    save: async (lease, name, value) => lease.token !== '' && save(lease, name, value),
  };
}
