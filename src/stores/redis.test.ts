import { strict as assert } from 'node:assert';
import { createHash, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { after, before, describe, it, mock } from 'node:test';
import { Redis } from 'ioredis';
import { createClient, createClientPool } from 'redis';
import { redisBinaries, startRedisServer, type TestServer } from '../../test/support/redis-cluster.js';
import { recording } from '../../test/support/redis-recording.js';
import { reachable, servers } from '../../test/support/servers.js';
import { sideBySide } from '../../test/support/side-by-side.js';
import { shiftedClocks } from '../../test/support/suspend.js';
import type { Lease } from '../core/types.js';
import { ConfigError, StoreUnavailableError } from '../errors.js';
import { runConformance } from '../testing/index.js';
import { CONFIRM, EXTEND } from './redis/scripts.js';
import { crc16, slotOf, stepsKeyOf } from './redis/slots.js';
import { type IoRedisLike, type NodeRedisLike, type RedisClientLike, redisStore } from './redis.js';

/** node-redis 4, installed under the alias `redis4`: the peer range (`redis: >=4`) is what is tested. */
const createClient4 = (createRequire(import.meta.url)('redis4') as { createClient: typeof createClient })
  .createClient;
/** ioredis 5, installed under the alias `ioredis5`: the peer range (`ioredis: >=5`) is what is tested. */
const Redis5 = (createRequire(import.meta.url)('ioredis5') as { Redis: typeof Redis }).Redis;

const LONG = 60_000;

const prefix = `oo-test-${randomBytes(4).toString('hex')}:`;

function acquired(claim: Awaited<ReturnType<ReturnType<typeof redisStore>['claim']>>): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<typeof claim, { status: 'acquired' }>).lease;
}

