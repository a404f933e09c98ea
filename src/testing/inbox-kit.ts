/**
 * What the inbox conformance cases share: their context and case types, and the helpers that make
 * an entry and take the due ones.
 */
import { strict as assert } from 'node:assert';
import type { InboxAcceptInput, InboxJob, InboxStore } from '../core/inbox.js';

/** What each inbox conformance case receives. */
export interface InboxCaseContext {
  /** A key unique to this case and run. */
  key(suffix?: string): string;
  /** A receiver name unique to this case and run: `take` and `stats` are scoped to it. */
  receiver: string;
  /** Lease length short enough to wait out in a test (ms). */
  shortMs: number;
  /** Waits long enough for a `shortMs` lease or delay to run out on any store's clock. */
  waitOut(): Promise<void>;
  /** A fresh inbox over the same backing data (closed by the suite). */
  inbox(): Promise<InboxStore>;
  /** The largest delivery the inbox keeps (bytes), when it keeps less than a few MB (DynamoDB). */
  maxDeliveryBytes?: number | undefined;
}

export interface InboxConformanceCase {
  name: string;
  run(inbox: InboxStore, ctx: InboxCaseContext): Promise<void>;
}

export const LONG = 60_000;
export const fp = (c: string) => c.repeat(64);

export function entry(
  ctx: InboxCaseContext,
  key: string,
  overrides: Partial<InboxAcceptInput> = {},
): InboxAcceptInput {
  return {
    key,
    receiver: ctx.receiver,
    fingerprint: fp('a'),
    type: 'thing.created',
    id: `evt_${key.slice(-12)}`,
    body: new TextEncoder().encode(JSON.stringify({ key })),
    headers: [
      ['content-type', 'application/json'],
      ['x-signature', 'sig'],
    ],
    url: 'https://example.com/hooks?x=1',
    receivedAt: new Date(1_764_000_000_123),
    ...overrides,
  };
}

export async function takeAll(inbox: InboxStore, ctx: InboxCaseContext, leaseMs = LONG): Promise<InboxJob[]> {
  return inbox.take({ limit: 100, leaseMs, receiver: ctx.receiver });
}

export async function takeOne(inbox: InboxStore, ctx: InboxCaseContext, leaseMs = LONG): Promise<InboxJob> {
  const jobs = await takeAll(inbox, ctx, leaseMs);
  assert.equal(jobs.length, 1, `expected one due entry, got ${jobs.length}`);
  return jobs[0]!;
}
