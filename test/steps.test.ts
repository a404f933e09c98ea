/**
 * Durable steps and idempotency keys in the engine, on the memory store (the same spec runs on every
 * store from its own test file): memoised results, one read per retry and none on attempt 1, the
 * bounds and errors, a stale owner refused, steps without a lease, idempotency keys' shape.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  createReceiver,
  hmac,
  idempotencyKeyOf,
  type Lease,
  memoryStore,
  once,
  STEP_RESULT_MAX_BYTES,
  STEPS_MAX_BYTES,
  StepError,
  type Store,
} from '../src/index.js';
import { stepsSpec } from './support/steps-spec.js';

stepsSpec('memory', () => memoryStore());

/** The memory store with its steps counted. */
function counted(inner = memoryStore()) {
  const calls = { load: 0, save: 0 };
  const store: Store = {
    ...inner,
    claim: (k, o) => inner.claim(k, o),
    confirm: (l, o) => inner.confirm(l, o),
    release: (l) => inner.release(l),
    extend: (l, o) => inner.extend(l, o),
    record: (k, o) => inner.record(k, o),
    advance: (e, v) => inner.advance(e, v),
    inspect: (k) => inner.inspect(k),
    close: () => inner.close(),
    steps: {
      load: (lease) => {
        calls.load++;
        return inner.steps!.load(lease);
      },
      save: (lease, name, value) => {
        calls.save++;
        return inner.steps!.save(lease, name, value);
      },
    },
  };
  return { store, calls, inner };
}

const fail = (): never => {
  throw new Error('fail after the steps');
};

