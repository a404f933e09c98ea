/**
 * redisStore on Valkey 8.1, whose `SET ... IFEQ` lets a confirm be one plain command instead of the
 * owner-checked script (Redis 7 has no such SET). The server is a Valkey of the test's own, from
 * Debian's packages (scripts/valkey.sh, run here the first time). Covered: both conformance suites
 * and the multi-process races on it; which path a confirm takes (native on Valkey, the script on the
 * shared Redis 7), and that every key no longer holding exactly what its claim wrote (renewed, taken
 * over, confirmed, gone, or a lease the store did not hand out) goes to the script, which decides as
 * on Redis 7.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { checkHealth } from '../../src/lease/health.js';
import type { Lease, Store } from '../../src/lease/types.js';
import { type NodeRedisLike, redisStore } from '../../src/stores/redis.js';
import { runConformance, runInboxConformance } from '../../src/testing/index.js';
import { assertExactlyOnce, RACE_EVENTS, runCrash, runRace, runReleaseRace } from '../support/race.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { reachable, servers } from '../support/servers.js';
import { valkeyServer } from '../support/valkey.js';

const LONG = 60_000;
const prefix = `oo-valkey-${randomBytes(4).toString('hex')}:`;
const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));

/**
 * The client, with every command it sends named in `sent`: a SET ... IFEQ as such, and a script run
 * (EVALSHA, or EVAL after NOSCRIPT on a fresh server) as `script`.
 */
function recording(client: ReturnType<typeof createClient>, sent: string[]): NodeRedisLike {
  const proxy = Object.create(client) as NodeRedisLike;
  proxy.sendCommand = ((args: string[]) => {
    const name = args[0] === 'SET' && args.includes('IFEQ') ? 'SET IFEQ' : args[0]!;
    if (name !== 'EVAL' || sent.at(-1) !== 'script') sent.push(name.startsWith('EVAL') ? 'script' : name);
    return client.sendCommand(args);
  }) as NodeRedisLike['sendCommand'];
  return proxy;
}

/** What the store's health check says of its compare-and-set. */
async function casHealth(store: Store): Promise<string> {
  const report = await checkHealth(store, { timeoutMs: 5_000, maxClockSkewMs: 60_000 });
  return report.checks.find((c) => c.name === 'compare-and-set')?.detail ?? '(no such check)';
}

function acquired(claim: Awaited<ReturnType<ReturnType<typeof redisStore>['claim']>>): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<typeof claim, { status: 'acquired' }>).lease;
}

