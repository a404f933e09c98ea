/**
 * A host that sleeps while a handler runs (a laptop lid, a paused VM): Node's monotonic clock stops,
 * the store's clock, on another host, does not. The lease runs out, a takeover runs the work at
 * attempt 2, fails and releases, and the released record expires. When the host wakes up and the
 * first confirm fails, a retry must not go out (invariant 7): on the monotonic clock alone the lease
 * would still seem live, and the retry would write the vanished key completed (invariant 3's rule),
 * so the provider's retry would be turned away though the only run that got past the fence failed.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { createClient } from 'redis';
import type { Claim, Lease } from '../../src/lease/types.js';
import { once } from '../../src/once.js';
import { redisStore } from '../../src/stores/redis.js';
import { reachable, servers } from '../support/servers.js';
import { resumeClock, whileSuspended } from '../support/suspend.js';
import { wrapStore } from '../support/wrap-store.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const run = randomBytes(4).toString('hex');
const prefix = `oo-suspend-${run}:`;

const up = await reachable('Redis (host suspend)', servers.redis, async () => {
  const c = await createClient({ url: servers.redis }).connect();
  await c.quit();
});
const client = up
  ? await createClient({ url: servers.redis, disableOfflineQueue: true })
      .on('error', () => {})
      .connect()
  : undefined;

after(async () => {
  resumeClock();
  if (!client) return;
  for await (const keys of client.scanIterator({ MATCH: `${prefix}*`, COUNT: 100 })) {
    if (keys.length) await client.unlink(keys);
  }
  await client.quit();
});

function acquired(claim: Claim): Lease {
  assert.equal(claim.status, 'acquired');
  return (claim as { lease: Lease }).lease;
}

describe('a host suspended while its handler runs (Redis 7)', { skip: !client }, () => {
  it('sends no confirm retry after the lease ran out on the store, so the retry gets in', async () => {
    const inner = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    const takeover = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    // The first confirm fails as a store error would (it never reaches the server); any retry goes through.
    let confirms = 0;
    const store = wrapStore(inner, (method) => {
      if (method === 'confirm' && confirms++ === 0) throw new Error('ECONNRESET');
    });
    const key = 'evt_1';
    const LEASE = 600;
    const RETENTION = 300; // also the released record's grace: it expires soon after the release
    let slept: { monoMs: number; wallMs: number } | undefined;
    let takenOver: Lease | undefined;

    const result = await once(
      store,
      key,
      async () => {
        slept = await whileSuspended(async () => {
          await sleep(LEASE + 150); // the lease runs out on the server
          takenOver = acquired(await takeover.claim(key, { leaseMs: LEASE, retentionMs: RETENTION }));
          assert.equal(await takeover.release(takenOver), true); // its run failed
          await sleep(RETENTION + 300); // the released record expires
          assert.equal(await inner.inspect(key), undefined, 'the key vanished');
        });
      },
      { lease: `${LEASE}ms`, timeout: '300ms', retention: `${RETENTION}ms`, logger: false },
    );

    // The suspend happened: the monotonic clock stood still while the lease ran out in real time,
    // and a takeover ran (attempt 2).
    assert.ok(slept && slept.monoMs < 50 && slept.wallMs >= LEASE + RETENTION + 400, JSON.stringify(slept));
    assert.equal(takenOver?.attempt, 2);
    // The answer: the work ran, its confirm failed, and nothing more was sent, now or later.
    assert.equal(result.outcome === 'processed' && result.degraded, 'confirm-failed');
    await sleep(1_000);
    assert.equal(confirms, 1, 'no confirm retry after the lease ran out');
    // The provider's retry gets in (with a confirm retry, the key would read completed).
    assert.equal((await inner.claim(key, { leaseMs: LEASE, retentionMs: RETENTION })).status, 'acquired');
  });
});
