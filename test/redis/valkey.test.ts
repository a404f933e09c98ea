/**
 * redisStore on Valkey 8.1, whose `SET ... IFEQ` lets a confirm be one plain command instead of the
 * owner-checked script (Redis 7 has no such SET). The server is a Valkey of the test's own, from
 * Debian's packages (scripts/valkey.sh, run here the first time). Covered: both conformance suites
 * and the multi-process races on it; which path a confirm takes (native on Valkey, the script on the
 * shared Redis 7), and that a key no longer holding exactly what its claim wrote answers as on Redis
 * 7: decided by the value the SET answers (taken over, released, confirmed), by a second command only
 * while the lease is surely live (gone, renewed), and by the script alone for a confirm called late or
 * a lease the store did not hand out.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { checkHealth } from '../../src/core/health.js';
import type { Lease, Store } from '../../src/core/types.js';
import { redisStore } from '../../src/stores/redis.js';
import { runConformance, runInboxConformance } from '../../src/testing/index.js';
import { describeRaces } from '../support/race.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { type RecordingOptions, recording } from '../support/redis-recording.js';
import { reachable, servers } from '../support/servers.js';
import { sideBySide } from '../support/side-by-side.js';
import { valkeyServer } from '../support/valkey.js';

const LONG = 60_000;
const prefix = `oo-valkey-${randomBytes(4).toString('hex')}:`;
const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));

/**
 * A server, proxy or mock that takes SET options it does not know and ignores them (ioredis-mock's
 * `set` reads NX/XX/EX/PX/GET only): `IFEQ x` is dropped, so the SET is unconditional.
 */
const ignoringIfeq = (args: string[]) => {
  const i = args[0] === 'SET' ? args.indexOf('IFEQ') : -1;
  return i === -1 ? args : [...args.slice(0, i), ...args.slice(i + 2)];
};

/** What the store's health check says of its compare-and-set. */
async function casHealth(store: Store): Promise<string> {
  const report = await checkHealth(store, { timeoutMs: 5_000, maxClockSkewMs: 60_000 });
  return report.checks.find((c) => c.name === 'compare-and-set')?.detail ?? '(no such check)';
}

function acquired(claim: Awaited<ReturnType<ReturnType<typeof redisStore>['claim']>>): Lease {
  assert.equal(claim.status, 'acquired', JSON.stringify(claim));
  return (claim as Extract<typeof claim, { status: 'acquired' }>).lease;
}

