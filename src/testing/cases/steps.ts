/**
 * Durable steps (`store.steps`, see StepStore): kept through releases and takeovers, written only by
 * the owner, gone with confirm and with the key, exact for any name and value up to the bounds.
 * Every case's name starts with `steps:` (`runConformance({ steps: false })` leaves them out).
 */
import { strict as assert } from 'node:assert';
import { STEP_NAME_MAX, STEP_RESULT_MAX_BYTES, STEPS_MAX_BYTES, type StepStore } from '../../core/steps.js';
import type { Store } from '../../core/types.js';
import { acquired, type ConformanceCase, claimLong, fp, LONG, takenOver } from './shared.js';

/** The store's steps, or a failure that says how to leave the cases out. */
export function stepsOf(store: Store): StepStore {
  assert.ok(
    store.steps && typeof store.steps.load === 'function' && typeof store.steps.save === 'function',
    'the store has no `steps` (StepStore): implement it, or run the suite with { steps: false }',
  );
  return store.steps;
}

const asObject = (m: ReadonlyMap<string, string>) =>
  Object.fromEntries([...m].sort(([a], [b]) => (a < b ? -1 : 1)));

/** Names a store might mangle: quotes, JSON and SQL punctuation, a path, unicode, the longest. */
export const AWKWARD_NAMES = [
  'charge',
  'say "hi"',
  "it's",
  '$.a[0]',
  'a.b',
  '__proto__',
  'constructor',
  '\\back\\slash',
  'line\nbreak',
  'émoji 🧾',
  'x'.repeat(STEP_NAME_MAX),
];

