/**
 * Store calls have a deadline, and a late confirm never lands after its lease. On a throwaway
 * `redis-server` of the test's own:
 *
 * - frozen (SIGSTOP) for 6 s: under fail-closed every delivery answers 503 `store_timeout` within
 *   `storeTimeout`, under fail-open it runs degraded within it, and a handler that finishes into the
 *   freeze answers `confirm-failed` within it (before: every request hung the 6 s);
 * - stopped while 8 s leases are held (AOF keeps every key), and started again once every owner's
 *   confirm has failed three times in the background: the handlers end during the outage, their
 *   confirms fail, and a competing claimant polls from the restart on. Every event runs once: the
 *   background confirm lands before the lease it belongs to ends. Before, its tries were spaced
 *   from when retrying started (0.5, 1.5, 3.5, 7.5 s on), so the one after the restart came after
 *   the lease had run out and the competitor had run the event again.
 */
import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createClient } from 'redis';
import { once } from '../../src/once.js';
import { hmac } from '../../src/providers/hmac.js';
import { createReceiver } from '../../src/receiver/receiver.js';
import { redisStore } from '../../src/stores/redis.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { wrapStore } from '../support/wrap-store.js';
import { FAULT_SIZE } from './support/fleet.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const SECRET = 'deadline-secret';
/** Failed background confirm tries per owner before the outage ends: the retries are on their schedule. */
const BACKGROUND_TRIES = 3;

function provider() {
  return hmac<{ id: string }>({
    name: 'acme',
    secret: SECRET,
    signatureHeader: 'x-sig',
    id: (event) => event.id,
  });
}

function delivery(id: string): Request {
  const body = JSON.stringify({ id });
  return new Request('http://localhost/hooks', {
    method: 'POST',
    body,
    headers: { 'x-sig': createHmac('sha256', SECRET).update(body).digest('hex') },
  });
}

/** A client set up as docs/redis.md says: fail fast while disconnected, reconnect for ever. */
async function client(url: string) {
  return createClient({ url, disableOfflineQueue: true, socket: { reconnectStrategy: () => 50 } })
    .on('error', () => {})
    .connect();
}

/** True when the server answers a PING within `ms` (a raw socket: no client state to hang on). */
function answers(port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), ms);
    socket.on('error', () => done(false));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
    socket.on('connect', () => socket.write('PING\r\n'));
  });
}

describe('store calls have a deadline (own redis-server, frozen with SIGSTOP)', () => {
  let redis: RedisInstance;
  before(async () => {
    redis = await startRedisInstance();
  });
  after(async () => {
    await redis?.destroy();
  });

  it('fail-closed answers 503 store_timeout, fail-open runs degraded, a finished handler answers confirm-failed: all within storeTimeout', async () => {
    const c = await client(redis.url);
    const store = redisStore({ client: c, prefix: `oo-deadline-${randomBytes(3).toString('hex')}:` });
    let ranOpen = 0;
    let enterFreeze!: () => void;
    const freezing = new Promise<void>((resolve) => {
      enterFreeze = resolve;
    });
    const closed = createReceiver({
      provider: provider(),
      store,
      handler: () => {},
      storeTimeout: '1s',
      logger: false,
    });
    const open = createReceiver({
      name: 'acme-open',
      provider: provider(),
      store,
      onStoreError: 'open',
      handler: () => void ranOpen++,
      storeTimeout: '1s',
      logger: false,
    });
    // Its confirms counted: the one that meets the freeze times out, and the retry goes to the
    // background, never ahead of the answer.
    let confirms = 0;
    const counted = wrapStore(store, (method) => {
      if (method === 'confirm') confirms++;
    });
    let slowRan = false;
    let slowStarted!: () => void;
    const slowRuns = new Promise<void>((resolve) => {
      slowStarted = resolve;
    });
    const slow = createReceiver({
      name: 'acme-slow',
      provider: provider(),
      store: counted,
      handler: () => {
        slowRan = true;
        slowStarted();
        return freezing; // ends once the server is frozen: its confirm meets the freeze
      },
      storeTimeout: '1s',
      logger: false,
    });
    // The slow handler is claimed before the freeze (the freeze waits for it to run: a fixed 200 ms
    // let a claim slowed by a loaded host meet the freeze) and finishes during it.
    const finishing = (async () => {
      const res = await slow.fetch(delivery('evt_slow'));
      return { res, confirmsBeforeAnswer: confirms };
    })();
    await Promise.race([slowRuns, sleep(10_000)]);
    assert.ok(slowRan, 'the slow handler was claimed and runs before the freeze');

    const paused = redis.pause(6_000);
    await sleep(100);
    assert.equal(await answers(redis.port, 500), false, 'the server is frozen');
    const freezeStarted = Date.now();
    enterFreeze();

    const timed = async (receiver: typeof closed, id: string) => {
      const started = Date.now();
      const res = await receiver.fetch(delivery(id));
      return { res, took: Date.now() - started };
    };
    const [c1, o1] = await Promise.all([timed(closed, 'evt_closed'), timed(open, 'evt_open')]);
    const { res: s1, confirmsBeforeAnswer } = await finishing;
    const slowTook = Date.now() - freezeStarted;
    await paused;

    assert.equal(c1.res.status, 503);
    assert.equal((await c1.res.json()).code, 'store_timeout');
    assert.ok(c1.took < 2_500, `fail-closed answered after ${c1.took} ms, not the 6 s freeze`);
    assert.equal(o1.res.status, 200);
    assert.equal(o1.res.headers.get('onceonly-degraded'), 'store-unavailable');
    assert.equal(ranOpen, 1);
    assert.ok(o1.took < 2_500, `fail-open answered after ${o1.took} ms`);
    assert.equal(s1.status, 200);
    assert.equal(s1.headers.get('onceonly-degraded'), 'confirm-failed');
    assert.ok(slowTook < 2_500, `the finished handler answered ${slowTook} ms into the freeze`);
    assert.equal(confirmsBeforeAnswer, 1, 'one confirm try before the answer: retries go to the background');
    c.destroy();
  });
});