// Fetched first (the download takes longer than reachable()'s probe allows), then judged there.
const binary = await valkeyServer().catch((err: unknown) =>
  err instanceof Error ? err : new Error(String(err)),
);
if (
  await reachable('Valkey 8.1 server (bash scripts/valkey.sh)', '.tmp/valkey/valkey-server', async () => {
    if (binary instanceof Error) throw binary;
  })
) {
  // Starting is awaited here: a failure fails the file (it never skips once the binary is there).
  const valkey: RedisInstance = await startRedisInstance({ server: binary as string, persist: false });
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

  sideBySide('redisStore conformance on Valkey 8.1, the clients side by side', (runner) => [
    runConformance({
      name: 'redisStore conformance on Valkey 8.1 (node-redis)',
      factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:`, leaseGrace: 1 }),
      runner,
    }),
    runConformance({
      name: 'redisStore conformance on Valkey 8.1 (ioredis)',
      factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:` }),
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance on Valkey 8.1 (node-redis)',
      factory: () =>
        redisStore({ client: nodeRedis, prefix: `${prefix}inbox:`, checkEvictionPolicy: false }).inbox!,
      runner,
    }),
  ]);

  /**
   * A native store (its client recorded into `sent`, with `options`) and a plain one on the same
   * keys, and a 1 s lease on `evt` whose key was then deleted under them: a later command of its
   * confirm may go out until 100 ms before the lease's end (the engine's margin).
   */
  async function vanishedLease(name: string, sent: string[], options: RecordingOptions) {
    const storePrefix = `${prefix}${name}-${randomBytes(3).toString('hex')}:`;
    const store = redisStore({
      client: recording(nodeRedis, sent, options),
      prefix: storePrefix,
      checkEvictionPolicy: false,
    });
    const rival = redisStore({ client: nodeRedis, prefix: storePrefix, checkEvictionPolicy: false });
    acquired(await store.claim('warm-up', { leaseMs: LONG }));
    assert.match(await casHealth(store), /^native/);
    const claimedAt = performance.now();
    const lease = acquired(await store.claim('evt', { leaseMs: 1_000, retentionMs: LONG }));
    assert.equal(await nodeRedis.del(`${storePrefix}k:evt`), 1, 'the fault landed: the key vanished');
    sent.splice(0);
    return { store, rival, lease, claimedAt };
  }

  /** Once that lease is over, `evt` was not written completed: the retry gets in and runs the work. */
  async function retryGetsIn(rival: Store, claimedAt: number) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, claimedAt + 1_050 - performance.now())));
    const retry = acquired(await rival.claim('evt', { leaseMs: LONG }));
    assert.equal(retry.attempt, 1, 'a fresh claim: the key was not written completed');
    assert.equal(await rival.confirm(retry, { retentionMs: LONG }), true);
  }

  describe('redisStore confirm: native compare-and-set where the server has it', () => {
    async function counted(client: ReturnType<typeof createClient>, name: string) {
      const sent: string[] = [];
      const storePrefix = `${prefix}${name}-${randomBytes(3).toString('hex')}:`;
      const store = redisStore({
        client: recording(client, sent, { scripts: true }),
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
      // The second goes straight to the script: the native one left nothing to compare with.
      assert.deepEqual(sent.splice(0), ['SET', 'SET IFEQ', 'script']);
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

    it('a first lease that saved a durable step confirms by the script, which deletes its steps in the same command', async () => {
      const { store, sent } = await counted(nodeRedis, 'stepped');
      const lease = acquired(await store.claim('evt', { leaseMs: LONG }));
      assert.equal(await store.steps!.save(lease, 'charge', '"pi_1"'), true);
      assert.equal((await store.steps!.load(lease)).get('charge'), '"pi_1"');
      sent.splice(0);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      assert.equal((await store.inspect('evt'))?.state, 'completed');
      assert.equal((await store.steps!.load(lease)).size, 0);
    });

    it('a lease taken over after it ran out cannot confirm; a key that vanished is completed by its owner (invariant 3)', async () => {
      const { store, sent, storePrefix } = await counted(nodeRedis, 'taken');
      // Prepare: a lease of 300 ms that runs out, and a takeover (attempt 2).
      const stale = acquired(await store.claim('evt', { leaseMs: 300, retentionMs: LONG }));
      await new Promise((resolve) => setTimeout(resolve, 450));
      const current = acquired(await store.claim('evt', { leaseMs: LONG, retentionMs: LONG }));
      assert.equal(current.attempt, 2, 'the fault landed: the lease ran out and was taken over');
      sent.splice(0);
      // Act, Assert: a confirm called after its lease's end is one script (a native miss could need
      // a second command, which must not land after the lease), and it is refused.
      assert.equal(await store.confirm(stale, { retentionMs: LONG }), false);
      assert.deepEqual(sent.splice(0), ['script']);
      assert.equal((await store.inspect('evt'))?.state, 'processing');
      sent.splice(0);
      // The takeover's confirm is the script too: its key may hold an earlier owner's durable steps,
      // which go with the completion in the same command (a native SET could not delete them).
      assert.equal(await store.confirm(current, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      // A key gone before its confirm (deleted under the store): the work is done, so it completes;
      // the lease is live, so the second command may go.
      const gone = acquired(await store.claim('gone', { leaseMs: LONG }));
      assert.equal(await nodeRedis.del(`${storePrefix}k:gone`), 1, 'the fault landed: the key is gone');
      sent.splice(0);
      assert.equal(await store.confirm(gone, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET IFEQ', 'script']);
      assert.equal((await store.inspect('gone'))?.state, 'completed');
    });

    it('a native miss whose answer comes near the lease end sends no second command: a store error, and the retry gets in', async () => {
      // Prepare: the IFEQ's reply is held back (a slow network, a paused process) until `lateUntil`.
      const sent: string[] = [];
      let lateUntil = 0;
      const { store, rival, lease, claimedAt } = await vanishedLease('late', sent, {
        scripts: true,
        replyAt: (args) => (args.includes('IFEQ') ? lateUntil : undefined),
      });
      lateUntil = claimedAt + 950;

      // Act: the confirm starts while the lease is live; its IFEQ finds the key gone, answered late.
      const started = performance.now() - claimedAt;
      await assert.rejects(store.confirm(lease, { retentionMs: LONG }), (err: Error) => {
        assert.equal((err as { code?: string }).code, 'store_unavailable');
        assert.match(err.message, /before the lease's end/);
        return true;
      });

      // Assert: only the IFEQ went out, sent while the lease was live and answered past its margin.
      assert.ok(started < 900, `the confirm started while the lease was live (${started} ms)`);
      assert.ok(performance.now() - claimedAt >= 900, 'the fault landed: the answer came past the margin');
      assert.deepEqual(sent, ['SET IFEQ']);
      await retryGetsIn(rival, claimedAt);
    });
  });

  describe('redisStore confirm on Valkey: what the native path must not do', () => {
    it('after a native miss, the script is not sent again past the margin when the server has not loaded it (NOSCRIPT)', async () => {
      // Prepare: native confirms never load the confirm script, so after a miss its EVALSHA meets
      // NOSCRIPT on a fresh server; here that answer is forced, and held back past the margin.
      const calls: string[] = [];
      let lateUntil = 0;
      const { store, rival, lease, claimedAt } = await vanishedLease('noscript', calls, {
        rewrite: (args) => (args[0] === 'EVALSHA' ? ['EVALSHA', 'f'.repeat(40), ...args.slice(2)] : args),
        replyAt: (args) => (args[0] === 'EVALSHA' ? lateUntil : undefined),
      });
      lateUntil = claimedAt + 950;

      // Act, Assert: IFEQ (a miss: gone), EVALSHA (NOSCRIPT, answered late), and no EVAL.
      await assert.rejects(store.confirm(lease, { retentionMs: LONG }), /NOSCRIPT/);
      assert.ok(performance.now() - claimedAt >= 900, 'the fault landed: the answer came past the margin');
      assert.deepEqual(calls, ['SET IFEQ', 'EVALSHA']);
      await retryGetsIn(rival, claimedAt);
    });

    it('a fingerprint that UTF-8 cannot carry (a lone surrogate) is confirmed by the script: the SET would answer it back changed', async () => {
      const sent: string[] = [];
      const store = redisStore({
        client: recording(nodeRedis, sent, { scripts: true }),
        prefix: `${prefix}surrogate-${randomBytes(3).toString('hex')}:`,
        checkEvictionPolicy: false,
      });
      acquired(await store.claim('warm-up', { leaseMs: LONG }));
      assert.match(await casHealth(store), /^native/);
      const lease = acquired(await store.claim('evt', { leaseMs: LONG, fingerprint: 'ab\ud800' }));
      sent.splice(0);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent, ['script'], 'one command: the script');
      assert.equal((await store.inspect('evt'))?.state, 'completed');
    });
  });

  describe('redisStore: how the server is asked about IFEQ', () => {
    it('a server that ignores IFEQ (answers OK to the probe) is not taken for native, so a stale owner cannot overwrite the new one', async () => {
      const sent: string[] = [];
      const store = redisStore({
        client: recording(nodeRedis, sent, { scripts: true, rewrite: ignoringIfeq }),
        prefix: `${prefix}ignores-${randomBytes(3).toString('hex')}:`,
        checkEvictionPolicy: false,
      });
      const stale = acquired(await store.claim('evt', { leaseMs: 200, retentionMs: LONG }));
      assert.deepEqual(sent.splice(0), ['TIME', 'SET IFEQ', 'SET'], 'the probe was sent (and set its key)');
      assert.match(await casHealth(store), /^Lua/);
      await new Promise((resolve) => setTimeout(resolve, 350));
      const current = acquired(await store.claim('evt', { leaseMs: LONG, retentionMs: LONG }));
      assert.equal(current.attempt, 2, 'the fault landed: the lease ran out and was taken over');
      assert.equal(await store.confirm(stale, { retentionMs: LONG }), false, 'stale confirm');
      assert.equal((await store.inspect('evt'))?.state, 'processing', 'the new owner keeps the key');
    });

    it('after a reconnect the server is asked again: one reached through a proxy that drops IFEQ is not taken for native', async () => {
      // A client of its own, so that killing its connection disturbs no other test.
      const own = await createClient({ url: valkey.url }).connect();
      own.on('error', () => {});
      try {
        const sent: string[] = [];
        let dropping = false;
        const store = redisStore({
          client: recording(own, sent, { scripts: true, rewrite: (a) => (dropping ? ignoringIfeq(a) : a) }),
          prefix: `${prefix}reconnect-${randomBytes(3).toString('hex')}:`,
          checkEvictionPolicy: false,
        });
        const before = acquired(await store.claim('before', { leaseMs: LONG }));
        assert.match(await casHealth(store), /^native/, 'native on the first connection');
        sent.splice(0);
        assert.equal(await store.confirm(before, { retentionMs: LONG }), true);
        assert.deepEqual(sent.splice(0), ['SET IFEQ']);

        // The connection drops; the client comes back through something that drops IFEQ.
        const stale = acquired(await store.claim('evt', { leaseMs: 200, retentionMs: LONG }));
        const id = String(await own.sendCommand(['CLIENT', 'ID']));
        const ready = new Promise((resolve) => own.once('ready', resolve));
        assert.equal(Number(await valkey.cli('client', 'kill', 'id', id)), 1, 'the fault landed: killed');
        await ready;
        dropping = true;
        await new Promise((resolve) => setTimeout(resolve, 350));
        sent.splice(0);
        const current = acquired(await store.claim('evt', { leaseMs: LONG, retentionMs: LONG }));
        assert.equal(current.attempt, 2, 'the lease ran out and was taken over');
        assert.ok(sent.includes('SET IFEQ'), `asked again after the reconnect: ${sent.join(', ')}`);
        assert.equal(await store.confirm(stale, { retentionMs: LONG }), false, 'stale confirm');
        assert.equal((await store.inspect('evt'))?.state, 'processing', 'the new owner keeps the key');
        assert.match(await casHealth(store), /^Lua/);
        assert.equal(await store.confirm(current, { retentionMs: LONG }), true);
      } finally {
        await own.quit().catch(() => {});
      }
    });

    it('a passing error reply to the probe (OOM) settles nothing: asked again, native once the server is back', async () => {
      const sent: string[] = [];
      const store = redisStore({
        client: recording(nodeRedis, sent, { scripts: true }),
        prefix: `${prefix}oom-${randomBytes(3).toString('hex')}:`,
        checkEvictionPolicy: false,
      });
      await valkey.cli('config', 'set', 'maxmemory', '1');
      try {
        await assert.rejects(
          store.claim('first', { leaseMs: LONG }),
          /OOM/,
          'the fault landed: the server is full',
        );
      } finally {
        await valkey.cli('config', 'set', 'maxmemory', '0');
      }
      assert.match(await casHealth(store), /^native/);
      const lease = acquired(await store.claim('second', { leaseMs: LONG }));
      sent.splice(0);
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      assert.deepEqual(sent, ['SET IFEQ']);
    });

    it('a node that answers a syntax error to a confirm (a cluster mid-upgrade) turns native off; the script answers', async () => {
      const sent: string[] = [];
      let old = false;
      // After the probe, this "node" is one without IFEQ: its SET ... IFEQ is a syntax error.
      const rewrite = (args: string[]) => (old && args.includes('IFEQ') ? [...args, 'BOGUS'] : args);
      const store = redisStore({
        client: recording(nodeRedis, sent, { scripts: true, rewrite }),
        prefix: `${prefix}upgrade-${randomBytes(3).toString('hex')}:`,
        checkEvictionPolicy: false,
      });
      const a = acquired(await store.claim('a', { leaseMs: LONG }));
      const b = acquired(await store.claim('b', { leaseMs: LONG }));
      assert.match(await casHealth(store), /^native/);
      old = true;
      sent.splice(0);
      assert.equal(await store.confirm(a, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['SET IFEQ', 'script']);
      assert.equal(await store.confirm(b, { retentionMs: LONG }), true);
      assert.deepEqual(sent.splice(0), ['script']);
      assert.match(await casHealth(store), /^Lua/);
    });

    it('ioredis takes the native path too: one SET and no script per confirm, by the server own count', async () => {
      const store = redisStore({
        client: ioredis,
        prefix: `${prefix}io-native:`,
        checkEvictionPolicy: false,
      });
      acquired(await store.claim('warm-up', { leaseMs: LONG }));
      assert.match(await casHealth(store), /^native/);
      const lease = acquired(await store.claim('evt', { leaseMs: LONG }));
      const stats = async () => {
        const info = await valkey.cli('info', 'commandstats');
        const calls = (name: string) =>
          Number(new RegExp(`cmdstat_${name}:calls=(\\d+)`).exec(info)?.[1] ?? 0);
        return { set: calls('set'), scripts: calls('evalsha') + calls('eval') };
      };
      const before = await stats();
      assert.equal(await store.confirm(lease, { retentionMs: LONG }), true);
      const after = await stats();
      assert.deepEqual(
        { set: after.set - before.set, scripts: after.scripts - before.scripts },
        { set: 1, scripts: 0 },
      );
    });
  });

  describe('redisStore confirm: the native path and the script answer and write the same', () => {
    // For each state a key can be left in, the native confirm (the lease the store handed out) and
    // the script (a copy of it, which the store knows nothing of) start from the same value and TTL.
    const states: [string, (key: string, lease: Lease, held: string) => Promise<unknown>][] = [
      ['untouched', async () => {}],
      ['gone', (key) => nodeRedis.del(key)],
      [
        'taken over',
        (key, _lease, held) =>
          nodeRedis.set(key, held.replace(/^p\|[^|]*\|1\|/, `p|${'e'.repeat(32)}|2|`), { PX: LONG }),
      ],
      [
        'released',
        (key, _lease, held) => nodeRedis.set(key, held.replace(/^p\|[^|]*\|/, 'p||'), { PX: LONG }),
      ],
      [
        'confirmed by its owner',
        (key, lease) => nodeRedis.set(key, `c|${lease.token.split('.')[0]}|1|0|${LONG}|`, { PX: LONG }),
      ],
      ['a foreign value', (key) => nodeRedis.set(key, 'hello', { PX: LONG })],
      [
        'renewed by its owner (an extend the confirm raced)',
        // A new end, one past the claim's own (an equal one would be the claim's value again).
        (key, _lease, held) =>
          nodeRedis.set(
            key,
            held.replace(
              /^p\|([^|.]*)(?:\.(\d+))?\|/,
              (_m, id: string, end?: string) => `p|${id}.${end === undefined ? 1 : Number(end) + 1}|`,
            ),
            { PX: LONG },
          ),
      ],
    ];
    /** How many commands the native confirm sends from each state: a second only where it must write. */
    const nativeCommands: Record<string, string[]> = {
      gone: ['SET IFEQ', 'script'],
      'renewed by its owner (an extend the confirm raced)': ['SET IFEQ', 'script'],
    };
    for (const [name, prepare] of states) {
      it(name, async () => {
        const storePrefix = `${prefix}same-${randomBytes(3).toString('hex')}:`;
        const sent: string[] = [];
        const store = redisStore({
          client: recording(nodeRedis, sent, { scripts: true }),
          prefix: storePrefix,
          checkEvictionPolicy: false,
        });
        const lease = acquired(await store.claim('evt', { leaseMs: LONG }));
        assert.match(await casHealth(store), /^native/);
        const key = `${storePrefix}k:evt`;
        await prepare(key, lease, (await nodeRedis.get(key))!);
        const before = await nodeRedis.get(key);
        const results: unknown[] = [];
        for (const each of [lease, { ...lease }]) {
          if (before === null) await nodeRedis.del(key);
          else await nodeRedis.set(key, before, { PX: LONG });
          sent.splice(0);
          const answer = await store.confirm(each, { retentionMs: LONG }).catch((e: Error) => e.message);
          results.push([answer, await nodeRedis.get(key)]);
          assert.deepEqual(
            sent,
            each === lease ? (nativeCommands[name] ?? ['SET IFEQ']) : ['script'],
            'the path under test ran',
          );
        }
        assert.deepEqual(results[0], results[1]);
      });
    }
  });

  // The race workers open their clients on the Valkey server (race-spec.ts reads this).
  process.env.ONCEONLY_RACE_REDIS_URL = valkey.url;
  describeRaces('redisStore on Valkey 8.1 across processes', spec);
}
