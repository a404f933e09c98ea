/**
 * Durable steps of inbox entries (`inbox.steps`, see StepStore): kept through retry, bury, requeue
 * and takeovers, written only by the entry's owner, gone with complete. Every case's name starts
 * with `steps:` (`runInboxConformance({ steps: false })` leaves them out).
 */
import { strict as assert } from 'node:assert';
import type { InboxStore } from '../core/inbox.js';
import type { StepStore } from '../core/steps.js';
import type { Lease } from '../core/types.js';
import { AWKWARD_NAMES } from './cases/steps.js';
import { entry, type InboxConformanceCase, takeOne } from './inbox-cases.js';

const LONG = 60_000;

function stepsOf(inbox: InboxStore): StepStore {
  assert.ok(
    inbox.steps && typeof inbox.steps.load === 'function' && typeof inbox.steps.save === 'function',
    'the inbox has no `steps` (StepStore): implement it, or run the suite with { steps: false }',
  );
  return inbox.steps;
}

const asObject = (m: ReadonlyMap<string, string>) =>
  Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)));

export const inboxStepCases: readonly InboxConformanceCase[] = [
  {
    name: 'steps: an entry keeps its steps through retry, a takeover, bury and requeue; complete drops them',
    async run(inbox, ctx) {
      const steps = stepsOf(inbox);
      const key = ctx.key();
      assert.equal((await inbox.accept(entry(ctx, key))).status, 'accepted');
      const first = (await takeOne(inbox, ctx)).lease;
      assert.equal(first.attempt, 1);
      assert.deepEqual(asObject(await steps.load(first)), {});
      assert.equal(await steps.save(first, 'charge', '"pi_1"'), true);
      assert.equal(await inbox.retry(first, { delayMs: 0, error: 'boom' }), true);

      const second = (await takeOne(inbox, ctx, ctx.shortMs)).lease;
      assert.equal(second.attempt, 2);
      assert.deepEqual(asObject(await steps.load(second)), { charge: '"pi_1"' });
      assert.equal(await steps.save(second, 'email', ''), true);
      await ctx.waitOut(); // its lease runs out: taken over

      const third = (await takeOne(inbox, ctx)).lease;
      assert.equal(third.attempt, 3);
      assert.deepEqual(asObject(await steps.load(third)), { charge: '"pi_1"', email: '' });
      assert.equal(await steps.save(second, 'stale', '1'), false, "the stale owner's save");
      assert.equal(await inbox.bury(third, { error: 'gave up' }), true);
      assert.equal(await steps.save(third, 'dead', '1'), false, 'a save after bury');
      assert.equal(await inbox.requeue({ key }), 1);

      const fourth = (await takeOne(inbox, ctx)).lease;
      assert.deepEqual(asObject(await steps.load(fourth)), { charge: '"pi_1"', email: '' });
      assert.equal(await inbox.complete(fourth, { retentionMs: LONG }), true);
      assert.deepEqual(asObject(await steps.load(fourth)), {}, 'completed: no steps');
      assert.equal(await steps.save(fourth, 'after', '1'), false, 'a save after complete');
    },
  },
  {
    name: "steps: the accepting request's own lease (hybrid) saves, a forged token does not, names are kept exactly",
    async run(inbox, ctx) {
      const steps = stepsOf(inbox);
      const accepted = await inbox.accept(entry(ctx, ctx.key()), { claimMs: LONG });
      assert.equal(accepted.status, 'accepted');
      const lease = (accepted as { lease?: Lease }).lease;
      assert.ok(lease, 'accept with claimMs hands out a lease');
      const expected = new Map<string, string>();
      for (const [i, name] of AWKWARD_NAMES.entries()) {
        const value = JSON.stringify({ i, name, text: 'quote " backslash \\ é 🧾' });
        assert.equal(await steps.save(lease, name, value), true, `save ${JSON.stringify(name)}`);
        expected.set(name, value);
      }
      assert.equal(await steps.save({ ...lease, token: 'f'.repeat(32) }, 'forged', '1'), false);
      assert.deepEqual(asObject(await steps.load(lease)), asObject(expected));
    },
  },
  {
    name: 'steps: saves of many names at once by the entry’s owner all land',
    async run(inbox, ctx) {
      const steps = stepsOf(inbox);
      await inbox.accept(entry(ctx, ctx.key()));
      const { lease } = await takeOne(inbox, ctx);
      const names = Array.from({ length: 24 }, (_, i) => `step ${i}`);
      const saved = await Promise.all(names.map((name) => steps.save(lease, name, JSON.stringify(name))));
      assert.ok(saved.every(Boolean));
      assert.equal((await steps.load(lease)).size, names.length);
    },
  },
];
