/** What every conformance case shares: its context and case types, and the helpers of claims and leases. */
import { strict as assert } from 'node:assert';
import type { Claim, Lease, Store } from '../../core/types.js';

/** What each conformance case receives. */
export interface CaseContext {
  /** A key unique to this case and this run, so runs against a shared server never collide. */
  key(suffix?: string): string;
  /** Lease length short enough to wait out in a test (ms). */
  shortMs: number;
  /** Waits long enough for a `shortMs` lease or retention to run out on any store's clock. */
  waitOut(): Promise<void>;
  /** A fresh store from the factory under test (closed by the suite after the case). */
  store(): Promise<Store>;
}

export interface ConformanceCase {
  name: string;
  run(store: Store, ctx: CaseContext): Promise<void>;
}

export const LONG = 60_000;
export const fp = (c: string) => c.repeat(64);

export function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired', `expected acquired, got ${JSON.stringify(claim)}`);
  return (claim as Extract<Claim, { status: 'acquired' }>).lease;
}

/** A key whose short lease ran out and was taken over: the stale lease and the current one (attempt 2). */
export async function takenOver(
  store: Store,
  ctx: CaseContext,
): Promise<{ key: string; stale: Lease; current: Lease }> {
  const key = ctx.key();
  const stale = acquired(
    await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('a'), retentionMs: LONG }),
  );
  await ctx.waitOut();
  const current = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
  assert.equal(current.attempt, 2);
  return { key, stale, current };
}

export async function claimLong(store: Store, key: string, fingerprint?: string): Promise<Lease> {
  return acquired(await store.claim(key, { leaseMs: LONG, fingerprint }));
}
