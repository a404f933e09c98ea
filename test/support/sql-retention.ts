/**
 * One case for the three SQL stores: purgeExpired keeps a released or run-out row for its claim's
 * retentionMs past leaseGraceMs (so the attempt still rises), then deletes it; leaseGraceMs stays a
 * floor for rows whose retention is shorter.
 */
import { strict as assert } from 'node:assert';
import type { Store } from '../../src/core/types.js';
import type { PurgeOptions } from '../../src/stores/sql.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function purgeKeepsRetention(
  store: Store & { purgeExpired(options?: PurgeOptions): Promise<number> },
): Promise<void> {
  // Prepare: two takeable rows claimed with a long retention, one with a short one.
  await store.claim('ran-out', { leaseMs: 1, retentionMs: 60_000, fingerprint: 'a' });
  const failed = await store.claim('released', { leaseMs: 60_000, retentionMs: 60_000 });
  assert.ok(failed.status === 'acquired' && (await store.release(failed.lease)));
  await store.claim('short', { leaseMs: 1, retentionMs: 1 });
  await sleep(50);
  // Act
  const deleted = await store.purgeExpired({ leaseGraceMs: 0 });
  // Assess: only the short one; the others still raise the attempt.
  assert.equal(deleted, 1);
  assert.equal(await store.inspect('short'), undefined);
  assert.equal((await store.inspect('released'))?.state, 'released');
  const takeover = await store.claim('ran-out', { leaseMs: 60_000, fingerprint: 'a' });
  assert.equal(takeover.status === 'acquired' && takeover.lease.attempt, 2);
  const retry = await store.claim('released', { leaseMs: 60_000 });
  assert.equal(retry.status === 'acquired' && retry.lease.attempt, 2);
  // leaseGraceMs stays a floor for rows whose retention is shorter.
  await store.claim('floor', { leaseMs: 1, retentionMs: 1 });
  await sleep(50);
  assert.equal(await store.purgeExpired({ leaseGraceMs: 60_000 }), 0);
  assert.equal((await store.inspect('floor'))?.attempt, 1);
}
