/**
 * Time this process does not see pass, while the store's clock does.
 *
 * A host that sleeps while a handler runs (a laptop lid): Node's monotonic clock stops, the store's
 * clock, on another host, does not. The lease runs out, a takeover runs the work at attempt 2,
 * fails and releases, and the released record expires. On the monotonic clock alone the handler
 * would have ended within its deadline and been confirmed: the confirm would write the vanished key
 * completed (invariant 3's rule), and the provider's retry would be turned away though the only run
 * that got past the fence failed. Its deadline is read on a clock that counts the suspend: the run
 * is past it, released, never confirmed.
 *
 * An event loop stalled during a failed confirm's backoff, past the lease: the retry must not go out
 * after it (invariant 7), or it would complete a record a takeover is about to claim.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { createClient } from 'redis';
import type { Claim, Lease } from '../../src/core/types.js';
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

describe('time the process does not see pass (Redis 7)', { skip: !client, timeout: 60_000 }, () => {
  it('a suspend inside the handler, past its deadline and lease: timed out and released, never confirmed; the retry gets in', async () => {
    const inner = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    const takeover = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    const calls: string[] = [];
    const store = wrapStore(inner, (method) => {
      calls.push(method);
    });
    const key = 'suspended-handler';
    const LEASE = 600;
    const TIMEOUT = 300;
    const RETENTION = 300; // also the released record's grace: it expires soon after the release
    let slept: { monoMs: number; wallMs: number } | undefined;
    let monoInHandler = Number.NaN;
    let takenOver: Lease | undefined;
    // The handler's own end (the engine may answer first: at its deadline, once the suspend is over).
    let handlerEnded!: () => void;
    const ended = new Promise<void>((resolve) => {
      handlerEnded = resolve;
    });

    const result = await once(
      store,
      key,
      async () => {
        const monoStart = performance.now();
        try {
          slept = await whileSuspended(async () => {
            await sleep(LEASE + 150); // the lease runs out on the server
            takenOver = acquired(await takeover.claim(key, { leaseMs: LEASE, retentionMs: RETENTION }));
            assert.equal(await takeover.release(takenOver), true); // its run failed
            await sleep(RETENTION + 300); // the released record expires
            assert.equal(await inner.inspect(key), undefined, 'the key vanished');
          });
          monoInHandler = performance.now() - monoStart;
        } finally {
          handlerEnded(); // a failed step above shows in the checks below, never as a hang
        }
      },
      { lease: `${LEASE}ms`, timeout: `${TIMEOUT}ms`, retention: `${RETENTION}ms`, logger: false },
    );

    await ended;
    // The suspend happened: on the monotonic clock the handler ended well within its deadline,
    // while in real time its lease ran out and a takeover ran (attempt 2).
    assert.ok(monoInHandler < TIMEOUT / 2, `the handler took ${monoInHandler} ms on the monotonic clock`);
    assert.ok(slept && slept.wallMs >= LEASE + RETENTION + 400, JSON.stringify(slept));
    assert.equal(takenOver?.attempt, 2);
    // The answer: past the deadline, released, never confirmed.
    assert.equal(result.outcome, 'failed');
    assert.equal(result.outcome === 'failed' && (result.error as Error).name, 'HandlerTimeoutError');
    await sleep(500);
    assert.deepEqual(
      calls.filter((c) => c !== 'inspect'),
      ['claim', 'release'],
    );
    // The provider's retry gets in (confirmed, the key would read completed).
    assert.equal((await inner.claim(key, { leaseMs: LEASE, retentionMs: RETENTION })).status, 'acquired');
  });

  it("a handler still waiting after a suspend is timed out at the wheel's first tick, not its deadline's monotonic rest", async () => {
    const inner = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    const key = 'suspended-waiting';
    const LEASE = 3_000;
    const TIMEOUT = 2_000;
    let resumedAt = Number.NaN;
    let slept: { monoMs: number; wallMs: number } | undefined;
    const result = await once(
      inner,
      key,
      async ({ signal }) => {
        slept = await whileSuspended(async () => {
          await sleep(LEASE + 200);
        });
        resumedAt = performance.now();
        // Then it waits for its signal (as a handler on a slow call would), at most 5 s.
        await new Promise<void>((resolve) => {
          const stop = setTimeout(resolve, 5_000);
          signal.addEventListener('abort', () => {
            clearTimeout(stop);
            resolve();
          });
        });
      },
      { lease: `${LEASE}ms`, timeout: `${TIMEOUT}ms`, logger: false },
    );
    const answeredIn = performance.now() - resumedAt;
    // The suspend happened (the monotonic clock stood still through it), and on that clock alone
    // the deadline was still 2 s away: it came at the wheel's first tick after the resume instead.
    // (Wall time is read in whole ms: 3,199 of a 3,200 ms sleep has been seen; past the lease is what counts.)
    assert.ok(slept && slept.monoMs < 50 && slept.wallMs >= LEASE + 150, JSON.stringify(slept));
    assert.equal(result.outcome, 'failed');
    assert.equal(result.outcome === 'failed' && (result.error as Error).name, 'HandlerTimeoutError');
    assert.ok(answeredIn < TIMEOUT / 2, `answered ${answeredIn} ms after the resume`);
  });

  it("a stall during a failed confirm's backoff, past the lease: no retry after it, and a competitor takes over", async () => {
    const inner = redisStore({ client: client!, prefix, checkEvictionPolicy: false });
    const LEASE = 1_000;
    // The first confirm fails as a store error would (it never reaches the server); 5 ms later,
    // inside the engine's 25 ms backoff, the event loop stalls past the lease's end.
    let confirms = 0;
    let stalled = 0;
    const store = wrapStore(inner, (method) => {
      if (method !== 'confirm' || confirms++ > 0) return;
      setTimeout(() => {
        const from = process.hrtime.bigint();
        const ms = () => Number(process.hrtime.bigint() - from) / 1e6;
        while (ms() < LEASE + 100);
        stalled = ms();
      }, 5);
      throw new Error('ECONNRESET');
    });
    const key = 'stalled-confirm';
    const result = await once(store, key, () => 'done', {
      lease: `${LEASE}ms`,
      timeout: '200ms',
      retention: '1h',
      logger: false,
    });
    // The stall happened, and the retry would have gone out after it (the first try failed at once).
    assert.ok(stalled >= LEASE + 100, `stalled ${stalled} ms`);
    assert.equal(result.outcome === 'processed' && result.degraded, 'confirm-failed');
    await sleep(500);
    assert.equal(confirms, 1, 'no confirm try after the lease ran out');
    // The lease ran out unconfirmed: a competitor takes over at attempt 2 (a late retry would have
    // written the key completed under it).
    const competitor = await inner.claim(key, { leaseMs: LEASE, retentionMs: 3_600_000 });
    assert.equal(competitor.status, 'acquired');
    assert.equal(acquired(competitor).attempt, 2);
  });
});
