/**
 * Durable steps end to end over a store, one spec for every store: a handler of three steps fails
 * after the first (inline, then in inbox mode, then through once()), and the retry runs only the
 * steps not yet done, getting the first one's stored result back; a crashed owner's steps come back
 * to the run that takes its lease over; a stale owner's step is refused.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createReceiver, type HandlerContext, idempotencyKeyOf, once, type Store } from '../../src/index.js';
import { acmeDelivery, acme as acmeOf } from './acme.js';

const SECRET = 'steps-spec-secret';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const acme = () => acmeOf(SECRET);
const delivery = (id: string) => acmeDelivery(SECRET, JSON.stringify({ id, type: 'order.paid' }));

/**
 * A handler of three steps that throws after the first on its first attempt: what each step's
 * function saw, by attempt, and the results every run got back.
 */
function threeSteps() {
  const calls: string[] = [];
  const results: unknown[][] = [];
  const keys: string[] = [];
  const handler = async (
    ctx: Pick<HandlerContext<unknown>, 'attempt' | 'step' | 'idempotencyKey'> & { lease?: { key: string } },
  ) => {
    keys.push(ctx.lease!.key);
    const charge = await ctx.step('charge', ({ attempt, idempotencyKey }) => {
      calls.push(`charge#${attempt}`);
      return { id: `ch_${attempt}`, key: idempotencyKey, at: new Date(1_764_000_000_000) };
    });
    if (ctx.attempt === 1) throw new Error('the mail API answered 502');
    const mail = await ctx.step('email', ({ attempt }) => {
      calls.push(`email#${attempt}`);
      return undefined;
    });
    const ship = await ctx.step('ship', ({ attempt }) => {
      calls.push(`ship#${attempt}`);
      return [attempt];
    });
    results.push([charge, mail, ship]);
    return charge;
  };
  return { calls, results, keys, handler };
}

export function stepsSpec(label: string, store: (name: string) => Store | Promise<Store>): void {
  describe(`durable steps end to end (${label})`, () => {
    it('inline: the retry gets the first step back without running it, and runs the rest', async () => {
      const name = `st_${Math.random().toString(36).slice(2, 10)}`;
      const s = await store(name);
      const { calls, results, keys, handler } = threeSteps();
      const receiver = createReceiver({ name, provider: acme(), store: s, handler, logger: false });
      const id = `evt_${name}`;
      assert.equal((await receiver.fetch(delivery(id))).status, 500);
      assert.equal((await receiver.fetch(delivery(id))).status, 200);
      assert.equal((await receiver.fetch(delivery(id))).headers.get('onceonly-outcome'), 'duplicate');
      assert.deepEqual(calls, ['charge#1', 'email#2', 'ship#2']);
      assert.equal(keys[0], keys[1], 'both runs hold the same key');
      // What JSON makes of the result, the same as the first run got: the Date is a string.
      assert.deepEqual(results, [
        [
          {
            id: 'ch_1',
            key: idempotencyKeyOf(keys[0]!, 'charge'),
            at: new Date(1_764_000_000_000).toISOString(),
          },
          undefined,
          [2],
        ],
      ]);
      await s.close();
    });

    it('inbox: a worker run that failed after a step is retried, and the retry skips the step', async () => {
      const name = `si_${Math.random().toString(36).slice(2, 10)}`;
      const s = await store(name);
      const { calls, results, handler } = threeSteps();
      const receiver = createReceiver({
        name,
        provider: acme(),
        store: s,
        handler,
        logger: false,
        inbox: { backoff: () => 10 },
      });
      assert.equal((await receiver.fetch(delivery(`evt_${name}`))).status, 202);
      assert.equal(await receiver.runDue(), 1);
      await sleep(50);
      assert.equal(await receiver.runDue(), 1);
      assert.deepEqual(calls, ['charge#1', 'email#2', 'ship#2']);
      assert.equal((results[0]![0] as { id: string }).id, 'ch_1');
      assert.equal((await s.inbox!.get(`${name}:evt_${name}`))?.state, 'completed');
      await s.close();
    });

    it('hybrid: the inline run fails after a step, the worker run of the entry skips it', async () => {
      const name = `sh_${Math.random().toString(36).slice(2, 10)}`;
      const s = await store(name);
      const { calls, results, handler } = threeSteps();
      const receiver = createReceiver({
        name,
        provider: acme(),
        store: s,
        handler,
        logger: false,
        inbox: { inline: '2s', backoff: () => 10 },
      });
      const res = await receiver.fetch(delivery(`evt_${name}`));
      assert.equal(res.status, 202, 'failed within the budget: accepted, the inbox retries it');
      assert.deepEqual(calls, ['charge#1'], 'the inline run made the charge');
      await sleep(50);
      assert.equal(await receiver.runDue(), 1);
      assert.deepEqual(calls, ['charge#1', 'email#2', 'ship#2']);
      assert.equal((results[0]![0] as { id: string }).id, 'ch_1');
      await s.close();
    });

    it("once(): a crashed owner's steps come back to the takeover; a stale owner's step is refused", async () => {
      const s = await store(`so_${Math.random().toString(36).slice(2, 10)}`);
      const key = `jobs:${Math.random().toString(36).slice(2, 10)}`;
      // A run that saved its first step and died: its lease runs out.
      const claim = await s.claim(key, { leaseMs: 150, retentionMs: 60_000 });
      assert.equal(claim.status, 'acquired');
      const crashed = (claim as { lease: Parameters<NonNullable<Store['steps']>['save']>[0] }).lease;
      assert.equal(await s.steps!.save(crashed, 'charge', JSON.stringify({ id: 'ch_1' })), true);
      await sleep(400);
      const { calls, handler } = threeSteps();
      const result = await once(s, key, handler, { logger: false });
      assert.equal(result.outcome, 'processed');
      assert.equal((result as { attempt: number }).attempt, 2);
      assert.deepEqual(calls, ['email#2', 'ship#2'], 'the charge was not made again');
      // The crashed owner wakes up and tries to save a step: refused, nothing changed.
      assert.equal(await s.steps!.save(crashed, 'ship', '"stale"'), false);
      await s.close();
    });
  });
}
