/**
 * The names and DDL of a SQL store's inbox table (see src/stores/sql-inbox.ts for the table's
 * life).
 */
import type { InboxTableNames, SqlInboxDialect } from './inbox-types.js';

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
  steps ${d.steps.type} NULL, -- durable steps: JSON object of name to result, until completed
  last_error ${y.text} NULL${indexes}
)${d.tableSuffix}`;
  if (d.inlineIndexes) return [table];
  return [
    table,
    `CREATE INDEX IF NOT EXISTS ${n.receiverIndex} ON ${n.indexOn} ${rcv}`,
    `CREATE INDEX IF NOT EXISTS ${n.dueIndex} ON ${n.indexOn} ${due}`,
  ];
}