describe('an outage shorter than the lease doubles nothing (own redis-server stopped and restarted)', () => {
  let redis: RedisInstance;
  before(async () => {
    redis = await startRedisInstance();
  });
  after(async () => {
    await redis?.destroy();
  });

  it(`${12 * FAULT_SIZE} events: handlers end during an outage within their 8 s leases, the store back once every owner's confirm retries in the background; a competitor polls from the restart; each runs once`, async () => {
    const events = 12 * FAULT_SIZE;
    const prefix = `oo-outage-${randomBytes(3).toString('hex')}:`;
    const ownerInner = redisStore({ client: await client(redis.url), prefix });
    const competitorClient = await client(redis.url);
    const competitor = redisStore({ client: competitorClient, prefix });
    const runs = new Map<string, number>();
    // The owners' store, probed: every confirm try, failed or landed, per key. A try that fails
    // after the owner answered is its background confirm at work.
    const answered = new Set<string>();
    const backgroundFailures = new Map<string, number>();
    const landed = new Map<string, boolean>();
    let everyOwnerRetrying!: () => void;
    const retrying = new Promise<void>((resolve) => {
      everyOwnerRetrying = resolve;
    });
    const owner: typeof ownerInner = {
      ...ownerInner,
      confirm: async (lease, options) => {
        try {
          const held = await ownerInner.confirm(lease, options);
          landed.set(lease.key, held);
          return held;
        } catch (error) {
          if (answered.has(lease.key)) {
            backgroundFailures.set(lease.key, (backgroundFailures.get(lease.key) ?? 0) + 1);
            const waiting = [...backgroundFailures.values()].filter((n) => n >= BACKGROUND_TRIES).length;
            if (waiting === events) everyOwnerRetrying();
          }
          throw error;
        }
      },
    };
    // The owners' handlers end 200 ms into the outage (whenever the last claim got in: a fixed delay
    // before the stop left a claim slowed by a loaded host unanswered, failing instead), the
    // competitor's after 1 s.
    let started = 0;
    let allStarted!: () => void;
    const everyHandlerStarted = new Promise<void>((resolve) => {
      allStarted = resolve;
    });
    let stopped!: () => void;
    const outage = new Promise<void>((resolve) => {
      stopped = resolve;
    });
    const work = (key: string) => () => {
      runs.set(key, (runs.get(key) ?? 0) + 1);
      if (++started === events) allStarted();
      return started <= events ? outage.then(() => sleep(200)) : sleep(1_000);
    };
    const options = { lease: '8s', timeout: '10s', storeTimeout: '1s', logger: false } as const;

    // Claims spread over 300 ms, the stop once every handler runs: every handler ends in the outage,
    // and every lease (no renewal got through) ends less than 8 s after the stop.
    const keys = Array.from({ length: events }, (_, i) => `evt_${i}`);
    const owners = keys.map(async (key, i) => {
      await sleep(Math.floor((300 * i) / events));
      const result = await once(owner, key, work(key), options);
      answered.add(key);
      return result;
    });
    await Promise.race([everyHandlerStarted, sleep(10_000)]);
    assert.equal(started, events, "every owner's claim got in before the stop");
    await redis.stop();
    const stoppedAt = Date.now();
    stopped();
    assert.equal(await answers(redis.port, 300), false, 'the server is down');
    const results = await Promise.all(owners);
    const confirmFailed = results.filter((r) => r.outcome === 'processed' && r.degraded === 'confirm-failed');
    assert.equal(confirmFailed.length, events, 'every handler ended during the outage');
    // The restart waits for the owners, not for a clock: once each owner's background confirm has
    // failed BACKGROUND_TRIES times it is waiting on its schedule for the next try. (A fixed outage
    // left a loaded host's slow stop and restart too little of the lease.) A schedule spaced from
    // when retrying started (0.5, 1.5, 3.5, 7.5 s on) gets its third try in 3.5 s and its next only
    // after the leases: the competitor would run every event again.
    await Promise.race([retrying, sleep(8_000)]);
    assert.deepEqual(
      keys.filter((key) => (backgroundFailures.get(key) ?? 0) < BACKGROUND_TRIES),
      [],
      `owners whose confirm did not retry ${BACKGROUND_TRIES} times in the background within their lease`,
    );
    assert.deepEqual([...landed.keys()], [], 'no confirm landed during the outage');
    const outageMs = Date.now() - stoppedAt;
    await redis.start();

    // The competitor: a retry of every event, from the restart until each is seen completed (a
    // lease that ran out unconfirmed is taken over, run again and completed first).
    const seen = new Map<string, string>();
    while (keys.some((key) => seen.get(key) !== 'duplicate') && Date.now() - stoppedAt < 30_000) {
      await Promise.all(
        keys.map(async (key) => {
          if (seen.get(key) === 'duplicate') return;
          const r = await once(competitor, key, work(key), options).catch(() => undefined);
          if (r) seen.set(key, r.outcome);
        }),
      );
      await sleep(100);
    }

    const doubled = keys.filter((key) => (runs.get(key) ?? 0) > 1);
    assert.deepEqual(doubled, [], `no event ran twice (outage ${outageMs} ms)`);
    assert.deepEqual(
      keys.filter((key) => seen.get(key) !== 'duplicate'),
      [],
      'the competitor finally sees every event completed',
    );
    assert.deepEqual(
      keys.filter((key) => landed.get(key) !== true),
      [],
      "every owner's background confirm landed, its lease still held",
    );
    competitorClient.destroy();
  });
});