describe('ctx.step', () => {
  it('reads nothing on attempt 1, and the stored steps once on a retry however many steps run', async () => {
    const { store, calls } = counted();
    let runs = 0;
    const work = async (ctx: Parameters<Parameters<typeof once>[2]>[0]) => {
      for (const name of ['a', 'b', 'c']) await ctx.step(name, () => ++runs);
      if (ctx.attempt === 1) fail();
    };
    assert.equal((await once(store, 'k1', work, { logger: false })).outcome, 'failed');
    assert.deepEqual(calls, { load: 0, save: 3 });
    assert.equal((await once(store, 'k1', work, { logger: false })).outcome, 'processed');
    assert.deepEqual(calls, { load: 1, save: 3 }, 'one read, no step run or saved again');
    assert.equal(runs, 3);
  });

  it('runs a step once for two calls of its name in one run, even at the same time', async () => {
    const store = memoryStore();
    let runs = 0;
    const result = await once(store, 'k2', async (ctx) => {
      const [a, b] = await Promise.all([
        ctx.step('x', async () => ++runs),
        ctx.step('x', async () => ++runs),
      ]);
      return [a, b, await ctx.step('x', () => ++runs)];
    });
    assert.deepEqual(result.outcome === 'processed' && result.value, [1, 1, 1]);
  });

  it('refuses what it cannot keep, each with its code: a bad name, a value JSON cannot hold, a result over the bound', async () => {
    const store = memoryStore();
    const codes: string[] = [];
    const ran: string[] = [];
    await once(
      store,
      'k3',
      async (ctx) => {
        for (const [name, fn] of [
          ['', () => 1],
          ['x'.repeat(201), () => 1],
          ['nul\0', () => 1],
          ['lone \ud800', () => 1],
          ['bigint', () => 1n],
          ['function', () => () => 1],
          [
            'cycle',
            () => {
              const o: Record<string, unknown> = {};
              o.o = o;
              return o;
            },
          ],
          ['big', () => 'é'.repeat(STEP_RESULT_MAX_BYTES)],
        ] as const) {
          try {
            await ctx.step(name, () => {
              ran.push(name);
              return (fn as () => unknown)();
            });
            codes.push('stored');
          } catch (error) {
            assert.ok(error instanceof StepError, String(error));
            codes.push(error.code);
          }
        }
      },
      { logger: false },
    );
    assert.deepEqual(codes, [
      'invalid_step',
      'invalid_step',
      'invalid_step',
      'invalid_step',
      'step_not_json',
      'step_not_json',
      'step_not_json',
      'step_too_large',
    ]);
    assert.deepEqual(ran, ['bigint', 'function', 'cycle', 'big'], 'a bad name runs nothing');
  });

  it("refuses a stale owner's step after a takeover, and the run fails with step_refused", async () => {
    let now = 1_000_000;
    const store = memoryStore({ now: () => now });
    let effect = 0;
    const result = await once(
      store,
      'k4',
      async (ctx) => {
        now += 10 * 60_000; // the lease runs out (a long suspend) and another owner takes over
        const other = await store.claim(ctx.lease.key, { leaseMs: 60_000 });
        assert.equal(other.status, 'acquired');
        await ctx.step('charge', () => ++effect);
      },
      { logger: false },
    );
    assert.equal(result.outcome, 'failed');
    const error = (result as { error: unknown }).error;
    assert.ok(error instanceof StepError && error.code === 'step_refused', String(error));
    assert.equal(effect, 1);
  });

  it('does not start a step once the signal is aborted', async () => {
    let ran = false;
    let stepEnded: Promise<unknown> | undefined;
    const result = await once(
      memoryStore(),
      'k5',
      async (ctx) => {
        // The step is called after the deadline aborted the signal, while the test still waits on it.
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        stepEnded = ctx.step('late', () => {
          ran = true;
        });
        await stepEnded.catch(() => {});
      },
      { timeout: '50ms', logger: false },
    );
    assert.equal(result.outcome, 'failed');
    assert.ok(stepEnded, 'the step was called');
    await assert.rejects(
      stepEnded,
      (error: unknown) => error === (result as { error: unknown }).error || error instanceof Error,
    );
    assert.equal(ran, false);
  });

  it('holds one key to the bound of its steps together when steps are saved at the same time', async () => {
    const inner = memoryStore();
    const slow: Store = {
      ...inner,
      claim: (k, o) => inner.claim(k, o),
      confirm: (l, o) => inner.confirm(l, o),
      release: (l) => inner.release(l),
      extend: (l, o) => inner.extend(l, o),
      close: () => inner.close(),
      // Saves that take a while, as a real store's do: steps started together overlap.
      steps: {
        load: (lease) => inner.steps!.load(lease),
        save: async (lease, name, value) => {
          await new Promise((resolve) => setTimeout(resolve, 2));
          return inner.steps!.save(lease, name, value);
        },
      },
    };
    const part = 'é'.repeat(30_000); // 60,000 bytes of UTF-8 each
    const codes: string[] = [];
    await once(
      slow,
      'k7',
      async (ctx) => {
        const settled = await Promise.allSettled(
          Array.from({ length: 40 }, (_, i) => ctx.step(`part ${i}`, () => part)),
        );
        for (const r of settled)
          codes.push(r.status === 'fulfilled' ? 'stored' : (r.reason as StepError).code);
      },
      { logger: false },
    );
    assert.equal(((await inner.claim('k7', { leaseMs: 1 })) as { status: string }).status, 'completed');
    // 60,000 bytes and a name of 7 or 8 each: 17 fit in the bound; before the reservation all 40 did.
    assert.ok(codes.every((c) => c === 'stored' || c === 'step_too_large'));
    assert.equal(codes.filter((c) => c === 'stored').length, 17);
    assert.ok(17 * 60_008 <= STEPS_MAX_BYTES && 18 * 60_007 > STEPS_MAX_BYTES);
  });

  it('without a lease (unkeyed, fail-open) keeps to the same rules: JSON results, one run per name, the bounds', async () => {
    const inner = memoryStore();
    const down: Store = {
      ...inner,
      claim: async () => {
        throw new Error('connection refused');
      },
      close: () => inner.close(),
    };
    const receiver = createReceiver({
      name: 'open',
      provider: hmac<{ id: string }>({
        name: 'acme',
        secret: 'fail-open-secret',
        signatureHeader: 'x-sig',
        id: (e) => e.id,
      }),
      store: down,
      onStoreError: 'open',
      logger: false,
      handler: async (ctx) => {
        const at = await ctx.step('at', () => new Date(0));
        let runs = 0;
        const [a, b] = await Promise.all([ctx.step('n', () => ++runs), ctx.step('n', () => ++runs)]);
        const big = await ctx
          .step('big', () => 'é'.repeat(STEP_RESULT_MAX_BYTES))
          .catch((e: StepError) => e.code);
        seen.push({ at, a, b, big, key: ctx.idempotencyKey('n') });
      },
    });
    const seen: unknown[] = [];
    const body = JSON.stringify({ id: 'evt_open' });
    const res = await receiver.fetch(
      new Request('http://localhost/', {
        method: 'POST',
        body,
        headers: { 'x-sig': createHmac('sha256', 'fail-open-secret').update(body).digest('hex') },
      }),
    );
    assert.equal(res.headers.get('onceonly-degraded'), 'store-unavailable');
    assert.deepEqual(seen, [
      {
        at: new Date(0).toISOString(),
        a: 1,
        b: 1,
        big: 'step_too_large',
        key: idempotencyKeyOf('open:evt_open', 'n'),
      },
    ]);
  });

  it('throws steps_unsupported on a store without steps, and runs nothing', async () => {
    const inner = memoryStore();
    const { steps: _, ...bare } = inner;
    let ran = false;
    const result = await once(
      { ...bare, close: () => inner.close() } as Store,
      'k6',
      (ctx) =>
        ctx.step('x', () => {
          ran = true;
        }),
      { logger: false },
    );
    assert.equal(result.outcome, 'failed');
    assert.equal((result as { error: { code?: string } }).error.code, 'steps_unsupported');
    assert.equal(ran, false);
  });
});