/** Deletes every key a run wrote (the ordering guard's keys carry no TTL). */
async function deleteKeys(client: ReturnType<typeof createClient>, pattern: string): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
}

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  const nodeRedis = await createClient({ url: servers.redis }).connect();
  const nodeRedis4 = await createClient4({ url: servers.redis }).connect();
  const ioredis = new Redis(servers.redis);
  const ioredis5 = new Redis5(servers.redis);
  const pipelined = new Redis(servers.redis, { enableAutoPipelining: true });
  after(async () => {
    await deleteKeys(nodeRedis, `${prefix}*`);
    await nodeRedis.quit();
    await nodeRedis4.quit();
    ioredis.disconnect();
    ioredis5.disconnect();
    pipelined.disconnect();
  });

  // Redis before 7.0 refuses SET with both NX and GET ("syntax error"): every claim then goes
  // through the claim script, which must pass the same suite.
  const olderServer: NodeRedisLike = {
    evalSha: (sha, o) => nodeRedis.evalSha(sha, o),
    sendCommand: ((args: string[]) => {
      if (args[0] === 'SET' && args.includes('NX') && args.includes('GET'))
        return Promise.reject(new Error('ERR syntax error'));
      return nodeRedis.sendCommand(args);
    }) as NodeRedisLike['sendCommand'],
  };
  // A leaseGrace far below the cases' waits: only a claim's retentionMs can keep a record that ran
  // out or was released for its takeover (the ioredis run keeps the default grace).
  sideBySide('redisStore conformance, the clients side by side', (runner) => [
    runConformance({
      name: 'redisStore conformance (node-redis)',
      factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:`, leaseGrace: 1 }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance (node-redis 4)',
      factory: () => redisStore({ client: nodeRedis4, prefix: `${prefix}nr4:`, leaseGrace: 1 }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance (ioredis)',
      factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:` }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance (ioredis, enableAutoPipelining as docs/redis.md sets it up)',
      factory: () => redisStore({ client: pipelined, prefix: `${prefix}iop:` }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance (ioredis 5)',
      factory: () => redisStore({ client: ioredis5, prefix: `${prefix}io5:` }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance (claims by script, as on Redis 6.2)',
      factory: () =>
        redisStore({
          client: olderServer,
          prefix: `${prefix}old:`,
          checkEvictionPolicy: false,
          leaseGrace: 1,
        }),
      runner,
    }),
  ]);

  describe('redisStore on the Redis server', () => {
    it('confirms on Redis 7 in one script that compares the whole value the claim wrote first, and the owner id only when that differs', async () => {
      // Prepare: every command sent, with its arguments; scripts named by their SHA1 (an EVAL after
      // NOSCRIPT on a fresh server counts as the same run). The server is made to refuse SET ... IFEQ
      // (as Redis 7 does, whatever ONCEONLY_REDIS_URL runs), so the store confirms by script.
      // `other` (same keys, not recorded) reads and plays the competing owner.
      const calls: string[][] = [];
      const rewrite = (args: string[]) => {
        calls.push(args);
        return args.map((arg) => (arg === 'IFEQ' ? 'IFEQ-UNKNOWN' : arg));
      };
      const client = recording(nodeRedis, [], { rewrite });
      const store = redisStore({ client, prefix: `${prefix}held:`, checkEvictionPolicy: false });
      const other = redisStore({ client: nodeRedis, prefix: `${prefix}held:`, checkEvictionPolicy: false });
      const sha = (body: string) => createHash('sha1').update(body).digest('hex');
      const CONFIRM_SHA = sha(CONFIRM);
      /** The scripts a call ran, each with its ARGV. */
      const scriptsRun = () => {
        const run: { sha: string; argv: string[] }[] = [];
        for (const args of calls.splice(0)) {
          if (args[0] === 'EVALSHA') run.push({ sha: args[1]!, argv: args.slice(4) });
          else if (args[0] === 'EVAL' && run.at(-1)?.sha !== sha(args[1]!))
            run.push({ sha: sha(args[1]!), argv: args.slice(4) });
        }
        return run;
      };
      const claimed = async (key: string) => {
        const lease = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: 'f' }));
        const set = calls.find((args) => args[0] === 'SET' && args.includes('NX'))!;
        calls.splice(0);
        return { lease, key: set[1]!, value: set[2]! };
      };
      /** Asserts the confirm was one command: the confirm script, sent the claim's value or not. */
      const oneScript = (value: string | undefined) => {
        const run = scriptsRun();
        assert.deepEqual(
          run.map((r) => r.sha),
          [CONFIRM_SHA],
          'one script: a second command could land after the lease',
        );
        assert.equal(run[0]!.argv[3], value, "ARGV[4] is the claim's value, when the store kept it");
      };

      // Act, Assess: the common confirm, sent the claim's whole value.
      const first = await claimed('held-1');
      assert.equal(await store.confirm(first.lease, { retentionMs: LONG }), true);
      oneScript(first.value);
      assert.equal((await other.inspect('held-1'))?.state, 'completed');
      // Repeated: the key holds the completed value now; the script finds the owner's own id.
      assert.equal(await store.confirm(first.lease, { retentionMs: LONG }), true);
      oneScript(undefined);

      // The key gone before the confirm: written completed all the same (invariant 3: the work is
      // done, a retry must see a duplicate).
      const gone = await claimed('held-2');
      await nodeRedis.del(gone.key);
      assert.equal(await store.confirm(gone.lease, { retentionMs: LONG }), true);
      oneScript(gone.value);
      assert.equal((await other.inspect('held-2'))?.state, 'completed');

      // Released elsewhere and taken over by another owner: refused; the new owner stands.
      const lost = await claimed('held-3');
      assert.equal(await other.release(lost.lease), true);
      const taker = acquired(await other.claim('held-3', { leaseMs: LONG }));
      assert.equal(await store.confirm(lost.lease, { retentionMs: LONG }), false);
      oneScript(lost.value);
      const view = await other.inspect('held-3');
      assert.equal(view?.state, 'processing');
      assert.equal(view?.attempt, taker.attempt);

      // Renewed: the key no longer holds the claim's value, which the store no longer sends.
      const renewed = await claimed('held-4');
      assert.equal(await store.extend(renewed.lease, { leaseMs: LONG }), true);
      calls.splice(0);
      assert.equal(await store.confirm(renewed.lease, { retentionMs: LONG }), true);
      oneScript(undefined);
      assert.equal((await other.inspect('held-4'))?.state, 'completed');
    });

    it('sends a confirm script again after NOSCRIPT only before the lease ends, as last claimed or renewed (or while a renewal is out or failed, the earlier end)', async () => {
      // Prepare: the server is made to answer the confirm's EVALSHA with NOSCRIPT (a restart, a
      // failover or SCRIPT FLUSH leaves it unloaded), and that answer is held back until `lateUntil`.
      // An extend can be made to fail (a server error) or to be answered at `extendAt`.
      const calls: string[] = [];
      let lateUntil = 0;
      let extendAt = 0;
      let extendFails = false;
      const CONFIRM_SHA = createHash('sha1').update(CONFIRM).digest('hex');
      const EXTEND_SHA = createHash('sha1').update(EXTEND).digest('hex');
      const runs = (args: string[], sha: string) => args[0] === 'EVALSHA' && args[1] === sha;
      const client = recording(nodeRedis, calls, {
        rewrite: (args) =>
          runs(args, CONFIRM_SHA)
            ? ['EVALSHA', 'f'.repeat(40), ...args.slice(2)]
            : extendFails && runs(args, EXTEND_SHA)
              ? ['PING', 'x', 'y']
              : args,
        replyAt: (args) =>
          runs(args, CONFIRM_SHA) ? lateUntil : runs(args, EXTEND_SHA) ? extendAt : undefined,
      });
      const storePrefix = `${prefix}noscript:`;
      const store = redisStore({ client, prefix: storePrefix, checkEvictionPolicy: false });
      const other = redisStore({ client: nodeRedis, prefix: storePrefix, checkEvictionPolicy: false });
      // A lease of 1 s: a later command of its confirm may go out until 100 ms before its end.
      const late = async (key: string, renew: boolean) => {
        const at = performance.now();
        const lease = acquired(await store.claim(key, { leaseMs: 1_000, retentionMs: LONG }));
        if (renew) assert.equal(await store.extend(lease, { leaseMs: 1_000 }), true);
        return { lease, at };
      };

      // Act, Assert: the NOSCRIPT comes back past the margin: no EVAL, a store error.
      const first = await late('first', false);
      lateUntil = first.at + 950;
      calls.splice(0);
      await assert.rejects(store.confirm(first.lease, { retentionMs: LONG }), (err: Error) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.match(err.message, /NOSCRIPT/);
        return true;
      });
      assert.ok(performance.now() - first.at >= 900, 'the fault landed: the answer came past the margin');
      assert.deepEqual(calls, ['EVALSHA'], 'no EVAL after the margin');
      assert.equal((await other.inspect('first'))?.state, 'processing');

      // A renewed lease: the margin counts from the renewal's end.
      const renewed = await late('renewed', true);
      lateUntil = performance.now() + 950;
      calls.splice(0);
      await assert.rejects(store.confirm(renewed.lease, { retentionMs: LONG }), /NOSCRIPT/);
      assert.deepEqual(calls, ['EVALSHA'], "no EVAL after the renewed lease's margin");

      // A renewal that failed: the lease still ends when it did.
      const failed = await late('failed', false);
      extendFails = true;
      await assert.rejects(store.extend(failed.lease, { leaseMs: 1_000 }), StoreUnavailableError);
      extendFails = false;
      lateUntil = failed.at + 950;
      calls.splice(0);
      await assert.rejects(store.confirm(failed.lease, { retentionMs: LONG }), /NOSCRIPT/);
      assert.deepEqual(calls, ['EVALSHA'], 'no EVAL after a failed renewal');

      // A renewal still out when the confirm starts (the heartbeat racing the end of the handler).
      const racing = await late('racing', false);
      extendAt = performance.now() + 2_000;
      const renewal = store.extend(racing.lease, { leaseMs: 1_000 });
      lateUntil = racing.at + 950;
      calls.splice(0);
      await assert.rejects(store.confirm(racing.lease, { retentionMs: LONG }), /NOSCRIPT/);
      assert.deepEqual(calls, ['EVALSHA'], 'no EVAL while the renewal is out');
      extendAt = 0;
      await renewal;

      // Answered in time: the EVAL goes out and completes the key.
      const timely = await late('timely', false);
      lateUntil = 0;
      calls.splice(0);
      assert.equal(await store.confirm(timely.lease, { retentionMs: LONG }), true);
      assert.deepEqual(calls, ['EVALSHA', 'EVAL']);
      assert.equal((await other.inspect('timely'))?.state, 'completed');

      // Called after that point (a caller of its own; the engine never is): the script's body, one
      // command, whatever the server has loaded.
      const after = await late('after', false);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, after.at + 950 - performance.now())));
      calls.splice(0);
      assert.equal(await store.confirm(after.lease, { retentionMs: LONG }), true);
      assert.deepEqual(calls, ['EVAL'], 'one command');

      // The host slept past the lease right after the claim: the wall and boot clocks moved 2 s,
      // the monotonic one did not (CLOCK_MONOTONIC stops in a suspend). The lease counts as over: one
      // command, never an EVALSHA whose NOSCRIPT would send an EVAL after the lease.
      const slept = await late('slept', false);
      const clocks = shiftedClocks();
      clocks.wallMs = 2_000;
      clocks.bootMs = 2_000;
      try {
        calls.splice(0);
        assert.equal(await store.confirm(slept.lease, { retentionMs: LONG }), true);
        assert.ok(
          performance.now() - slept.at < 900,
          'the monotonic clock still put the lease within its margin',
        );
        assert.deepEqual(calls, ['EVAL'], 'one command after a suspend');
      } finally {
        clocks.restore();
      }
    });

    it('claims a free key with one plain SET NX PX GET, answers a completed key and a live lease the same way (a PTTL only for a token without its lease end), scripts only a lapsed or released one', async () => {
      // Prepare: record every command the store sends through the real client, by tick.
      const sent: string[] = [];
      const store = redisStore({ client: recording(nodeRedis, sent), prefix, checkEvictionPolicy: false });
      // Act, Assess: a free key.
      const claim = store.claim('one-trip', { leaseMs: LONG });
      // The first claim also reads the server's clock, and asks whether it compares and sets
      // natively (Redis 7 does not), in the same tick: one round trip.
      assert.deepEqual(sent.splice(0), ['TIME', 'SET IFEQ', 'SET'], 'all sent at once: one round trip');
      const lease = acquired(await claim);
      assert.deepEqual(sent.splice(0), []);
      // The next free key is the SET alone.
      acquired(await store.claim('one-trip-2', { leaseMs: LONG }));
      assert.deepEqual(sent.splice(0), ['SET']);
      // A key being processed, claimed before the store had read the server's clock (as an older
      // version wrote every token): the SET NX fails, and a PTTL tells the lease is live (no script).
      assert.ok(!lease.token.includes('.'), 'the first claim knew no server time to carry');
      assert.equal((await store.claim('one-trip', { leaseMs: LONG })).status, 'in-flight');
      assert.deepEqual(sent.splice(0), ['SET', 'PTTL']);
      // Claimed with the clock known, the token carries the lease's end: the SET alone tells it.
      assert.equal((await store.claim('one-trip-2', { leaseMs: LONG })).status, 'in-flight');
      assert.deepEqual(sent.splice(0), ['SET']);
      // A released key: the script takes it over.
      const second = acquired(await store.claim('one-trip-3', { leaseMs: LONG }));
      sent.splice(0);
      assert.equal(await store.release(second), true);
      assert.deepEqual(sent.splice(0), ['EVALSHA']);
      const taken = acquired(await store.claim(second.key, { leaseMs: LONG }));
      assert.equal(taken.attempt, 2);
      assert.deepEqual(sent.splice(0), ['SET', 'EVALSHA'], 'a released key goes to the script, no PTTL');
      // Confirm is one script; a completed key is answered by the SET's GET, no script.
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['EVALSHA']);
      assert.equal((await store.claim('one-trip', { leaseMs: LONG })).status, 'completed');
      assert.deepEqual(sent.splice(0), ['SET']);
    });

    it('a lease released between the SET and its PTTL is taken over by the script, not reported in flight', async () => {
      // Prepare: a client that releases the lease just before the PTTL reaches the server. The
      // owner's first claim knows no server time, so its token carries no lease end: a PTTL is asked.
      const owner = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false });
      const lease = acquired(await owner.claim('between', { leaseMs: LONG, retentionMs: LONG }));
      assert.ok(!lease.token.includes('.'));
      const sent: string[] = [];
      const releasing: NodeRedisLike = {
        evalSha: (sha, o) => nodeRedis.evalSha(sha, o),
        sendCommand: (async (args: string[]) => {
          sent.push(args[0]!);
          if (args[0] === 'PTTL') assert.equal(await owner.release(lease), true);
          return nodeRedis.sendCommand(args);
        }) as NodeRedisLike['sendCommand'],
      };
      const store = redisStore({ client: releasing, prefix, checkEvictionPolicy: false });
      await store.claim('warm-clock', { leaseMs: LONG });
      sent.splice(0);
      // Act
      const claim = await store.claim('between', { leaseMs: LONG });
      // Assert: the release landed between the two (the PTTL was sent), and the claim took over.
      assert.deepEqual(sent, ['SET', 'PTTL', 'EVALSHA']);
      assert.equal(acquired(claim).attempt, 2);
    });

    describe('the lease end a token carries', () => {
      /** A store on a client that records the commands it sends, its clock read by a first claim. */
      async function counted(): Promise<{
        store: ReturnType<typeof redisStore>;
        sent: string[];
        warm: number;
      }> {
        const sent: string[] = [];
        const store = redisStore({
          client: recording(nodeRedis, sent),
          prefix: `${prefix}end:`,
          checkEvictionPolicy: false,
        });
        const started = performance.now();
        await store.claim(`clock-${randomBytes(4).toString('hex')}`, { leaseMs: LONG });
        sent.splice(0);
        return { store, sent, warm: performance.now() - started };
      }

      it('is written after the owner id, no later than the lease end; a copy is told in flight by the SET alone', async () => {
        // Prepare
        const { store, sent, warm } = await counted();
        const before = performance.now();
        const lease = acquired(await store.claim('carried', { leaseMs: LONG, fingerprint: 'fp' }));
        const took = performance.now() - before;
        // Assess: the token is the id, then the lease end (ms on the server's clock) before the key's:
        // early by the TIME reply's trip back (within the warm-up claim) and this SET's trip out.
        const m = /^([0-9a-f]{32})\.(\d+)$/.exec(lease.token);
        assert.ok(m, `token ${lease.token}`);
        const exact = Number(await nodeRedis.pExpireTime(`${prefix}end:k:carried`)) - 3_600_000;
        const carried = Number(m[2]);
        const bound = Math.ceil(warm) + Math.ceil(took) + 2;
        assert.ok(
          carried <= exact && exact - carried <= bound,
          `${exact - carried} ms early, bound ${bound}`,
        );
        sent.splice(0);
        // Act: a copy, then a copy with another body.
        const copy = await store.claim('carried', { leaseMs: LONG, fingerprint: 'fp' });
        const other = await store.claim('carried', { leaseMs: LONG, fingerprint: 'other' });
        // Assert: both told by the SET alone, with the carried end and the attempt.
        assert.deepEqual(sent, ['SET', 'SET']);
        assert.deepEqual(copy, {
          status: 'in-flight',
          attempt: 1,
          expiresAt: new Date(carried),
          sameFingerprint: true,
        });
        assert.equal(other.status === 'in-flight' && other.sameFingerprint, false);
        // The owner's id alone is compared: the owner confirms, and the completed record keeps the id.
        assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
        assert.equal(await nodeRedis.get(`${prefix}end:k:carried`), `c|${m[1]}|1|0|${LONG}|=fp`);
        assert.equal(
          await store.confirm(lease, { retentionMs: LONG }),
          true,
          'a repeated confirm finds its id',
        );
        assert.equal(
          await store.confirm({ ...lease, token: `${'0'.repeat(32)}.${carried}` }, { retentionMs: LONG }),
          false,
          'another id with the same end owns nothing',
        );
      });

      it('is not trusted within a second of its end: the PTTL tells', async () => {
        const { store, sent } = await counted();
        acquired(await store.claim('near-end', { leaseMs: 900 }));
        sent.splice(0);
        assert.equal((await store.claim('near-end', { leaseMs: 900 })).status, 'in-flight');
        assert.deepEqual(sent, ['SET', 'PTTL']);
      });

      it("is trusted no further than the reading of the server's clock vouches: a stall while TIME's reply waited widens the margin", async () => {
        // Prepare: a reader whose TIME and SET replies wait behind a 2.5 s busy stretch (a GC pause,
        // CPU-bound work), so its reading of the server's clock is 2.5 s behind; then a 1.5 s lease
        // of another process that crashes.
        const owner = redisStore({ client: nodeRedis, prefix: `${prefix}end:`, checkEvictionPolicy: false });
        await owner.claim(`clock-${randomBytes(4).toString('hex')}`, { leaseMs: LONG });
        const sent: string[] = [];
        const readerClient = await createClient({ url: servers.redis }).connect();
        const reader = redisStore({
          client: recording(readerClient, sent),
          prefix: `${prefix}end:`,
          checkEvictionPolicy: false,
        });
        try {
          const firstKey = `stall-${randomBytes(4).toString('hex')}`;
          const first = reader.claim(firstKey, { leaseMs: LONG });
          assert.deepEqual(sent.splice(0), ['TIME', 'SET IFEQ', 'SET'], 'the reading is on its way');
          // node-redis writes its queue in a setImmediate: once that ran, the commands are out.
          await new Promise((resolve) => setImmediate(resolve));
          const stalled = performance.now();
          while (performance.now() - stalled < 2_500);
          const firstLease = acquired(await first);
          // The fault landed: the reading lags the server by the stall, as the first lease's end
          // (the SET's send time on that reading, plus the lease) shows against the key's own.
          const exact = Number(await nodeRedis.pExpireTime(`${prefix}end:k:${firstKey}`)) - 3_600_000;
          assert.ok(exact - firstLease.expiresAt.getTime() >= 2_000, 'the reading lags by the stall');
          const lease = acquired(await owner.claim('stalled', { leaseMs: 1_500 }));
          assert.ok(lease.token.includes('.'), 'the crashed lease carries its end');
          await new Promise((resolve) => setTimeout(resolve, 1_700));
          sent.splice(0);
          // Act: the retry, 0.2 s after the lease's end (2.3 s ahead of the reader's late reading).
          const retry = await reader.claim('stalled', { leaseMs: LONG });
          // Assert: the carried end was not trusted (the PTTL was asked), and the retry took over.
          assert.deepEqual(sent, ['SET', 'PTTL', 'EVALSHA']);
          assert.equal(acquired(retry).attempt, 2);
        } finally {
          await readerClient.quit();
        }
      });

      it("is not trusted once this host's wall and monotonic clocks part (a suspend): the clock is read again first", async () => {
        // Prepare: a live lease with its end a minute ahead.
        const { store, sent } = await counted();
        acquired(await store.claim('parted', { leaseMs: LONG }));
        assert.equal((await store.claim('parted', { leaseMs: LONG })).status, 'in-flight');
        assert.deepEqual(sent.splice(0), ['SET', 'SET'], 'trusted while the clocks agree');
        // Act: the wall clock moves 5 s while the monotonic clock does not (as across a suspend).
        const realNow = Date.now.bind(Date);
        const suspend = mock.method(Date, 'now', () => realNow() + 5_000);
        try {
          assert.equal((await store.claim('parted', { leaseMs: LONG })).status, 'in-flight');
          // Assert: the reading (under 10 s old, else kept) is redone in the claim's own round trip,
          // and the copy is told on the fresh one; the next claim trusts it as before.
          assert.deepEqual(sent.splice(0), ['TIME', 'SET']);
          assert.equal((await store.claim('parted', { leaseMs: LONG })).status, 'in-flight');
          assert.deepEqual(sent.splice(0), ['SET']);
        } finally {
          suspend.mock.restore();
        }
      });

      for (const kind of ['node-redis', 'ioredis'] as const) {
        it(`is not carried nor trusted across a reconnect (perhaps to another server): the clock is read again (${kind})`, async () => {
          // Prepare: a client of its own, its clock read, a lease that carries its end.
          const sent: string[] = [];
          let store: ReturnType<typeof redisStore>;
          let close: () => Promise<unknown>;
          let id: number;
          let reconnected: Promise<unknown>;
          if (kind === 'node-redis') {
            const own = await createClient({ url: servers.redis }).connect();
            own.on('error', () => {});
            // The client itself (its events are what the store listens to), its commands recorded.
            const send = own.sendCommand.bind(own);
            own.sendCommand = ((args: string[]) => {
              sent.push(args[0] === 'SET' && args.includes('IFEQ') ? 'SET IFEQ' : args[0]!);
              return send(args);
            }) as typeof own.sendCommand;
            store = redisStore({ client: own, prefix: `${prefix}end:`, checkEvictionPolicy: false });
            id = Number(await own.clientId());
            reconnected = new Promise((resolve) => own.once('ready', resolve));
            close = () => own.quit();
          } else {
            const own = new Redis(servers.redis);
            own.on('error', () => {});
            const call = own.call.bind(own);
            own.call = ((...args: [string, ...string[]]) => {
              sent.push(args[0] === 'SET' && args.includes('IFEQ') ? 'SET IFEQ' : args[0]);
              return call(...args);
            }) as typeof own.call;
            store = redisStore({ client: own, prefix: `${prefix}end:`, checkEvictionPolicy: false });
            id = Number(await own.client('ID'));
            reconnected = new Promise((resolve) => own.once('ready', resolve));
            close = async () => own.disconnect();
          }
          try {
            await store.claim(`clock-${randomBytes(4).toString('hex')}`, { leaseMs: LONG });
            const lease = acquired(await store.claim(`reconnect-${kind}`, { leaseMs: LONG }));
            assert.ok(lease.token.includes('.'));
            // Act: the server drops the connection; the client reconnects.
            assert.equal(Number(await nodeRedis.sendCommand(['CLIENT', 'KILL', 'ID', String(id)])), 1);
            await reconnected;
            sent.splice(0);
            // Assert: the next claim's token carries no end and the clock is read again with it...
            const after = acquired(await store.claim(`reconnect-${kind}-2`, { leaseMs: LONG }));
            assert.ok(!after.token.includes('.'), 'no end carried on a reading from before the reconnect');
            // (The server is asked about IFEQ again too: the answer was the old connection's.)
            assert.deepEqual(sent.splice(0), ['TIME', 'SET IFEQ', 'SET']);
            // ...after which ends are carried and trusted again.
            assert.equal((await store.claim(`reconnect-${kind}`, { leaseMs: LONG })).status, 'in-flight');
            assert.deepEqual(sent.splice(0), ['SET']);
          } finally {
            await close();
          }
        });
      }

      it('is neither carried nor trusted where the store cannot tell a reconnect: a pool, an unknown wrapper, a cluster', async () => {
        // A node-redis pool (its clients' reconnects are not told) and a wrapper of no known shape.
        const pool = createClientPool({ url: servers.redis }, { minimum: 1, maximum: 1 });
        pool.on('error', () => {});
        await pool.connect();
        const throwing = {
          evalSha: (sha: string, o: { keys: string[]; arguments: string[] }) => nodeRedis.evalSha(sha, o),
          sendCommand: ((args: string[]) => nodeRedis.sendCommand(args)) as NodeRedisLike['sendCommand'],
          on() {
            throw new Error('no events here');
          },
        };
        try {
          for (const client of [pool as unknown as NodeRedisLike, throwing]) {
            const store = redisStore({
              client,
              prefix: `${prefix}end:`,
              checkEvictionPolicy: false,
              checkOfflineQueue: false,
            });
            await store.claim(`clock-${randomBytes(4).toString('hex')}`, { leaseMs: LONG });
            const lease = acquired(
              await store.claim(`unknown-${randomBytes(4).toString('hex')}`, { leaseMs: LONG }),
            );
            assert.match(lease.token, /^[0-9a-f]{32}$/);
          }
        } finally {
          await pool.close();
        }
        // A cluster whose TIME reads a master 5 s behind the key's: an extended lease (its end exact,
        // on the key's master) that ran out 1 s ago is taken over, not trusted against that clock.
        const io = ioredis;
        const clusterShaped = (skewMs: number) =>
          ({
            isCluster: true,
            evalsha: (...a: Parameters<Redis['evalsha']>) => io.evalsha(...a),
            eval: (...a: Parameters<Redis['eval']>) => io.eval(...a),
            call: async (command: string, ...args: string[]) => {
              const reply = (await io.call(command, ...args)) as [string, string];
              if (command !== 'TIME') return reply;
              const ms = Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000) + skewMs;
              return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000)];
            },
          }) as unknown as IoRedisLike;
        const options = { prefix: `${prefix}end:`, checkEvictionPolicy: false, checkOfflineQueue: false };
        const owner = redisStore({ client: clusterShaped(0), ...options });
        const copy = redisStore({ client: clusterShaped(-5_000), ...options });
        await copy.claim(`clock-${randomBytes(4).toString('hex')}`, { leaseMs: LONG });
        const lease = acquired(await owner.claim('cluster-extended', { leaseMs: LONG }));
        assert.match(lease.token, /^[0-9a-f]{32}$/, 'a cluster claim carries no end');
        assert.equal(await owner.extend(lease, { leaseMs: 1_500 }), true);
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        assert.equal(acquired(await copy.claim('cluster-extended', { leaseMs: LONG })).attempt, 2);
      });

      it('is rewritten by extend, exact: a lease shortened below the claimed end is taken over once the shorter lease ran out', async () => {
        // Prepare: a long lease, then shortened by its owner to 300 ms.
        const { store, sent } = await counted();
        const lease = acquired(await store.claim('shortened', { leaseMs: LONG }));
        assert.ok(lease.token.includes('.'));
        assert.equal(await store.extend(lease, { leaseMs: 300 }), true);
        const value = await nodeRedis.get(`${prefix}end:k:shortened`);
        const exact = Number(await nodeRedis.pExpireTime(`${prefix}end:k:shortened`)) - 3_600_000;
        assert.equal(
          value?.split('|')[1],
          `${lease.token.split('.')[0]}.${exact}`,
          'the id and the exact new end',
        );
        sent.splice(0);
        // A copy within the shortened lease (its end under a second away): in flight, told by the PTTL.
        assert.equal((await store.claim('shortened', { leaseMs: LONG })).status, 'in-flight');
        assert.deepEqual(sent.splice(0), ['SET', 'PTTL']);
        // Act: a copy after the shortened lease ran out (the carried end is still ~60 s ahead).
        await new Promise((resolve) => setTimeout(resolve, 400));
        const taken = await store.claim('shortened', { leaseMs: LONG });
        // Assert: taken over, attempt 2; the first owner's lease is lost, its id compared in each script.
        assert.equal(acquired(taken).attempt, 2);
        assert.equal(await store.extend(lease, { leaseMs: LONG }), false);
        assert.equal(await store.confirm(lease, { retentionMs: LONG }), false);
        assert.equal(await store.release(lease), false);
        // An extended long lease: a copy is told in flight by the SET alone, with the exact new end;
        // the owner still confirms it.
        const kept = acquired(await store.claim('extended', { leaseMs: LONG }));
        assert.equal(await store.extend(kept, { leaseMs: 2 * LONG }), true);
        const keptEnd = Number(await nodeRedis.pExpireTime(`${prefix}end:k:extended`)) - 3_600_000;
        sent.splice(0);
        const copy = await store.claim('extended', { leaseMs: LONG });
        assert.deepEqual(sent.splice(0), ['SET']);
        assert.equal(copy.status === 'in-flight' && copy.expiresAt.getTime(), keptEnd);
        assert.equal(await store.confirm(kept, { retentionMs: LONG }), true);
      });
    });

    it('lays keys out as prefix + k: + key (state|token|attempt|grace|ttl|fingerprint) and prefix + v: + entity', async () => {
      const store = redisStore({ client: ioredis, prefix, checkEvictionPolicy: false });
      const lease = acquired(await store.claim('layout', { leaseMs: 2_000, fingerprint: 'f|p' }));
      await store.advance('layout', 42);
      const value = await ioredis.get(`${prefix}k:layout`);
      assert.equal(value, `p|${lease.token}|1|3600000|3602000|=f|p`);
      const pttl = await ioredis.pttl(`${prefix}k:layout`);
      assert.ok(pttl > 3_600_000 && pttl <= 3_602_000, `key lives lease + grace, got ${pttl}`);
      assert.equal(await ioredis.get(`${prefix}v:layout`), '42');
      assert.equal(await ioredis.pttl(`${prefix}v:layout`), -1, 'versions are kept until deleted');
      await store.confirm(lease, { retentionMs: LONG });
      assert.equal(await ioredis.get(`${prefix}k:layout`), `c|${lease.token}|1|0|${LONG}|=f|p`);
      assert.ok((await ioredis.pttl(`${prefix}k:layout`)) <= LONG);
    });

    it('knows when each lease was claimed or last renewed, and when each key completed, on the server clock', async () => {
      const store = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false, leaseGrace: '2s' });
      const serverMs = async () => {
        const [seconds, micros] = (await nodeRedis.sendCommand(['TIME'])) as [string, string];
        return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      };
      // The write's server time lies between two TIME readings taken around it.
      const between = async <T>(what: string, key: string, act: () => Promise<T>) => {
        const before = await serverMs();
        const result = await act();
        const after = await serverMs();
        const at = (await store.inspect(key))?.updatedAt?.getTime();
        assert.ok(
          at !== undefined && at >= before && at <= after,
          `${what}: ${at} not in [${before}, ${after}]`,
        );
        return result;
      };
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

      const lease = await between('claim', 'times', async () =>
        acquired(await store.claim('times', { leaseMs: 5_000 })),
      );
      await sleep(150);
      await between('extend', 'times', () => store.extend(lease, { leaseMs: 5_000 }));
      await sleep(150);
      await between('confirm', 'times', () => store.confirm(lease, { retentionMs: LONG }));
      await between('record', 'times-record', () => store.record('times-record', { retentionMs: LONG }));
      // A takeover after the lease ran out is a fresh claim: its time, not the crashed one's.
      acquired(await store.claim('times-takeover', { leaseMs: 100 }));
      await sleep(250);
      const second = await between('takeover', 'times-takeover', async () =>
        acquired(await store.claim('times-takeover', { leaseMs: 5_000 })),
      );
      assert.equal(second.attempt, 2);
    });

    it('keeps a key whose lease ran out for its grace, so the takeover still raises the attempt', async () => {
      const store = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false, leaseGrace: '2s' });
      const first = acquired(await store.claim('grace', { leaseMs: 100 }));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const view = await store.inspect('grace');
      assert.equal(view?.state, 'processing', 'the key outlives its lease');
      assert.ok(view && view.expiresAt.getTime() < Date.now(), 'and reads as a lease that ran out');
      const second = acquired(await store.claim('grace', { leaseMs: LONG }));
      assert.equal(second.attempt, first.attempt + 1);
    });

    it('record() takes over a lease that ran out and completes it with the next attempt, unless its fingerprint differs', async () => {
      const store = redisStore({ client: ioredis, prefix, checkEvictionPolicy: false, leaseGrace: '5s' });
      acquired(await store.claim('record-takeover', { leaseMs: 100, fingerprint: 'x' }));
      assert.deepEqual(await store.record('record-takeover', { retentionMs: LONG }), { duplicate: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(await store.record('record-takeover', { retentionMs: LONG, fingerprint: 'y' }), {
        duplicate: true,
      });
      assert.equal(
        (await store.inspect('record-takeover'))?.state,
        'processing',
        'another body changed nothing',
      );
      assert.deepEqual(await store.record('record-takeover', { retentionMs: LONG, fingerprint: 'x' }), {
        duplicate: false,
      });
      const view = await store.inspect('record-takeover');
      assert.equal(view?.state, 'completed');
      assert.equal(view?.attempt, 2);
      assert.equal(view?.fingerprint, 'x');
    });

    it("keeps a key for the claim's retentionMs beyond its lease instead of leaseGrace; extend and release keep that grace", async () => {
      // Prepare
      const store = redisStore({ client: ioredis, prefix, checkEvictionPolicy: false, leaseGrace: '1h' });
      const key = `${prefix}k:retention`;
      // Act, Assess: the claim writes the retention as the grace.
      const lease = acquired(
        await store.claim('retention', { leaseMs: 2_000, retentionMs: 20_000, fingerprint: 'f' }),
      );
      assert.equal(await ioredis.get(key), `p|${lease.token}|1|20000|22000|=f`);
      let pttl = await ioredis.pttl(key);
      assert.ok(pttl > 20_000 && pttl <= 22_000, `lease + retention, got ${pttl}`);
      // Extend renews the lease and keeps the stored grace (the token gets the new end after the id).
      assert.equal(await store.extend(lease, { leaseMs: 5_000 }), true);
      assert.match(
        String(await ioredis.get(key)),
        new RegExp(`^p\\|${lease.token}\\.\\d+\\|1\\|20000\\|25000\\|=f$`),
      );
      // Release: no owner, the lease ends now, the key lives on for the grace alone.
      const before = Date.now();
      assert.equal(await store.release(lease), true);
      assert.equal(await ioredis.get(key), 'p||1|20000|20000|=f');
      pttl = await ioredis.pttl(key);
      assert.ok(pttl > 19_000 && pttl <= 20_000, `retention after the release, got ${pttl}`);
      const view = await store.inspect('retention');
      assert.equal(view?.state, 'released');
      assert.ok(
        view && Math.abs(view.expiresAt.getTime() - before) < 2_000,
        'the lease ended at the release',
      );
      assert.equal(view?.updatedAt?.getTime(), view?.expiresAt.getTime(), 'written at the release');
      // The next claim takes it over at once with attempt 2, on the fast path's fallback script.
      const next = acquired(
        await store.claim('retention', { leaseMs: 2_000, retentionMs: 30_000, fingerprint: 'f' }),
      );
      assert.equal(next.attempt, 2);
      assert.equal(await ioredis.get(key), `p|${next.token}|2|30000|32000|=f`);
    });

    it("keeps a key's steps in a hash beside it that never outlives it: expiring with it through save, extend, release and takeover, gone with confirm and record", async () => {
      // Prepare: Redis 7 reads both expiries exactly (PEXPIRETIME); `steps` names a key's hash.
      const store = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false, leaseGrace: 1 });
      const steps = store.steps!;
      const names = (key: string) => {
        const record = `${prefix}k:${key}`;
        return { record, steps: stepsKeyOf(record) };
      };
      const expiry = async (key: string) => Number(await nodeRedis.sendCommand(['PEXPIRETIME', key]));
      const sameExpiry = async (key: string, what: string) => {
        const { record, steps: hash } = names(key);
        const at = await expiry(record);
        assert.ok(at > 0, `${what}: the record expires`);
        assert.equal(await expiry(hash), at, `${what}: the steps expire with the record`);
      };
      const gone = async (key: string, what: string) => {
        const { record, steps: hash } = names(key);
        assert.equal(await nodeRedis.exists(record), 0, `${what}: the record is gone`);
        assert.equal(await nodeRedis.exists(hash), 0, `${what}: its steps are gone`);
      };
      const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

      // Act, Assess: saved, renewed and released with a short grace, then waited out.
      const lease = acquired(await store.claim('steps-released', { leaseMs: LONG, retentionMs: 300 }));
      assert.equal(await steps.save(lease, 'charge', '"pi_1"'), true);
      assert.deepEqual({ ...(await nodeRedis.hGetAll(names('steps-released').steps)) }, { charge: '"pi_1"' });
      await sameExpiry('steps-released', 'saved');
      assert.equal(await store.extend(lease, { leaseMs: 5_000 }), true);
      await sameExpiry('steps-released', 'extended');
      assert.equal(await store.release(lease), true);
      await sameExpiry('steps-released', 'released');
      const pttl = await nodeRedis.pTTL(names('steps-released').steps);
      assert.ok(pttl > 0 && pttl <= 300, `the steps live the grace alone, got ${pttl}`);
      await sleep(500);
      await gone('steps-released', 'the grace ran out');

      // A takeover with a shorter grace than the run-out lease had: the steps follow it down.
      const crashed = acquired(await store.claim('steps-taken', { leaseMs: 100, retentionMs: LONG }));
      assert.equal(await steps.save(crashed, 'charge', '"pi_2"'), true);
      await sleep(200);
      const taker = acquired(await store.claim('steps-taken', { leaseMs: 100, retentionMs: 200 }));
      assert.equal(taker.attempt, 2);
      await sameExpiry('steps-taken', 'taken over');
      assert.deepEqual(Object.fromEntries(await steps.load(taker)), { charge: '"pi_2"' });
      await sleep(500);
      await gone('steps-taken', "the taker's lease and grace ran out");
      assert.equal(acquired(await store.claim('steps-taken', { leaseMs: LONG })).attempt, 1);

      // Confirm: the record completed, its steps deleted at once (also a first attempt's, which
      // would otherwise confirm natively).
      for (const key of ['steps-confirmed', 'steps-confirmed-2']) {
        const first = acquired(await store.claim(key, { leaseMs: 100, retentionMs: LONG }));
        let owner = first;
        if (key.endsWith('-2')) {
          await sleep(200);
          owner = acquired(await store.claim(key, { leaseMs: LONG, retentionMs: LONG }));
        }
        assert.equal(await steps.save(owner, 'charge', '"pi_3"'), true);
        assert.equal(await store.confirm(owner, { retentionMs: LONG }), true);
        assert.equal((await store.inspect(key))?.state, 'completed');
        assert.equal(await nodeRedis.exists(names(key).steps), 0, `${key}: confirm deleted the steps`);
      }

      // record() taking over a run-out lease completes the key: its steps go.
      const recorded = acquired(await store.claim('steps-recorded', { leaseMs: 100, retentionMs: LONG }));
      assert.equal(await steps.save(recorded, 'charge', '"pi_4"'), true);
      await sleep(200);
      assert.deepEqual(await store.record('steps-recorded', { retentionMs: LONG }), { duplicate: false });
      assert.equal(await nodeRedis.exists(names('steps-recorded').steps), 0, 'record deleted the steps');
    });

    it("names a claim key's steps hash in the claim key's Cluster slot, whatever braces the key holds", () => {
      for (const clientPrefix of ['', 'app:', 'a{b']) {
        for (const key of ['evt_1', 'a{b', '{}x', 'x}y', '{tag}z', 'a{}{b}', '{', '~sha256:abc']) {
          const record = `${prefix}k:${key}`;
          const steps = stepsKeyOf(record, clientPrefix);
          assert.ok(steps.startsWith(`${record} s`), steps);
          assert.equal(
            slotOf(Buffer.from(clientPrefix + steps)),
            slotOf(Buffer.from(clientPrefix + record)),
            `${JSON.stringify(clientPrefix)} + ${record} -> ${steps}`,
          );
        }
      }
      // Redis's own example: the CRC16 of "123456789" is 0x31C3.
      assert.equal(crc16(Buffer.from('123456789')), 0x31c3);
    });

    it('never treats an empty token as an owner, not even of a released record', async () => {
      const store = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false });
      const lease = acquired(await store.claim('empty-token', { leaseMs: LONG }));
      assert.equal(await store.release(lease), true);
      const forged = { ...lease, token: '' };
      assert.equal(await store.confirm(forged, { retentionMs: LONG }), false);
      assert.equal(await store.extend(forged, { leaseMs: LONG }), false);
      assert.equal(await store.release(forged), false);
      assert.equal((await store.inspect('empty-token'))?.state, 'released');
    });

    it("reports the lease's end on the server's clock: never after the key's own, at most a round trip before", async () => {
      for (const client of [nodeRedis, ioredis]) {
        const store = redisStore({ client, prefix: `${prefix}exp:`, checkEvictionPolicy: false });
        // The lease end can be early by the SET's trip to the server plus the TIME reply's trip
        // back (that TIME came with an earlier claim): each within its own claim's round trip, so
        // within twice the slowest claim seen (a loaded host delays either way on its own: CI saw
        // 8 ms early with a slowest claim of 4.1 ms).
        let slowest = 0;
        for (let i = 0; i < 20; i++) {
          const key = `expiry-${client === nodeRedis ? 'nr' : 'io'}-${i}`;
          const sent = performance.now();
          const lease = acquired(await store.claim(key, { leaseMs: LONG }));
          slowest = Math.max(slowest, performance.now() - sent);
          const exact = Number(await nodeRedis.pExpireTime(`${prefix}exp:k:${key}`)) - 3_600_000;
          const early = exact - lease.expiresAt.getTime();
          assert.ok(
            early >= 0 && early <= 2 * Math.ceil(slowest) + 1,
            `lease end ${early} ms before the key's (slowest claim ${slowest.toFixed(1)} ms)`,
          );
          // inspect() reads the key's own expiry, exactly; an in-flight claim (told by a PTTL) from
          // the server's clock as this process reads it: off by the same round trips either way.
          assert.equal((await store.inspect(key))?.expiresAt.getTime(), exact);
          const sentHeld = performance.now();
          const held = await store.claim(key, { leaseMs: LONG });
          slowest = Math.max(slowest, performance.now() - sentHeld);
          assert.equal(held.status, 'in-flight');
          const off = held.status === 'in-flight' ? held.expiresAt.getTime() - exact : Number.NaN;
          assert.ok(
            Math.abs(off) <= 2 * Math.ceil(slowest) + 1,
            `in-flight expiry ${off} ms off the key's (slowest claim ${slowest.toFixed(1)} ms)`,
          );
        }
      }
    });

    it('decides on the server clock: a client clock days off changes nothing', async () => {
      // Prepare: this process's clock jumps 3 days ahead.
      const realNow = Date.now.bind(Date);
      const store = redisStore({ client: ioredis, prefix, checkEvictionPolicy: false });
      const skew = mock.method(Date, 'now', () => realNow() + 3 * 86_400_000);
      try {
        // Act
        const lease = acquired(await store.claim('skew', { leaseMs: 500 }));
        const during = await store.claim('skew', { leaseMs: 500 });
        // Assess
        assert.equal(during.status, 'in-flight', 'the lease is live on the server clock');
        assert.ok(Math.abs(lease.expiresAt.getTime() - (realNow() + 500)) < 2_000, 'expiry is server time');
      } finally {
        skew.mock.restore();
      }
    });

    it('works through an ioredis client with its own keyPrefix, and every key lands under it', async () => {
      const prefixed = new Redis(servers.redis, { keyPrefix: `${prefix}app:` });
      try {
        const store = redisStore({ client: prefixed, prefix: 'oo:', checkEvictionPolicy: false });
        const lease = acquired(await store.claim('kp', { leaseMs: LONG }));
        assert.equal((await store.claim('kp', { leaseMs: LONG })).status, 'in-flight');
        assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
        assert.equal((await store.claim('kp', { leaseMs: LONG })).status, 'completed');
        assert.equal(await store.advance('kp', 1), true);
        assert.match(String(await ioredis.get(`${prefix}app:oo:k:kp`)), /^c\|/);
        assert.equal(await ioredis.get(`${prefix}app:oo:v:kp`), '1');
      } finally {
        prefixed.disconnect();
      }
    });

    it("never closes the user's client", async () => {
      const store = redisStore({ client: nodeRedis, prefix });
      await store.inspect('x');
      await store.close();
      assert.equal(await nodeRedis.ping(), 'PONG');
      await redisStore({ client: ioredis, prefix }).close();
      assert.equal(await ioredis.ping(), 'PONG');
    });

    it('refuses a key holding a value it did not write with a store_foreign_value error', async () => {
      await nodeRedis.set(`${prefix}k:foreign`, 'hello', { expiration: { type: 'PX', value: LONG } });
      const store = redisStore({ client: nodeRedis, prefix, checkEvictionPolicy: false });
      await assert.rejects(store.claim('foreign', { leaseMs: LONG }), (err: unknown) => {
        assert.ok(err instanceof StoreUnavailableError);
        assert.equal(err.code, 'store_foreign_value');
        assert.match(err.message, /^onceonly: .*prefix/);
        return true;
      });
    });

    it('stores a fingerprint containing separators and newlines verbatim', async () => {
      const store = redisStore({ client: ioredis, prefix, checkEvictionPolicy: false });
      const fingerprint = 'a|b|\n|c||=';
      const lease = acquired(await store.claim('fp', { leaseMs: LONG, fingerprint }));
      assert.equal((await store.inspect('fp'))?.fingerprint, fingerprint);
      const again = await store.claim('fp', { leaseMs: LONG, fingerprint });
      assert.equal(again.status === 'in-flight' && again.sameFingerprint, true);
      const empty = await store.claim('fp', { leaseMs: LONG, fingerprint: '' });
      assert.equal(empty.status === 'in-flight' && empty.sameFingerprint, false, 'empty is a fingerprint');
      await store.confirm(lease, { retentionMs: LONG });
      assert.equal((await store.inspect('fp'))?.fingerprint, fingerprint);
    });
  });
}