let binary = '';
if (
  await reachable('Valkey 8.1 server (bash scripts/valkey.sh)', '.tmp/valkey/valkey-server', async () => {
    binary = await valkeyServer();
  })
) {
  // Starting is awaited here: a failure fails the file (it never skips once the binary is there).
  const valkey: RedisInstance = await startRedisInstance({ server: binary, persist: false });
  const nodeRedis = await createClient({ url: valkey.url }).connect();
  const ioredis = new Redis(valkey.url);
  const redis7 = await createClient({ url: servers.redis }).connect();
  after(async () => {
    await Promise.allSettled([nodeRedis.quit(), ioredis.quit()]);
    for await (const keys of redis7.scanIterator({ MATCH: `${prefix}*`, COUNT: 1000 })) {
      if (keys.length > 0) await redis7.unlink(keys);
    }
    await redis7.quit();
    await valkey.destroy();
  });
  assert.match(await valkey.cli('info', 'server'), /valkey_version:8\.[1-9]/, 'the server is Valkey 8.1+');

  await runConformance({
    name: 'redisStore conformance on Valkey 8.1 (node-redis)',
    factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:`, leaseGrace: 1 }),
    runner: { describe, it },
  });
  await runConformance({
    name: 'redisStore conformance on Valkey 8.1 (ioredis)',
    factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:` }),
    runner: { describe, it },
  });
  await runInboxConformance({
    name: 'redisStore inbox conformance on Valkey 8.1 (node-redis)',
    factory: () =>
      redisStore({ client: nodeRedis, prefix: `${prefix}inbox:`, checkEvictionPolicy: false }).inbox!,
    runner: { describe, it },
  });

  describe('redisStore confirm: native compare-and-set where the server has it', () => {
    async function counted(client: ReturnType<typeof createClient>, name: string) {
      const sent: string[] = [];
      const storePrefix = `${prefix}${name}-${randomBytes(3).toString('hex')}:`;
      const store = redisStore({
        client: recording(client, sent),
        prefix: storePrefix,
        checkEvictionPolicy: false,
      });
      // The first claim reads the clock and asks the server about IFEQ, in its own round trip.
      acquired(await store.claim('warm-up', { leaseMs: LONG }));
      assert.deepEqual(sent.splice(0), ['TIME', 'SET IFEQ', 'SET']);
      return { store, sent, storePrefix };
    }

    it('on Valkey 8.1 a confirm is one SET ... IFEQ, and the health check says so', async () => {
      const { store, sent } = await counted(nodeRedis, 'native');
      const lease = acquired(await store.claim('evt', { leaseMs: LONG, fingerprint: 'f'.repeat(64) }));
      sent.splice(0);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET IFEQ']);
      const view = await store.inspect('evt');
      assert.equal(view?.state, 'completed');
      assert.equal(view?.fingerprint, 'f'.repeat(64));
      assert.equal(view?.attempt, 1);
      // A duplicate finds it completed, with the same fingerprint.
      assert.deepEqual(await store.claim('evt', { leaseMs: LONG, fingerprint: 'f'.repeat(64) }), {
        status: 'completed',
        sameFingerprint: true,
      });
      assert.match(await casHealth(store), /^native/);
    });

    it('on Redis 7 the server says no to IFEQ: a confirm is the script, and the health check says so', async () => {
      const { store, sent } = await counted(redis7, 'redis7');
      const lease = acquired(await store.claim('evt', { leaseMs: LONG }));
      sent.splice(0);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      assert.match(await casHealth(store), /^Lua/);
    });

    it('a renewed lease, a repeated confirm, a lease the store did not hand out: the script decides, as on Redis 7', async () => {
      const { store, sent } = await counted(nodeRedis, 'fallback');
      // Renewed: the key holds a new lease end, so the claim's value no longer matches.
      const renewed = acquired(await store.claim('renewed', { leaseMs: LONG }));
      assert.equal(await store.extend(renewed, { leaseMs: 2 * LONG }), true);
      sent.splice(0);
      assert.equal(await store.confirm(renewed, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      assert.equal((await store.inspect('renewed'))?.state, 'completed');
      sent.splice(0);
      // Repeated: the completed key is not what the claim wrote; the script finds the owner's id on it.
      assert.equal(await store.confirm(renewed, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      const twice = acquired(await store.claim('twice', { leaseMs: LONG }));
      assert.equal(await store.confirm(twice, { retentionMs: LONG }), true);
      assert.equal(await store.confirm(twice, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET', 'SET IFEQ', 'SET IFEQ', 'script']);
      // A copy of a lease (serialized, rebuilt): the store knows nothing of what it wrote for it.
      const original = acquired(await store.claim('copy', { leaseMs: LONG }));
      sent.splice(0);
      assert.equal(await store.confirm({ ...original }, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      // A forged token on the copy is refused by the script.
      const forged = acquired(await store.claim('forged', { leaseMs: LONG }));
      sent.splice(0);
      assert.equal(await store.confirm({ ...forged, token: 'f'.repeat(32) }, { retentionMs: LONG }), false);
      assert.equal((await store.inspect('forged'))?.state, 'processing');
    });

    it('a lease taken over after it ran out cannot confirm; a key that vanished is completed by its owner (invariant 3)', async () => {
      const { store, sent, storePrefix } = await counted(nodeRedis, 'taken');
      // Prepare: a lease of 300 ms that runs out, and a takeover (attempt 2).
      const stale = acquired(await store.claim('evt', { leaseMs: 300, retentionMs: LONG }));
      await new Promise((resolve) => setTimeout(resolve, 450));
      const current = acquired(await store.claim('evt', { leaseMs: LONG, retentionMs: LONG }));
      assert.equal(current.attempt, 2, 'the fault landed: the lease ran out and was taken over');
      sent.splice(0);
      // Act, Assert: the IFEQ of the stale owner fails, and so does the script.
      assert.equal(await store.confirm(stale, { retentionMs: LONG }), false);
      assert.deepEqual(sent.splice(0), ['SET IFEQ', 'script']);
      assert.equal((await store.inspect('evt'))?.state, 'processing');
      sent.splice(0);
      assert.equal(await store.confirm(current, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET IFEQ']);
      // A key gone before its confirm (deleted under the store): the work is done, so it completes.
      const gone = acquired(await store.claim('gone', { leaseMs: LONG }));
      assert.equal(await nodeRedis.del(`${storePrefix}k:gone`), 1, 'the fault landed: the key is gone');
      sent.splice(0);
      assert.equal(await store.confirm(gone, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET IFEQ', 'script']);
      assert.equal((await store.inspect('gone'))?.state, 'completed');
    });
  });

  describe('redisStore on Valkey 8.1 across processes', () => {
    // The race workers open their clients on the Valkey server (race-spec.ts reads this).
    process.env.ONCEONLY_RACE_REDIS_URL = valkey.url;

    it('4 processes racing RACE_EVENTS events with 3 deliveries each write exactly one effect per event', async () => {
      const report = await runRace({ spec, processes: 4, events: RACE_EVENTS, deliveries: 3 });
      assertExactlyOnce(report);
    });

    it('a SIGKILLed lease holder blocks as in-flight, then is taken over with attempt 2', async () => {
      await runCrash({ spec, leaseMs: 1500 });
    });

    it('4 processes releasing and claiming one key 25 times each: attempts 1..100, strictly increasing', async () => {
      await runReleaseRace({ spec, processes: 4, rounds: 25 });
    });
  });
}