export const stepCases: readonly ConformanceCase[] = [
  {
    name: 'steps: a saved result reads back after a release and after a takeover, with the attempt going on',
    async run(store, ctx) {
      const steps = stepsOf(store);
      const key = ctx.key();
      const first = await claimLong(store, key, fp('a'));
      assert.deepEqual(asObject(await steps.load(first)), {}, 'a fresh key has no steps');
      assert.equal(await steps.save(first, 'charge', '"pi_1"'), true);
      assert.equal(await steps.save(first, 'email', ''), true);
      assert.equal(await store.release(first), true);

      const second = acquired(
        await store.claim(key, { leaseMs: ctx.shortMs, fingerprint: fp('a'), retentionMs: LONG }),
      );
      assert.equal(second.attempt, 2);
      assert.deepEqual(asObject(await steps.load(second)), { charge: '"pi_1"', email: '' });
      assert.equal(await steps.save(second, 'ship', '{"n":1}'), true);

      await ctx.waitOut(); // the lease runs out: a takeover
      const third = acquired(await store.claim(key, { leaseMs: LONG, fingerprint: fp('a') }));
      assert.equal(third.attempt, 3);
      assert.deepEqual(asObject(await steps.load(third)), { charge: '"pi_1"', email: '', ship: '{"n":1}' });
    },
  },
  {
    name: "steps: a stale owner's save is refused and changes nothing; so is one after a release or with a forged token",
    async run(store, ctx) {
      const steps = stepsOf(store);
      const { stale, current } = await takenOver(store, ctx);
      assert.equal(await steps.save(stale, 'charge', '"stale"'), false, 'stale save');
      assert.deepEqual(asObject(await steps.load(current)), {});
      assert.equal(await steps.save(current, 'charge', '"current"'), true);
      assert.equal(await steps.save(stale, 'charge', '"stale"'), false, 'stale save over the owner’s');
      assert.deepEqual(asObject(await steps.load(current)), { charge: '"current"' });
      assert.equal(await steps.save({ ...current, token: 'f'.repeat(32) }, 'charge', '"forged"'), false);
      assert.equal(await steps.save({ ...current, token: '' }, 'charge', '"empty"'), false);

      assert.equal(await store.release(current), true);
      assert.equal(await steps.save(current, 'after', '"released"'), false, 'save after release');
      assert.deepEqual(asObject(await steps.load(current)), { charge: '"current"' });
    },
  },
  {
    name: 'steps: an owner whose lease ran out, with nobody taking over, still saves (as extend revives it)',
    async run(store, ctx) {
      const steps = stepsOf(store);
      const key = ctx.key();
      const lease = acquired(await store.claim(key, { leaseMs: ctx.shortMs, retentionMs: LONG }));
      await ctx.waitOut();
      assert.equal(await steps.save(lease, 'late', '1'), true);
      const next = acquired(await store.claim(key, { leaseMs: LONG }));
      assert.equal(next.attempt, 2);
      assert.deepEqual(asObject(await steps.load(next)), { late: '1' });
    },
  },
  {
    name: 'steps: confirm drops them, and a new life of the key (retention or grace run out) starts with none',
    async run(store, ctx) {
      const steps = stepsOf(store);
      const done = ctx.key();
      const lease = await claimLong(store, done);
      assert.equal(await steps.save(lease, 'charge', '"pi_1"'), true);
      assert.equal(await store.confirm(lease, { retentionMs: ctx.shortMs }), true);
      assert.deepEqual(asObject(await steps.load(lease)), {}, 'confirmed: no steps');
      assert.equal(await steps.save(lease, 'after', '1'), false, 'a save after confirm');

      const released = ctx.key();
      const failed = acquired(await store.claim(released, { leaseMs: LONG, retentionMs: ctx.shortMs }));
      assert.equal(await steps.save(failed, 'charge', '"pi_2"'), true);
      assert.equal(await store.release(failed), true);

      await ctx.waitOut();
      const fresh = acquired(await store.claim(done, { leaseMs: LONG }));
      assert.equal(fresh.attempt, 1, 'a completed key past its retention starts a new life');
      assert.deepEqual(asObject(await steps.load(fresh)), {}, 'a new life has no steps');
      // A released record past its retention is forgotten (a new life, attempt 1, no steps), or still
      // remembered until a purge (the SQL stores keep the attempt counting, for fencing): then it is
      // the same life, and its steps come with the attempt. Attempt 1 never has steps.
      const retry = acquired(await store.claim(released, { leaseMs: LONG }));
      assert.deepEqual(
        asObject(await steps.load(retry)),
        retry.attempt === 1 ? {} : { charge: '"pi_2"' },
        `attempt ${retry.attempt} of a released key past its retention`,
      );
    },
  },
  {
    name: 'steps: names and results are kept exactly, a save of a name replaces it, up to the size bounds',
    async run(store, ctx) {
      const steps = stepsOf(store);
      const lease = await claimLong(store, ctx.key());
      const expected = new Map<string, string>();
      for (const [i, name] of AWKWARD_NAMES.entries()) {
        const value = JSON.stringify({ i, name, text: 'quote " backslash \\ unicode é 🧾 nul \u0000' });
        assert.equal(await steps.save(lease, name, value), true, `save ${JSON.stringify(name)}`);
        expected.set(name, value);
      }
      assert.equal(await steps.save(lease, 'charge', '"replaced"'), true);
      expected.set('charge', '"replaced"');
      assert.deepEqual(asObject(await steps.load(lease)), asObject(expected));

      // The largest result, then results up to the bound of one key's steps (the store's own, when
      // it keeps less: `maxBytes`).
      const big = ctx.key();
      const owner = await claimLong(store, big);
      const largest = JSON.stringify('é'.repeat(Math.floor((STEP_RESULT_MAX_BYTES - 2) / 2)));
      const bound = Math.min(STEPS_MAX_BYTES, steps.maxBytes ?? STEPS_MAX_BYTES);
      const count = Math.floor(bound / (STEP_RESULT_MAX_BYTES + 16));
      for (let i = 0; i < count; i++) assert.equal(await steps.save(owner, `part ${i}`, largest), true);
      const loaded = await steps.load(owner);
      assert.equal(loaded.size, count);
      for (const value of loaded.values()) assert.equal(value, largest);
    },
  },
  {
    name: 'steps: saves of many names at once by the owner all land (none lost to another)',
    async run(store, ctx) {
      const steps = stepsOf(store);
      const lease = await claimLong(store, ctx.key());
      const names = Array.from({ length: 24 }, (_, i) => `step ${i}`);
      const saved = await Promise.all(names.map((name) => steps.save(lease, name, JSON.stringify(name))));
      assert.ok(saved.every(Boolean));
      assert.deepEqual(
        asObject(await steps.load(lease)),
        asObject(new Map(names.map((n) => [n, JSON.stringify(n)]))),
      );
    },
  },
];