describe('ctx.idempotencyKey', () => {
  it('is oo_ and 32 base64url characters, the same on every attempt, different across keys and names', async () => {
    const store = memoryStore();
    const seen: string[][] = [];
    const work = async (ctx: {
      attempt: number;
      idempotencyKey(n?: string): string;
      lease: Lease;
      step: Function;
    }) => {
      const inStep = await ctx.step(
        'charge',
        ({ idempotencyKey }: { idempotencyKey: string }) => idempotencyKey,
      );
      seen.push([ctx.idempotencyKey(), ctx.idempotencyKey('charge'), inStep as string]);
      if (ctx.attempt === 1) fail();
    };
    await once(store, 'orders:1', work as never, { logger: false });
    await once(store, 'orders:1', work as never, { logger: false });
    await once(store, 'orders:2', work as never, { logger: false });
    const [first, retry, other] = seen as [string[], string[], string[]];
    for (const k of [...first, ...other]) assert.match(k, /^oo_[A-Za-z0-9_-]{32}$/);
    assert.deepEqual(first, retry, 'the same on every attempt');
    assert.equal(first[1], first[2], "a step's key is idempotencyKey(its name)");
    assert.notEqual(first[0], first[1], 'names differ');
    assert.notEqual(first[1], other[1], 'keys differ');
    assert.equal(idempotencyKeyOf('orders:1', 'charge'), first[1]);
    assert.notEqual(idempotencyKeyOf('stripe:evt_1', 'x'), idempotencyKeyOf('stripe-eu:evt_1', 'x'));
  });
});

describe('ctx.step types', () => {
  it('types a result as what JSON makes of it (checked by tsc)', async () => {
    const result = await once(memoryStore(), 'types', async (ctx) => {
      const at: string = await ctx.step('at', () => new Date(0));
      const nothing: undefined = await ctx.step('void', () => undefined);
      const obj: { id: string; n: number } = await ctx.step('obj', async () => ({
        id: 'x',
        n: 1,
        f: () => 1,
      }));
      // @ts-expect-error a Date comes back as a string, never a Date
      const wrong: Date = await ctx.step('at2', () => new Date(0));
      // @ts-expect-error functions are left out of an object
      const gone: () => number = (await ctx.step('obj2', () => ({ f: () => 1 }))).f;
      return { at, nothing, obj, wrong, gone };
    });
    assert.equal(result.outcome, 'processed');
  });
});
