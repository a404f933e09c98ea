/**
 * The parts a SQL store is made of (see core.ts): a dialect, which says what to run (statements as
 * data, the claim and confirm sequences a database needs), and a driver, which says how its client
 * runs a statement.
 */

import type { Lease } from '../../core/types.js';
import type { SqlErrorDialect, TableNames } from '../sql.js';
import type { Awaitable } from './awaitable.js';
import type { InboxTableNames, SqlInboxDialect, SqlInboxDriver } from './inbox-types.js';
import type { SqlStepsDialect } from './steps.js';

/** A row as the drivers return it. */
export type Row = Record<string, unknown>;

export type { Awaitable };

/** One statement of a store. */
export interface SqlStatement {
  /** Its name (PostgreSQL's prepared statements are named after it and a hash of the text). */
  readonly name: string;
  readonly text: string;
  /** Returns rows (RETURNING or a SELECT), else reports how many rows it changed. */
  readonly rows: boolean;
  /** Runs holding the database's write lock (SQLite's `BEGIN IMMEDIATE`). */
  readonly lock?: boolean;
  /** Never a server-side prepared statement (MySQL: a LIMIT inlined into the text). */
  readonly unprepared?: boolean;
}

/** What a statement gave back, as the store reads it. */
export interface SqlOutcome {
  readonly rows: Row[];
  /** Rows it changed (deleted), as the driver counts them. */
  readonly count: number;
  /**
   * Whether it did its work: a row back (RETURNING 1 AS ok), a row changed, or on MySQL a non-zero
   * `LAST_INSERT_ID(expr)`, which each of its statements sets to say what it did.
   */
  readonly done: boolean;
  /** MySQL's `insertId` (the `LAST_INSERT_ID(expr)` of the statement), 0 elsewhere. */
  readonly id: number;
}

/** A statement and its values. */
export type SqlCall = readonly [SqlStatement, unknown[]];

/** Runs one statement on a client; errors as the driver raised them. */
export type SqlRun = (statement: SqlStatement, values: unknown[]) => Awaitable<SqlOutcome>;

/** Runs one statement of the store (tables ready first); errors as the store throws them. */
export type SqlExec = (action: string, call: SqlCall) => Awaitable<SqlOutcome>;

/** How a client runs the store's statements. */
export interface SqlDriver {
  /** The client, as the store's backend mark names it. */
  readonly client: object;
  /** One statement on the store's client, on its own (retried where the driver retries). */
  readonly run: SqlRun;
  /** Runs `fn` holding the database's write lock (SQLite), or just runs it. */
  locked<T>(fn: () => T): T;
  /** Makes the tables (once per client and table, when autoCreate is on); throws the store's error. */
  ready(): Awaitable<void>;
  /** How `record(key, { tx })` runs on `tx`; a ConfigError for anything that is not a transaction. */
  joining(tx: unknown): SqlRun;
  /** The server's clock (NaN for none) and whether each table exists: looked up, never created. */
  health(names: readonly string[]): Awaitable<{ nowMs: number; tables: Record<string, unknown> }>;
  /** The inbox's driver calls. */
  readonly inbox: SqlInboxDriver;
}

/** What a claim is asked, once for all its rounds. */
export interface SqlClaimInput {
  readonly key: string;
  readonly token: string;
  readonly leaseMs: number;
  readonly fingerprint: string | undefined;
  /** The claim's retentionMs: how long a released or run-out row is kept past its lease's end. */
  readonly graceMs: number;
}

/** What a round of a claim found: the lease taken, or the row that keeps the key. */
export type SqlClaimStep =
  | {
      readonly acquired: true;
      readonly attempt: number;
      readonly expiresMs: number;
      /** The row's id, for {@link SqlDialect.leased}. */
      readonly rowId?: unknown;
    }
  | {
      readonly acquired: false;
      readonly completed: boolean;
      readonly attempt: number;
      readonly expiresMs: number;
      readonly same: boolean;
    };

/** A row a claim found, in the words of {@link SqlClaimStep}. */
export interface SqlFoundRow {
  /** Its lease or retention runs and it has an owner (a released row has none). */
  readonly live: boolean;
  readonly completed: boolean;
  readonly attempt: number;
  readonly expiresMs: number;
  readonly fingerprint: string | undefined;
}

/** The statements of the simple operations: each one statement, its values in the dialect's order. */
export interface SqlCalls {
  release(lease: Lease): SqlCall;
  extend(lease: Lease, leaseMs: number): SqlCall;
  /** `done` when the version was stored (newer than the one there). */
  advance(entity: string, version: number): SqlCall;
  /** `done` when the key was written (not a duplicate). */
  record(key: string, token: string, fingerprint: string | undefined, retentionMs: number): SqlCall;
  /** The owner's confirm, when the dialect tries it first: `done` when the row was ours. */
  confirmOwn?(lease: Lease, retentionMs: number): SqlCall;
  inspect(key: string): SqlCall;
  stats(): SqlCall;
  oldest(limit: number): SqlCall;
  purge(graceMs: number, batch: number): SqlCall;
  purgeVersions(unusedMs: number, batch: number): SqlCall;
  /** The `steps` column of the lease's key (a row with `steps`, or none). */
  loadSteps(lease: Lease): SqlCall;
  /** One step's result merged into the key's steps when the lease owns it: `done` when written. */
  saveStep(lease: Lease, name: string, value: string): SqlCall;
}

/** What the dialect's own sequences may use of the store. */
export interface SqlSession {
  readonly exec: SqlExec;
  locked<T>(fn: () => T): T;
}

/** A database's words for the store: its statements as data, and the sequences it needs. */
export interface SqlDialect {
  /** The kind of the built-in store (`markBuiltin`); `<kind>Store` names it in option errors. */
  readonly kind: 'postgres' | 'mysql' | 'sqlite';
  readonly errors: SqlErrorDialect;
  readonly names: TableNames;
  readonly inbox: SqlInboxDialect;
  readonly inboxNames: InboxTableNames;
  /** The `steps` column: its type, the merge, its errors. */
  readonly steps: SqlStepsDialect;
  /** Whether `table` is the default one (the migration call in messages then needs no argument). */
  readonly defaultTable: boolean;
  /** The columns of the inspect and oldest rows, and the `state` of a completed row. */
  readonly columns: {
    readonly key: string;
    readonly expires: string;
    readonly updated: string;
    readonly completed: string;
  };
  /** The action of a failed version purge, in the store's error. */
  readonly purgeVersionsAction: string;
  /** No server clock to report: the database runs in this process (SQLite). */
  readonly localClock?: boolean;
  readonly calls: SqlCalls;
  /**
   * One round of a claim (called up to 10 times with the same input): a step, or undefined when
   * it lost to a write it could not see and the key must be read again.
   */
  claimRound(input: SqlClaimInput, session: SqlSession): () => Awaitable<SqlClaimStep | undefined>;
  /** A confirm (after `confirmOwn`, when there is one and it found the row not ours). */
  confirm(lease: Lease, retentionMs: number, session: SqlSession): Awaitable<boolean>;
  /** A lease handed out, and its row's id from the claim (MySQL keeps it, so as not to hash again). */
  leased?(lease: Lease, rowId: unknown): void;
}
