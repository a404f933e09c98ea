/**
 * The start-up check of the client's own settings: redisStore() reads the options of the client it
 * is given, once, without sending a command, and warns when the client would hold commands through
 * an outage (an offline queue, or ioredis resending after reconnects) or, for node-redis, has no
 * 'error' listener (an unhandled 'error' ends the process). Real clients, none of them connected:
 * what is checked is the options object each package builds.
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { type RedisClientLike, type RedisStoreOptions, redisStore } from '../../src/stores/redis.js';

const URL = 'redis://127.0.0.1:1';
const backoff = (n: number) => Math.min(100 * 2 ** n, 2_000);

const closers: Array<() => unknown> = [];
after(() => {
  for (const close of closers) close();
});

function warningsFor(client: RedisClientLike, options: Partial<RedisStoreOptions> = {}): string[] {
  const warnings: string[] = [];
  redisStore({ client, checkEvictionPolicy: false, ...options, onWarning: (m) => warnings.push(m) });
  return warnings;
}

const quiet = () => {};

interface Case {
  name: string;
  /** The client as the package builds it by default. */
  defaults(): RedisClientLike;
  /** The client with fail-fast settings (and an 'error' listener where it needs one). */
  failFast(): RedisClientLike;
  /** What the offline-queue warning must name: the option to set. */
  fix: RegExp;
  /** node-redis only: an 'error' listener is required. */
  needsListener: boolean;
}

const cases: Case[] = [
  {
    name: 'node-redis createClient',
    defaults: () => createClient({ url: URL }),
    failFast: () =>
      createClient({ url: URL, disableOfflineQueue: true, socket: { reconnectStrategy: backoff } }).on(
        'error',
        quiet,
      ),
    fix: /createClient\(\{ .*disableOfflineQueue: true/,
    needsListener: true,
  },
  {
    name: 'node-redis createCluster',
    defaults: () => createCluster({ rootNodes: [{ url: URL }] }),
    failFast: () =>
      createCluster({
        rootNodes: [{ url: URL }],
        defaults: { disableOfflineQueue: true, socket: { reconnectStrategy: backoff } },
      }).on('error', quiet),
    fix: /createCluster\(\{ .*defaults: \{ disableOfflineQueue: true/,
    needsListener: true,
  },
  {
    name: 'ioredis Redis',
    defaults: () => {
      const client = new Redis(URL, { lazyConnect: true });
      closers.push(() => client.disconnect());
      return client;
    },
    failFast: () => {
      const client = new Redis(URL, {
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: backoff,
      });
      closers.push(() => client.disconnect());
      return client;
    },
    fix: /new Redis\(.*enableOfflineQueue: false, maxRetriesPerRequest: 0/,
    needsListener: false,
  },
  {
    name: 'ioredis Cluster',
    defaults: () => {
      const client = new Cluster([URL], { lazyConnect: true });
      closers.push(() => client.disconnect());
      return client;
    },
    failFast: () => {
      const client = new Cluster([URL], { lazyConnect: true, enableOfflineQueue: false });
      closers.push(() => client.disconnect());
      return client;
    },
    fix: /new Cluster\(.*enableOfflineQueue: false/,
    needsListener: false,
  },
];

describe('redisStore start-up check of the client: offline queue and error listener', () => {
  for (const c of cases) {
    it(`warns about a ${c.name} with its default options, in one line naming the fix`, () => {
      // Act
      const warnings = warningsFor(c.defaults());
      // Assess
      const queue = warnings.filter((w) => /outage/.test(w));
      assert.equal(queue.length, 1, warnings.join('\n'));
      const [line] = queue as [string];
      assert.doesNotMatch(line, /\n/, 'one line');
      assert.match(line, /^onceonly: /);
      assert.match(line, /wait/, 'says commands wait through the outage');
      assert.match(line, /late|after/, 'says they may land late');
      assert.match(line, c.fix);
      assert.match(line, /docs\/redis\.md/);
      const listener = warnings.filter((w) => /'error' listener/.test(w));
      assert.equal(listener.length, c.needsListener ? 1 : 0, warnings.join('\n'));
      if (c.needsListener) {
        assert.match(listener[0]!, /ends the process/);
        assert.match(listener[0]!, /\.on\('error'/);
      }
      assert.equal(warnings.length, c.needsListener ? 2 : 1, warnings.join('\n'));
    });

    it(`stays quiet about a ${c.name} with fail-fast settings`, () => {
      assert.deepEqual(warningsFor(c.failFast()), []);
    });

    it(`stays quiet about a ${c.name} with checkOfflineQueue: false`, () => {
      assert.deepEqual(warningsFor(c.defaults(), { checkOfflineQueue: false }), []);
    });
  }

  it('warns about an ioredis client that resends commands after reconnects, even with no offline queue', () => {
    // maxRetriesPerRequest (default 20): commands in flight when the connection drops are resent
    // after a reconnect, up to 20 reconnect attempts later.
    for (const maxRetriesPerRequest of [undefined, 20, null]) {
      const client = new Redis(URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest });
      closers.push(() => client.disconnect());
      const warnings = warningsFor(client);
      assert.equal(warnings.length, 1, `maxRetriesPerRequest ${maxRetriesPerRequest}`);
      assert.match(warnings[0]!, /maxRetriesPerRequest: 0/);
    }
    const one = new Redis(URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    closers.push(() => one.disconnect());
    assert.deepEqual(warningsFor(one), [], 'one retry is bounded: accepted');
  });

  it('warns about a missing error listener alone when the offline queue is off (node-redis)', () => {
    const warnings = warningsFor(createClient({ url: URL, disableOfflineQueue: true }));
    assert.equal(warnings.length, 1, warnings.join('\n'));
    assert.match(warnings[0]!, /'error' listener/);
  });

  it('sends nothing and says nothing about a client shape it does not know (a wrapper)', () => {
    const sent: unknown[] = [];
    const wrapper = {
      evalSha: (...args: unknown[]) => Promise.resolve(sent.push(args)),
      sendCommand: (...args: unknown[]) => Promise.resolve(sent.push(args)),
    } as unknown as RedisClientLike;
    assert.deepEqual(warningsFor(wrapper), []);
    assert.deepEqual(sent, []);
  });

  it('goes to console.warn by default', () => {
    const seen: unknown[] = [];
    const original = console.warn;
    console.warn = (...args: unknown[]) => seen.push(args.join(' '));
    try {
      redisStore({ client: createClient({ url: URL }), checkEvictionPolicy: false });
    } finally {
      console.warn = original;
    }
    assert.equal(seen.length, 2);
  });
});