describe('redisStore errors', () => {
  it('rejects something that is not a node-redis or ioredis client', () => {
    assert.throws(
      () => redisStore({ client: {} as RedisClientLike }),
      (err: unknown) => err instanceof ConfigError && /node-redis .* ioredis/.test(err.message),
    );
    assert.throws(
      () => redisStore({ client: { evalsha() {}, eval() {} } as never, leaseGrace: '1 h' as never }),
      ConfigError,
    );
  });

  it('reports an unreachable server as StoreUnavailableError with the cause', async () => {
    // Prepare: an ioredis client on a port nothing listens on, failing fast instead of queueing.
    const dead = new Redis({
      port: 1,
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => {});
    const store = redisStore({ client: dead, checkEvictionPolicy: false });
    // Act, Assess
    await assert.rejects(store.claim('k', { leaseMs: LONG }), (err: unknown) => {
      assert.ok(err instanceof StoreUnavailableError);
      assert.equal(err.code, 'store_unavailable');
      assert.equal(err.status, 503);
      assert.ok(err.cause instanceof Error);
      assert.match(err.message, /^onceonly: Redis claim failed/);
      return true;
    });
    dead.disconnect();
  });
});

// Throwaway servers for what must not touch the shared one: SCRIPT FLUSH, eviction policies, CONFIG off.
let binaries = false;
try {
  await redisBinaries();
  binaries = true;
} catch (err) {
  await reachable('redis-server binary', 'redis-server on PATH', () => Promise.reject(err));
}

if (binaries) {
  describe('redisStore on throwaway servers', () => {
    let plain: TestServer & { stop(): Promise<void> };
    let noConfig: TestServer & { stop(): Promise<void> };
    before(async () => {
      [plain, noConfig] = await Promise.all([
        startRedisServer(),
        startRedisServer(['--rename-command', 'CONFIG', '']),
      ]);
    });
    // Clients close even when an assertion throws, so a failing case cannot hang the run.
    const closers: Array<() => unknown> = [];
    const nodeClient = async (url: string) => {
      const client = await createClient({ url }).connect();
      closers.push(() => client.quit());
      return client;
    };
    const ioClient = (url: string) => {
      const client = new Redis(url);
      closers.push(() => client.disconnect());
      return client;
    };
    after(async () => {
      await Promise.allSettled(closers.map((close) => close()));
      await Promise.all([plain?.stop(), noConfig?.stop()]);
    });

    for (const [name, connect] of [
      ['node-redis', nodeClient],
      ['ioredis', async (url: string) => ioClient(url)],
    ] as const) {
      it(`survives SCRIPT FLUSH mid-run (${name})`, async () => {
        // Prepare
        const client = await connect(plain.url);
        const store = redisStore({ client, checkEvictionPolicy: false, prefix: `${prefix}${name}:` });
        const lease = acquired(await store.claim('flush', { leaseMs: LONG }));
        // Act: the server forgets every script while a lease is held and 64 calls are in flight.
        const inFlight = Array.from({ length: 64 }, (_, i) => store.claim(`flush-${i}`, { leaseMs: LONG }));
        await plain.cli('script', 'flush');
        const claims = await Promise.all(inFlight);
        await plain.cli('script', 'flush');
        // Assess
        assert.ok(claims.every((c) => c.status === 'acquired'));
        assert.equal(await store.extend(lease, { leaseMs: LONG }), true);
        await plain.cli('script', 'flush');
        assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
        await plain.cli('script', 'flush');
        assert.equal((await store.claim('flush', { leaseMs: LONG })).status, 'completed');
        await plain.cli('script', 'flush');
        assert.equal((await store.inspect('flush'))?.state, 'completed');
      });
    }

    for (const policy of ['allkeys-lru', 'volatile-lru', 'volatile-ttl']) {
      it(`warns once at start-up when maxmemory-policy is ${policy}`, async () => {
        // Prepare
        await plain.cli('config', 'set', 'maxmemory-policy', policy);
        await plain.cli('config', 'set', 'maxmemory', '100mb');
        const client = await nodeClient(plain.url);
        const warnings: string[] = [];
        let warned!: () => void;
        const first = new Promise<void>((resolve) => (warned = resolve));
        const store = redisStore({
          client,
          checkOfflineQueue: false,
          onWarning: (m) => {
            warnings.push(m);
            warned();
          },
        });
        // Act
        await store.claim(policy, { leaseMs: LONG });
        await store.claim(policy, { leaseMs: LONG });
        await first;
        await store.inspect(policy);
        await new Promise((resolve) => setTimeout(resolve, 100));
        // Assess
        assert.equal(warnings.length, 1);
        assert.match(
          warnings[0]!,
          new RegExp(`^onceonly: Redis maxmemory-policy is "${policy}".*noeviction`),
        );
        assert.match(warnings[0]!, /duplicate/);
      });
    }

    it('warns on ioredis too, and notes when maxmemory is 0', async () => {
      await plain.cli('config', 'set', 'maxmemory-policy', 'allkeys-lfu');
      await plain.cli('config', 'set', 'maxmemory', '0');
      const client = ioClient(plain.url);
      const warning = new Promise<string>((resolve) => {
        const store = redisStore({ client, checkOfflineQueue: false, onWarning: resolve });
        void store.inspect('x');
      });
      assert.match(await warning, /"allkeys-lfu".*maxmemory is 0/);
    });

    it('stays quiet with noeviction', async () => {
      await plain.cli('config', 'set', 'maxmemory-policy', 'noeviction');
      const client = ioClient(plain.url);
      const warnings: string[] = [];
      const store = redisStore({ client, checkOfflineQueue: false, onWarning: (m) => warnings.push(m) });
      await store.inspect('x');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(warnings, []);
    });

    it('works and stays quiet where CONFIG is disabled', async () => {
      const client = await nodeClient(noConfig.url);
      const warnings: string[] = [];
      const store = redisStore({ client, checkOfflineQueue: false, onWarning: (m) => warnings.push(m) });
      const lease = acquired(await store.claim('k', { leaseMs: LONG }));
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(warnings, []);
    });
  });
}