describe('a late confirm never lands after its lease (one owner cut off from Redis, a competitor not)', () => {
  let redis: RedisInstance;
  before(async () => {
    redis = await startRedisInstance();
  });
  after(async () => {
    await redis?.destroy();
  });

  /**
   * Owner A reaches the store through a switch that can cut it off (a partition: A's calls fail
   * at once, everyone else's go through). The cut starts as soon as A's first lease renewal is
   * answered, so the lease then ends 4 s after that renewal was sent; the handler ends just after.
   */
  async function partitioned(prefix: string) {
    const inner = redisStore({ client: await client(redis.url), prefix });
    const state = { cut: false, renewed: 0, confirmsSentAt: [] as number[] };
    let firstRenewal!: () => void;
    const renewed = new Promise<void>((resolve) => {
      firstRenewal = resolve;
    });
    const refuse = () => Promise.reject(new Error('ECONNRESET: partitioned'));
    const store: typeof inner = {
      ...inner,
      claim: (...a) => (state.cut ? refuse() : inner.claim(...a)),
      extend: async (...a) => {
        if (state.cut) return refuse();
        state.renewed = performance.now();
        const held = await inner.extend(...a);
        state.cut = true; // the partition starts right after the first renewal
        firstRenewal();
        return held;
      },
      confirm: (...a) => {
        state.confirmsSentAt.push(performance.now());
        return state.cut ? refuse() : inner.confirm(...a);
      },
      release: (...a) => (state.cut ? refuse() : inner.release(...a)),
    };
    return { store, state, renewed };
  }

  it('with the owner cut off for good: no confirm try is sent after the lease it belongs to ran out', async () => {
    const prefix = `oo-last-${randomBytes(3).toString('hex')}:`;
    const a = await partitioned(prefix);
    const competitor = redisStore({ client: await client(redis.url), prefix });
    const options = { lease: '4s', timeout: '10s', storeTimeout: '1s', logger: false } as const;
    let runs = 0;
    const result = await once(
      a.store,
      'evt_last',
      async () => {
        runs++;
        await a.renewed; // the first renewal went through; from now on A is cut off
        await sleep(50);
      },
      options,
    );
    assert.equal(result.outcome === 'processed' && result.degraded, 'confirm-failed', 'the confirm failed');
    // The competitor retries every 50 ms until it takes the event over.
    let takenAt = 0;
    let takeover: Awaited<ReturnType<typeof once>> | undefined;
    while (!takenAt) {
      takeover = await once(competitor, 'evt_last', () => void runs++, options);
      if (takeover.outcome === 'processed') takenAt = performance.now();
      else await sleep(50);
    }
    await sleep(5_000); // the old schedule kept trying until 4 s after the handler ended
    assert.equal(
      takeover?.outcome === 'processed' && takeover.attempt,
      2,
      'the competitor took over at attempt 2',
    );
    const leaseEnd = a.state.renewed + 4_000;
    assert.ok(takenAt >= leaseEnd - 50, 'the takeover came when the lease ran out');
    const late = a.state.confirmsSentAt.filter((at) => at > leaseEnd);
    assert.deepEqual(
      late.map((at) => Math.round(at - leaseEnd)),
      [],
      'confirm tries sent after the lease ended',
    );
    assert.ok(
      a.state.confirmsSentAt.length > 3,
      `the owner kept trying while it could (${a.state.confirmsSentAt.length} tries)`,
    );
    assert.equal(
      runs,
      2,
      'the lease ran out before the store came back: the competitor ran it (reported confirm-failed)',
    );
  });

  it(`${8 * FAULT_SIZE} events: the owner cut off 2.5 s within its 4 s lease, the competitor polling: each runs once`, async () => {
    const prefix = `oo-cut-${randomBytes(3).toString('hex')}:`;
    const competitor = redisStore({ client: await client(redis.url), prefix });
    const options = { lease: '4s', timeout: '10s', storeTimeout: '1s', logger: false } as const;
    const runs = new Map<string, number>();
    const keys = Array.from({ length: 8 * FAULT_SIZE }, (_, i) => `evt_${i}`);
    await Promise.all(
      keys.map(async (key, i) => {
        await sleep(i * 37); // phases spread over the beat
        const a = await partitioned(prefix);
        const owner = once(
          a.store,
          key,
          async () => {
            runs.set(key, (runs.get(key) ?? 0) + 1);
            await a.renewed;
            await sleep(50);
          },
          options,
        );
        await a.renewed;
        setTimeout(() => {
          a.state.cut = false; // back 2.5 s after the cut, 1.5 s before the lease ends
        }, 2_500);
        const first = await owner;
        assert.equal(first.outcome === 'processed' && first.degraded, 'confirm-failed');
        // The provider's retry, from a worker that reaches the store.
        for (let t = 0; t < 120; t++) {
          const r = await once(competitor, key, () => void runs.set(key, (runs.get(key) ?? 0) + 1), options);
          if (r.outcome === 'duplicate') return;
          assert.equal(r.outcome, 'in-flight', `${key}: ${r.outcome}`);
          await sleep(50);
        }
        assert.fail(`${key}: never completed`);
      }),
    );
    assert.deepEqual(
      keys.filter((k) => runs.get(k) !== 1),
      [],
      'every event ran exactly once',
    );
  });
});
