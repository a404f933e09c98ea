/**
 * The SQLite clients the store takes, and what differs between them, as data: how a database of each
 * is recognized, how it says whether a transaction is open, how a pragma is read and set, and how its
 * errors carry SQLite's result code. Preparing, running (`run`, with its `changes`) and reading
 * (`all`) a statement are the same on all three. No client is imported: a database is recognized by
 * its shape, so the package loads where a client is missing (node:sqlite before Node 22.5).
 *
 * - better-sqlite3: `db.pragma()`, `db.inTransaction`, errors with `code: 'SQLITE_BUSY'`.
 * - node:sqlite (`DatabaseSync`, Node 22.16+ and 24): pragmas as statements, `db.isTransaction`,
 *   errors with `code: 'ERR_SQLITE_ERROR'` and the extended result code as the number `errcode`.
 * - bun:sqlite (`Database`): pragmas as statements, `db.inTransaction`, errors with `code: 'SQLITE_BUSY'`.
 */

/** A prepared statement, as every client prepares one. */
export interface ClientStatement {
  run(...params: unknown[]): { changes: number | bigint };
  all(...params: unknown[]): unknown[];
}

/** A database of any of the clients, as far as their shapes agree. */
export interface ClientDatabase {
  prepare(sql: string): ClientStatement;
}

/** How the store speaks to one client's database. */
export interface SqliteClientKind {
  readonly name: 'better-sqlite3' | 'node:sqlite' | 'bun:sqlite';
  /** Whether `db` (an object with `prepare`) is this client's database. */
  is(db: Record<string, unknown>): boolean;
  /** Whether a transaction is open on the connection. */
  inTransaction(db: ClientDatabase): boolean;
  /** A pragma's value (`PRAGMA name`). */
  pragma(db: ClientDatabase, name: string): unknown;
  /** Sets a pragma (`source` is `name = value`). */
  setPragma(db: ClientDatabase, source: string): void;
}

type Pragmatic = ClientDatabase & { pragma(source: string, options?: { simple?: boolean }): unknown };

/** Pragmas as statements, for the clients without a `pragma()` method: the first column of the first row. */
const pragmaStatements = {
  pragma(db: ClientDatabase, name: string): unknown {
    const row = db.prepare(`PRAGMA ${name}`).all()[0] as Record<string, unknown> | undefined;
    return row === undefined ? undefined : Object.values(row)[0];
  },
  setPragma(db: ClientDatabase, source: string): void {
    db.prepare(`PRAGMA ${source}`).all();
  },
};

const flag = (db: ClientDatabase, name: string) => (db as unknown as Record<string, unknown>)[name] === true;

/** The clients, the first whose `is` matches a database being its client. */
export const sqliteClients: readonly SqliteClientKind[] = [
  {
    name: 'better-sqlite3',
    is: (db) => typeof db.pragma === 'function' && typeof db.inTransaction === 'boolean',
    inTransaction: (db) => flag(db, 'inTransaction'),
    pragma: (db, name) => (db as Pragmatic).pragma(name, { simple: true }),
    setPragma: (db, source) => void (db as Pragmatic).pragma(source),
  },
  {
    name: 'node:sqlite',
    // `isTransaction` is a getter that throws on a closed database: asked whether it is there, not read.
    is: (db) => 'isTransaction' in db && typeof db.exec === 'function',
    inTransaction: (db) => flag(db, 'isTransaction'),
    ...pragmaStatements,
  },
  {
    name: 'bun:sqlite',
    is: (db) =>
      typeof db.inTransaction === 'boolean' &&
      typeof db.query === 'function' &&
      typeof db.exec === 'function',
    inTransaction: (db) => flag(db, 'inTransaction'),
    ...pragmaStatements,
  },
];

/** The client `value` is a database of, if any. */
export function clientOf(value: unknown): SqliteClientKind | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const db = value as Record<string, unknown>;
  if (typeof db.prepare !== 'function') return undefined;
  return sqliteClients.find((client) => client.is(db));
}

/** SQLite's primary result codes by number (the low byte of an extended code). */
const PRIMARY: Record<number, string> = {
  1: 'ERROR',
  2: 'INTERNAL',
  3: 'PERM',
  4: 'ABORT',
  5: 'BUSY',
  6: 'LOCKED',
  7: 'NOMEM',
  8: 'READONLY',
  9: 'INTERRUPT',
  10: 'IOERR',
  11: 'CORRUPT',
  12: 'NOTFOUND',
  13: 'FULL',
  14: 'CANTOPEN',
  15: 'PROTOCOL',
  16: 'EMPTY',
  17: 'SCHEMA',
  18: 'TOOBIG',
  19: 'CONSTRAINT',
  20: 'MISMATCH',
  21: 'MISUSE',
  22: 'NOLFS',
  23: 'AUTH',
  24: 'FORMAT',
  25: 'RANGE',
  26: 'NOTADB',
  27: 'NOTICE',
  28: 'WARNING',
};

/** The extended codes the store tells apart (see sqliteErrors), by number. */
const EXTENDED: Record<number, string> = {
  261: 'BUSY_RECOVERY',
  517: 'BUSY_SNAPSHOT',
  773: 'BUSY_TIMEOUT',
  264: 'READONLY_RECOVERY',
  520: 'READONLY_CANTLOCK',
  776: 'READONLY_ROLLBACK',
  1032: 'READONLY_DBMOVED',
  1288: 'READONLY_CANTINIT',
  1544: 'READONLY_DIRECTORY',
};

/**
 * SQLite's result code of a client's error as better-sqlite3 names it (`SQLITE_BUSY`,
 * `SQLITE_READONLY_DBMOVED`): its `code` where that is one, else node:sqlite's number `errcode`.
 */
export function sqliteCode(err: unknown): string | undefined {
  const { code, errcode } = (err ?? {}) as { code?: unknown; errcode?: unknown };
  if (typeof code === 'string' && code.startsWith('SQLITE_')) return code;
  if (typeof errcode !== 'number' || !Number.isInteger(errcode) || errcode <= 0) return undefined;
  const name = EXTENDED[errcode] ?? PRIMARY[errcode & 0xff];
  return name === undefined ? undefined : `SQLITE_${name}`;
}
