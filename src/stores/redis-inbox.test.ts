import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { after, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { reachable, servers } from '../../test/support/servers.js';
import { sideBySide } from '../../test/support/side-by-side.js';
import type { InboxAcceptInput } from '../core/inbox.js';
import { storeKey } from '../core/keys.js';
import { runInboxConformance } from '../testing/index.js';
import { redisStore } from './redis.js';

/** ioredis 5, installed under the alias `ioredis5`: the peer range (`ioredis: >=5`) is what is tested. */
const Redis5 = (createRequire(import.meta.url)('ioredis5') as { Redis: typeof Redis }).Redis;
/** node-redis 4, installed under the alias `redis4`: the peer range (`redis: >=4`) is what is tested. */
const createClient4 = (createRequire(import.meta.url)('redis4') as { createClient: typeof createClient })
  .createClient;

const LONG = 60_000;
const prefix = `oo-inbox-${randomBytes(4).toString('hex')}:`;

/** Deletes every key a run wrote. */
async function deleteKeys(client: ReturnType<typeof createClient>, pattern: string): Promise<void> {
  for await (const keys of client.scanIterator({ MATCH: pattern, COUNT: 1000 })) {
    if (keys.length > 0) await client.unlink(keys);
  }
}

const input = (key: string, receiver: string, body = new Uint8Array([1, 2, 3])): InboxAcceptInput => ({
  key,
  receiver,
  fingerprint: 'a'.repeat(64),
  type: 'thing.created',
  id: key.slice(key.indexOf(':') + 1),
  body,
  headers: [['content-type', 'application/json']],
  receivedAt: new Date(1_764_000_000_123),
});

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  const nodeRedis = await createClient({ url: servers.redis }).connect();
  // node-redis 4's sendCommand ignores v5's typeMapping: bodies came back as text until the store
  // asked for Buffers the v4 way too (returnBuffers).
  const nodeRedis4 = await createClient4({ url: servers.redis }).connect();
  const ioredis = new Redis(servers.redis);
  // docs/redis.md's ioredis set-up: with auto-pipelining, ioredis 5 and 6 queue `callBuffer` without
  // its command name, and every accept failed ("unknown command '<key>'").
  const pipelined = new Redis(servers.redis, { enableAutoPipelining: true });
  const pipelined5 = new Redis5(servers.redis, { enableAutoPipelining: true });
  after(async () => {
    await deleteKeys(nodeRedis, `${prefix}*`);
    await nodeRedis.quit();
    await nodeRedis4.quit();
    ioredis.disconnect();
    pipelined.disconnect();
    pipelined5.disconnect();
  });

  sideBySide('redisStore inbox conformance, the clients side by side', (runner) => [
    runInboxConformance({
      name: 'redisStore inbox conformance (node-redis)',
      factory: () => redisStore({ client: nodeRedis, prefix: `${prefix}nr:` }).inbox!,
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance (node-redis 4)',
      factory: () => redisStore({ client: nodeRedis4, prefix: `${prefix}nr4:` }).inbox!,
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance (ioredis)',
      factory: () => redisStore({ client: ioredis, prefix: `${prefix}io:` }).inbox!,
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance (ioredis, enableAutoPipelining)',
      factory: () => redisStore({ client: pipelined, prefix: `${prefix}iop:` }).inbox!,
      runner,
    }),
    runInboxConformance({
      name: 'redisStore inbox conformance (ioredis 5, enableAutoPipelining)',
      factory: () => redisStore({ client: pipelined5, prefix: `${prefix}io5p:` }).inbox!,
      runner,
    }),
  ]);

  describe('redisStore inbox on the Redis server', () => {
    it("keeps one receiver's inbox under one hash tag: its own name, the key space of every key it writes", async () => {
      // Prepare
      const p = `${prefix}layout:`;
      const inbox = redisStore({ client: nodeRedis, prefix: p }).inbox!;
      // Act
      await inbox.accept(input('stripe:evt_1', 'stripe'));
      await inbox.accept(input('stripe:evt_2', 'stripe'));
      const [job] = await inbox.take({ limit: 1, leaseMs: LONG, receiver: 'stripe' });
      await inbox.complete(job!.lease, { retentionMs: LONG });
      // Assess: every key of the receiver's inbox is under {stripe}, plus the registry of queues.
      const keys: string[] = [];
      for await (const batch of nodeRedis.scanIterator({ MATCH: `${p}*`, COUNT: 1000 })) keys.push(...batch);
      assert.deepEqual(keys.sort(), [
        `${p}i:queues`,
        `${p}i:{stripe}:b:stripe:evt_1`,
        `${p}i:{stripe}:b:stripe:evt_2`,
        `${p}i:{stripe}:c:stripe`,
        `${p}i:{stripe}:e:stripe:evt_1`,
        `${p}i:{stripe}:e:stripe:evt_2`,
        `${p}i:{stripe}:n`,
        `${p}i:{stripe}:p:stripe`,
      ]);
      // The completed entry expires with its retention, on the server's clock; its hash is compact.
      for (const part of ['e', 'b']) {
        const ttl = await nodeRedis.pTTL(`${p}i:{stripe}:${part}:stripe:evt_1`);
        assert.ok(ttl > LONG - 5_000 && ttl <= LONG, `PTTL ${ttl}`);
        const pending = await nodeRedis.pTTL(`${p}i:{stripe}:${part}:stripe:evt_2`);
        assert.equal(pending, -1, 'a pending entry never expires');
      }
      const encoding = await nodeRedis.sendCommand(['OBJECT', 'ENCODING', `${p}i:{stripe}:e:stripe:evt_2`]);
      assert.equal(encoding, 'listpack');
    });

    it('an entry damaged outside onceonly (its delivery or a field not what accept wrote) is taken as unreadable and can be buried; the rest of the take runs', async () => {
      const p = `${prefix}damaged:`;
      const inbox = redisStore({ client: nodeRedis, prefix: p }).inbox!;
      const damaged = ['body', 'field', 'seq', 'tries', 'state'];
      for (const id of [...damaged, 'good']) await inbox.accept(input(`acme:evt_${id}`, 'acme'));
      await nodeRedis.set(`${p}i:{acme}:b:acme:evt_body`, 'no newline, no JSON');
      await nodeRedis.hSet(`${p}i:{acme}:e:acme:evt_field`, 'ty', '{not json');
      // The numbers and the state the take script itself reads (before: a Lua error that failed
      // every take of the receiver, so nothing behind them ever ran).
      await nodeRedis.hSet(`${p}i:{acme}:e:acme:evt_seq`, 'o', 'garbage');
      await nodeRedis.hSet(`${p}i:{acme}:e:acme:evt_tries`, 'n', 'garbage');
      await nodeRedis.hSet(`${p}i:{acme}:e:acme:evt_state`, 's', '?');
      const jobs = await inbox.take({ limit: 10, leaseMs: LONG, receiver: 'acme' });
      const byKey = new Map(jobs.map((j) => [j.key, j]));
      assert.deepEqual([...byKey.keys()].sort(), [...damaged, 'good'].map((id) => `acme:evt_${id}`).sort());
      for (const key of damaged.map((id) => `acme:evt_${id}`)) {
        const job = byKey.get(key)!;
        assert.match(job.unreadable ?? '', /^the stored entry could not be read back: /, key);
        assert.equal(
          await inbox.bury(job.lease, { error: job.unreadable! }),
          true,
          `${key} buried by its owner`,
        );
        assert.equal((await inbox.get(key))?.state, 'dead');
      }
      assert.equal(byKey.get('acme:evt_good')!.unreadable, undefined);
      assert.equal(await inbox.complete(byKey.get('acme:evt_good')!.lease, { retentionMs: LONG }), true);
    });

    it('an unreadable entry under a hashed key (the key as given damaged too) is buried by its owner, not taken again every lease', async () => {
      const p = `${prefix}hashed:`;
      const inbox = redisStore({ client: nodeRedis, prefix: p }).inbox!;
      const key = `acme:${'x'.repeat(600)}`; // past 512 characters: stored as its hash
      await inbox.accept(input(key, 'acme'));
      await nodeRedis.hSet(`${p}i:{acme}:e:${storeKey(key)}`, 'k', '{not json');
      const [job] = await inbox.take({ limit: 1, leaseMs: LONG, receiver: 'acme' });
      assert.match(job?.unreadable ?? '', /could not be read back/);
      // Before, the bury named the entry by the stored key run through storeKey and spaceOf again.
      assert.equal(await inbox.bury(job!.lease, { error: job!.unreadable! }), true, 'buried by its owner');
      const { processing, dead } = await inbox.stats({ receiver: 'acme' });
      assert.deepEqual({ processing, dead }, { processing: 0, dead: 1 });
    });

    it('takes oldest due first over every key space of one receiver, and stats and lists them all', async () => {
      // Prepare: keys of one receiver under three spaces (its own, another, none).
      const inbox = redisStore({ client: nodeRedis, prefix: `${prefix}spaces:` }).inbox!;
      const keys = ['hooks:1', 'other:2', 'odd key 3', 'hooks:4'];
      for (const key of keys) {
        await inbox.accept(input(key, 'hooks'));
        await new Promise((resolve) => setTimeout(resolve, 3));
      }
      // Act: a fresh inbox (nothing cached) takes two, then the rest.
      const fresh = redisStore({ client: ioredis, prefix: `${prefix}spaces:` }).inbox!;
      const first = await fresh.take({ limit: 2, leaseMs: LONG, receiver: 'hooks' });
      const stats = await fresh.stats({ receiver: 'hooks' });
      const rest = await fresh.take({ limit: 10, leaseMs: LONG, receiver: 'hooks' });
      // Assess
      assert.deepEqual(
        first.map((j) => j.key),
        keys.slice(0, 2),
      );
      assert.deepEqual(
        rest.map((j) => j.key),
        keys.slice(2),
      );
      assert.deepEqual(stats, {
        pending: 2,
        processing: 2,
        completed: 0,
        dead: 0,
        scheduled: 0,
        oldestDueMs: stats.oldestDueMs,
      });
      assert.equal((await fresh.list({ receiver: 'hooks' })).length, 4);
      assert.deepEqual((await fresh.stats()).processing, 4, 'all receivers: the registry finds every space');
      for (const key of keys) assert.equal((await fresh.get(key))?.state, 'processing');
    });

    it('works through an ioredis client with its own keyPrefix, every key (scripts build some) under it', async () => {
      const prefixed = new Redis(servers.redis, { keyPrefix: `${prefix}kp:` });
      try {
        // Act: every kind of operation, including those whose keys only the scripts name.
        const inbox = redisStore({ client: prefixed, prefix: 'oo:', checkEvictionPolicy: false }).inbox!;
        await inbox.accept(input('app:1', 'app'));
        await inbox.accept(input('app:2', 'app'));
        const [one, two] = await inbox.take({ limit: 2, leaseMs: LONG, receiver: 'app' });
        assert.equal(await inbox.extend(one!.lease, { leaseMs: LONG }), true);
        assert.equal(await inbox.complete(one!.lease, { retentionMs: LONG }), true);
        assert.equal(await inbox.bury(two!.lease, { error: 'x' }), true);
        assert.equal(await inbox.requeue({ dead: true }), 1);
        assert.equal((await inbox.stats()).completed, 1);
        // Assess: every key under the client's prefix, none without it.
        const keys: string[] = [];
        for await (const batch of nodeRedis.scanIterator({ MATCH: `${prefix}kp:*`, COUNT: 1000 }))
          keys.push(...batch);
        assert.ok(keys.length >= 6, keys.join(', '));
        assert.ok(keys.every((k) => k.startsWith(`${prefix}kp:oo:i:`)));
        const stray: string[] = [];
        for await (const batch of nodeRedis.scanIterator({ MATCH: 'oo:i:*', COUNT: 1000 }))
          stray.push(...batch);
        assert.deepEqual(stray, []);
        assert.equal(await nodeRedis.exists(`${prefix}kp:oo:i:queues`), 1);
      } finally {
        prefixed.disconnect();
      }
    });

    it('stores bodies byte for byte, up to a megabyte of random bytes, on both clients', async () => {
      for (const client of [nodeRedis, ioredis]) {
        const inbox = redisStore({ client, prefix: `${prefix}bytes:` }).inbox!;
        const body = randomBytes(1 << 20);
        const key = `big:${randomBytes(4).toString('hex')}`;
        await inbox.accept(input(key, 'big', body));
        const [job] = await inbox.take({ limit: 1, leaseMs: LONG, receiver: 'big' });
        assert.ok(Buffer.from(job!.body).equals(body));
        assert.ok(Buffer.from((await inbox.get(key))!.delivery!.body).equals(body));
      }
    });

    it('keeps a key that is not printable ASCII (lone surrogate, NUL) exactly, so its lease still finds it', async () => {
      const inbox = redisStore({ client: nodeRedis, prefix: `${prefix}keys:` }).inbox!;
      const key = 'weird:evt_\ud800\u0000é';
      await inbox.accept(input(key, 'weird'));
      await inbox.accept(input('weird:evt_\udbff\u0000é', 'weird'));
      const jobs = await inbox.take({ limit: 5, leaseMs: LONG, receiver: 'weird' });
      assert.deepEqual(jobs.map((j) => j.key).sort(), [key, 'weird:evt_\udbff\u0000é'].sort());
      for (const job of jobs) assert.equal(await inbox.complete(job.lease, { retentionMs: LONG }), true);
      assert.equal((await inbox.get(key))?.state, 'completed');
    });
  });
}
