/**
 * The SQL inbox's parts (see sql-inbox.ts): what differs between the dialects, as data, and the
 * driver calls a store supplies.
 */

import type { WatchChannel } from '../inbox-watch.js';
import type { SqlErrorDialect } from '../sql.js';
import type { SqlStepsDialect } from './steps.js';

export type Row = Record<string, unknown>;

/** Hex digits of a taken row's old due time in its token: milliseconds up to the year 10889. */
export const DUE_HEX = 13;

/** An entry's `state`: queued (pending or processing), completed, dead. */
export const STATE = { queued: 0, completed: 1, dead: 2 } as const;

/** What differs between the SQL dialects, as data. */
export interface SqlInboxDialect {
  /** The error table of the store, and the function that prints the inbox table's DDL. */
  readonly errors: SqlErrorDialect;
  /** The `steps` column (the claims table's words). */
  readonly steps: SqlStepsDialect;
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
  /**
   * Plain accepts (no claim) asked for while one is out go together as one multi-row INSERT: an
   * accept's own transaction and round trip cost about 290 µs of the machine's CPU (PostgreSQL,
   * MariaDB), a row in a batch of 8 about 90. `returning`: `INSERT ... RETURNING entry_key` tells
   * which rows were new (PostgreSQL). `all-or-nothing`: the `INSERT IGNORE` runs in a transaction,
   * committed when it wrote every row, else rolled back and sent again one accept at a time (MySQL,
   * which has no `RETURNING`). Absent on SQLite, whose statements run in the process with nothing
   * to share.
   */
  readonly acceptMany?: 'returning' | 'all-or-nothing' | undefined;
  /** `DELETE ... LIMIT n` (MySQL), or through a subquery on the key. */
  readonly deleteLimit: boolean;
  /**
   * A retry or requeue (a write that may make an entry due) as one statement that also tells the
   * inbox's watchers (PostgreSQL: `pg_notify` over its `RETURNING`), returning one row per row
   * changed; absent where the store has no cross-process watch. (An accept notifies after its
   * statement instead, through the driver's `notify`: see sql/core.ts.)
   */
  readonly wake?: ((write: string, names: InboxTableNames) => string) | undefined;
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
  /** How to open the inbox's watch connection (PostgreSQL's LISTEN), where the client can. */
  readonly watch?: WatchChannel | undefined;
  /** Tells the watchers of every process that an entry of `receiver` was accepted (`pg_notify`). */
  readonly notify?: ((receiver: string) => Promise<unknown>) | undefined;
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
