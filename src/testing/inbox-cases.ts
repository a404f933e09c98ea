import { strict as assert } from 'node:assert';
import type { InboxStore } from '../core/inbox.js';
import type { Lease } from '../core/types.js';
import { inboxBatchCases } from './inbox-batch-cases.js';
import {
  entry,
  fp,
  type InboxCaseContext,
  type InboxConformanceCase,
  LONG,
  takeAll,
  takeOne,
} from './inbox-kit.js';
import { inboxListCases } from './inbox-list-cases.js';

export type { InboxCaseContext, InboxConformanceCase } from './inbox-kit.js';
export { entry, takeOne } from './inbox-kit.js';

/**
 * Two entries due in the reverse of their acceptance: a then b accepted, both taken and retried, a
 * due a whole shortMs after b; both due once it returns. Acceptance order says a, due order b.
 */
async function dueInReverse(inbox: InboxStore, ctx: InboxCaseContext): Promise<[string, string]> {
  const [a, b] = [ctx.key('a'), ctx.key('b')];
  await inbox.accept(entry(ctx, a));
  await inbox.accept(entry(ctx, b));
  const jobs = await takeAll(inbox, ctx);
  const job = (key: string) => jobs.find((j) => j.key === key)!;
  assert.equal(await inbox.retry(job(a).lease, { delayMs: ctx.shortMs, error: 'later' }), true);
  assert.equal(await inbox.retry(job(b).lease, { delayMs: 0, error: 'sooner' }), true);
  await ctx.waitOut();
  return [a, b];
}

const forged = (lease: Lease): Lease => ({ ...lease, token: 'f'.repeat(lease.token.length || 32) });

/**
 * The cases every inbox must pass: `runInboxConformance` registers them with your test runner.
 */
export const inboxConformanceCases: readonly InboxConformanceCase[] = [
  {
    name: 'accept writes a pending entry due now, with its delivery intact (binary body, headers, url, receivedAt)',
    async run(inbox, ctx) {
      const key = ctx.key();
      const body = Uint8Array.from({ length: 256 }, (_, i) => i);
      const accepted = await inbox.accept(entry(ctx, key, { body, item: 'item-1' }));
      assert.equal(accepted.status, 'accepted');
      assert.equal(accepted.status === 'accepted' && accepted.lease, undefined, 'no lease without claimMs');
      const view = await inbox.get(key);
      assert.equal(view?.state, 'pending');
      assert.equal(view?.attempts, 0);
      assert.equal(view?.hasBody, true);
      assert.equal(view?.receiver, ctx.receiver);
      assert.equal(view?.type, 'thing.created');
      const job = await takeOne(inbox, ctx);
      assert.equal(job.key, key);
      assert.deepEqual([...job.body], [...body], 'every byte value survives');
      assert.deepEqual(
        job.headers.map(([n, v]) => [n, v]),
        [
          ['content-type', 'application/json'],
          ['x-signature', 'sig'],
        ],
      );
      assert.equal(job.url, 'https://example.com/hooks?x=1');
      assert.equal(job.receivedAt.getTime(), 1_764_000_000_123, 'receivedAt to the millisecond');
      assert.equal(job.item, 'item-1');
      assert.equal(job.fingerprint, fp('a'));
      assert.equal(job.lease.attempt, 1);
      assert.match(job.lease.token, /^[0-9a-f]{32,}$/);
    },
  },
  {
    name: 'a second accept of the key is a duplicate with the same fingerprint and a conflict with another',
    async run(inbox, ctx) {
      const key = ctx.key();
      await inbox.accept(entry(ctx, key));
      assert.deepEqual(await inbox.accept(entry(ctx, key)), { status: 'duplicate', state: 'pending' });
      assert.deepEqual(await inbox.accept(entry(ctx, key, { fingerprint: fp('b') })), {
        status: 'conflict',
        state: 'pending',
      });
    },
  },
  {
    name: '50 concurrent accepts of one key give exactly one accepted',
    async run(inbox, ctx) {
      const key = ctx.key();
      const results = await Promise.all(Array.from({ length: 50 }, () => inbox.accept(entry(ctx, key))));
      assert.equal(results.filter((r) => r.status === 'accepted').length, 1);
      assert.equal(results.filter((r) => r.status === 'duplicate').length, 49);
    },
  },
  {
    name: 'accept with claimMs leases the entry to the caller at attempt 1; nobody takes it until the lease runs out, then attempt 2',
    async run(inbox, ctx) {
      const key = ctx.key();
      const sent = Date.now();
      const accepted = await inbox.accept(entry(ctx, key), { claimMs: ctx.shortMs });
      assert.equal(accepted.status, 'accepted');
      const lease = accepted.status === 'accepted' ? accepted.lease : undefined;
      assert.ok(lease, 'a lease');
      assert.equal(lease.attempt, 1);
      assert.equal((await inbox.get(key))?.state, 'processing');
      const early = await takeAll(inbox, ctx);
      // On a loaded machine the lease may really have run out by now: then taking it is right.
      if (Date.now() - sent < ctx.shortMs) assert.deepEqual(early, [], 'leased: not taken');
      else assert.ok(early.length <= 1);
      if (early.length === 1) {
        assert.equal(early[0]!.lease.attempt, 2, 'a takeover raises the attempt');
        assert.equal(await inbox.complete(lease, { retentionMs: LONG }), false, 'the first owner lost it');
        return;
      }
      await ctx.waitOut();
      const job = await takeOne(inbox, ctx);
      assert.equal(job.lease.attempt, 2, 'a takeover raises the attempt');
      assert.equal(await inbox.complete(lease, { retentionMs: LONG }), false, 'the first owner lost it');
      assert.equal(await inbox.complete(job.lease, { retentionMs: LONG }), true);
    },
  },
  {
    name: 'take returns due entries oldest first, up to limit, only of its receiver, each under a new lease',
    async run(inbox, ctx) {
      const keys = [ctx.key('a'), ctx.key('b'), ctx.key('c')];
      for (const key of keys) await inbox.accept(entry(ctx, key));
      await inbox.accept(entry({ ...ctx, receiver: `${ctx.receiver}-other` }, ctx.key('other')));
      const first = await inbox.take({ limit: 2, leaseMs: LONG, receiver: ctx.receiver });
      assert.deepEqual(
        first.map((j) => j.key),
        keys.slice(0, 2),
      );
      const rest = await takeAll(inbox, ctx);
      assert.deepEqual(
        rest.map((j) => j.key),
        [keys[2]],
      );
      assert.deepEqual(await takeAll(inbox, ctx), [], 'all leased now');
      assert.notEqual(first[0]!.lease.token, first[1]!.lease.token);
    },
  },
  {
    name: 'take returns the oldest due entry first, not the first accepted: a retried entry waits behind one due before it',
    async run(inbox, ctx) {
      const [a, b] = await dueInReverse(inbox, ctx);
      // Both due now: one take of one entry gets b.
      const [first] = await inbox.take({ limit: 1, leaseMs: LONG, receiver: ctx.receiver });
      assert.equal(first?.key, b, 'the entry due first is taken first');
      assert.equal((await takeOne(inbox, ctx)).key, a);
    },
  },
  {
    name: 'one take of several entries hands them back oldest due first, not in acceptance order',
    async run(inbox, ctx) {
      // Both in one take: every entry taken shares its new lease end, so the order has to come
      // from when each was due before the take.
      const [a, b] = await dueInReverse(inbox, ctx);
      const both = await inbox.take({ limit: 2, leaseMs: LONG, receiver: ctx.receiver });
      assert.deepEqual(
        both.map((j) => j.key),
        [b, a],
        'the entry due first comes first',
      );
    },
  },
  {
    name: 'stats stop counting a completed entry once its retention ran out (before any purge)',
    async run(inbox, ctx) {
      const [kept, gone] = [ctx.key('kept'), ctx.key('gone')];
      await inbox.accept(entry(ctx, kept));
      await inbox.accept(entry(ctx, gone));
      for (const job of await takeAll(inbox, ctx)) {
        await inbox.complete(job.lease, { retentionMs: job.key === kept ? LONG : ctx.shortMs });
      }
      assert.equal((await inbox.stats({ receiver: ctx.receiver })).completed, 2);
      await ctx.waitOut();
      const stats = await inbox.stats({ receiver: ctx.receiver });
      assert.equal(stats.completed, 1, 'the one past its retention is not counted');
      const listed = await inbox.list({ receiver: ctx.receiver, state: 'completed' });
      assert.deepEqual(
        listed.map((e) => e.key),
        [kept],
      );
    },
  },
  {
    name: '10 concurrent takers over 40 due entries never take one entry twice',
    async run(inbox, ctx) {
      const keys = Array.from({ length: 40 }, (_, i) => ctx.key(String(i)));
      await Promise.all(keys.map((key) => inbox.accept(entry(ctx, key))));
      const second = await ctx.inbox();
      const batches = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          (i % 2 ? second : inbox).take({ limit: 6, leaseMs: LONG, receiver: ctx.receiver }),
        ),
      );
      const taken = batches.flat().map((j) => j.key);
      assert.equal(new Set(taken).size, taken.length, 'no entry taken twice');
      assert.equal(taken.length, 40, 'every entry taken once');
    },
  },
  {
    name: 'the owner extends, completes, retries and buries; a forged or stale token changes nothing',
    async run(inbox, ctx) {
      const key = ctx.key();
      await inbox.accept(entry(ctx, key));
      const job = await takeOne(inbox, ctx, ctx.shortMs);
      const fake = forged(job.lease);
      assert.equal(await inbox.extend(fake, { leaseMs: LONG }), false);
      assert.equal(await inbox.complete(fake, { retentionMs: LONG }), false);
      assert.equal(await inbox.retry(fake, { delayMs: 0, error: 'x' }), false);
      assert.equal(await inbox.bury(fake, { error: 'x' }), false);
      assert.equal(await inbox.extend(job.lease, { leaseMs: LONG }), true);
      await ctx.waitOut();
      assert.deepEqual(await takeAll(inbox, ctx), [], 'the extended lease holds past its first end');
      assert.equal(await inbox.complete(job.lease, { retentionMs: LONG }), true);
      assert.equal((await inbox.get(key))?.state, 'completed');
      assert.equal(
        await inbox.retry(job.lease, { delayMs: 0, error: 'x' }),
        false,
        'completed: not ours to retry',
      );
      assert.deepEqual(await inbox.accept(entry(ctx, key)), { status: 'duplicate', state: 'completed' });
    },
  },
  {
    name: 'a take says whether it took an entry over from a run whose lease ran out (not from pending, a retry or a requeue)',
    async run(inbox, ctx) {
      const [crashed, fresh, retried] = [ctx.key('crashed'), ctx.key('fresh'), ctx.key('retried')];
      await inbox.accept(entry(ctx, crashed));
      const first = await takeOne(inbox, ctx, ctx.shortMs);
      assert.ok(!first.takenOver, 'pending, not taken over');
      await inbox.accept(entry(ctx, retried));
      const failing = await takeOne(inbox, ctx);
      assert.equal(await inbox.retry(failing.lease, { delayMs: 0, error: 'x' }), true);
      await inbox.accept(entry(ctx, fresh));
      await ctx.waitOut(); // the crashed run's lease runs out: it never answered
      const jobs = new Map((await takeAll(inbox, ctx)).map((j) => [j.key, j]));
      assert.deepEqual([...jobs.keys()].sort(), [crashed, fresh, retried].sort());
      assert.equal(jobs.get(crashed)!.takenOver, true, 'taken over from the run that ran out');
      assert.equal(jobs.get(crashed)!.lease.attempt, 2);
      assert.ok(!jobs.get(fresh)!.takenOver, 'pending');
      assert.ok(!jobs.get(retried)!.takenOver, 'retried: its run ended with a verdict');
      // Owner-checked writes take the new token as it is.
      assert.equal(await inbox.bury(jobs.get(crashed)!.lease, { error: 'x' }), true);
      assert.equal(await inbox.requeue({ key: crashed }), 1);
      const requeued = await takeOne(inbox, ctx);
      assert.equal(requeued.key, crashed);
      assert.ok(!requeued.takenOver, 'requeued: pending again');
      assert.equal(requeued.lease.attempt, 3);
    },
  },
  {
    name: 'retry puts the entry back due after its delay with the error; the next take raises the attempt',
    async run(inbox, ctx) {
      const key = ctx.key();
      await inbox.accept(entry(ctx, key));
      const job = await takeOne(inbox, ctx);
      assert.equal(
        await inbox.retry(job.lease, { delayMs: ctx.shortMs, error: 'Error: the API said 502' }),
        true,
      );
      const view = await inbox.get(key);
      assert.equal(view?.state, 'pending');
      assert.equal(view?.lastError, 'Error: the API said 502');
      assert.equal(view?.attempts, 1);
      assert.deepEqual(await takeAll(inbox, ctx), [], 'not due yet');
      await ctx.waitOut();
      const again = await takeOne(inbox, ctx);
      assert.equal(again.lease.attempt, 2);
      assert.equal(await inbox.complete(job.lease, { retentionMs: LONG }), false, 'the old run owns nothing');
    },
  },
  {
    name: 'bury keeps the entry dead, never taken, until it is requeued (one key, or every dead entry)',
    async run(inbox, ctx) {
      const [a, b] = [ctx.key('a'), ctx.key('b')];
      await inbox.accept(entry(ctx, a));
      await inbox.accept(entry(ctx, b));
      for (const job of await takeAll(inbox, ctx)) {
        assert.equal(await inbox.bury(job.lease, { error: 'Error: gave up' }), true);
      }
      assert.equal((await inbox.get(a))?.state, 'dead');
      assert.equal((await inbox.get(a))?.lastError, 'Error: gave up');
      assert.deepEqual(await takeAll(inbox, ctx), []);
      assert.deepEqual(await inbox.accept(entry(ctx, a)), { status: 'duplicate', state: 'dead' });
      const dead = await inbox.list({ state: 'dead', receiver: ctx.receiver });
      assert.deepEqual(dead.map((e) => e.key).sort(), [a, b].sort());
      assert.equal(await inbox.requeue({ key: a }), 1);
      assert.equal(await inbox.requeue({ key: a }), 0, 'only a dead entry is requeued');
      const job = await takeOne(inbox, ctx);
      assert.equal(job.key, a);
      assert.equal(job.lease.attempt, 2);
      assert.equal(await inbox.requeue({ dead: true, receiver: ctx.receiver }), 1);
      assert.equal((await takeOne(inbox, ctx)).key, b);
    },
  },
  {
    name: "requeue of every dead entry of one receiver leaves another receiver's dead entries dead",
    async run(inbox, ctx) {
      // Two receivers on one inbox (two endpoints, or two apps): each has one dead entry.
      const other = `${ctx.receiver.slice(0, 58)}-other`;
      const mine = ctx.key('mine');
      const theirs = `${other}:${ctx.key('theirs')}`;
      await inbox.accept(entry(ctx, mine));
      await inbox.accept(entry(ctx, theirs, { receiver: other }));
      for (const receiver of [ctx.receiver, other]) {
        const [job] = await inbox.take({ limit: 10, leaseMs: LONG, receiver });
        assert.ok(job && (await inbox.bury(job.lease, { error: 'x' })), `${receiver}'s entry is dead`);
      }
      // Act: requeue every dead entry of this receiver.
      assert.equal(await inbox.requeue({ dead: true, receiver: ctx.receiver }), 1);
      // Assess: its own is due again, the other receiver's still dead (and counted there).
      assert.equal((await inbox.get(mine))?.state, 'pending');
      assert.equal((await inbox.get(theirs))?.state, 'dead');
      assert.equal((await inbox.stats({ receiver: other })).dead, 1);
      assert.equal(await inbox.requeue({ dead: true, receiver: other }), 1);
      assert.equal((await inbox.get(theirs))?.state, 'pending');
    },
  },
  {
    name: 'requeue of one pending key whose next attempt is ahead makes it due now (retry now); a processing entry is never touched, nor a waiting one by requeue of the dead',
    async run(inbox, ctx) {
      // Prepare: a failed and waiting LONG for its next attempt, b processing, c waiting too.
      const [a, b, c] = [ctx.key('a'), ctx.key('b'), ctx.key('c')];
      for (const k of [a, b, c]) await inbox.accept(entry(ctx, k));
      const jobs = await takeAll(inbox, ctx);
      const job = (key: string) => jobs.find((j) => j.key === key)!;
      assert.equal(await inbox.retry(job(a).lease, { delayMs: LONG, error: 'downstream 503' }), true);
      assert.equal(await inbox.retry(job(c).lease, { delayMs: LONG, error: 'downstream 503' }), true);
      assert.deepEqual(await takeAll(inbox, ctx), [], 'nothing is due');
      // Act and assess: requeue of the dead leaves waiting entries waiting.
      assert.equal(await inbox.requeue({ dead: true, receiver: ctx.receiver }), 0);
      assert.deepEqual(await takeAll(inbox, ctx), []);
      // Retry now: a is due at once, keeps its error, and runs as attempt 2.
      assert.equal(await inbox.requeue({ key: a }), 1);
      const view = await inbox.get(a);
      assert.equal(view?.state, 'pending');
      assert.equal(view?.lastError, 'downstream 503');
      assert.equal(await inbox.requeue({ key: a }), 0, 'already due: nothing changes');
      const taken = await takeAll(inbox, ctx);
      assert.deepEqual(
        taken.map((j) => [j.key, j.lease.attempt]),
        [[a, 2]],
      );
      // Processing entries belong to their run: neither a now nor b is touched.
      assert.equal(await inbox.requeue({ key: a }), 0);
      assert.equal(await inbox.requeue({ key: b }), 0);
      assert.equal(await inbox.extend(job(b).lease, { leaseMs: LONG }), true, "b's run still owns it");
      assert.equal(await inbox.complete(taken[0]!.lease, { retentionMs: LONG }), true);
      assert.equal(await inbox.requeue({ key: a }), 0, 'a completed entry is not requeued');
    },
  },
  {
    name: 'complete with dropBody forgets the body but still dedups the key',
    async run(inbox, ctx) {
      const key = ctx.key();
      await inbox.accept(entry(ctx, key));
      const job = await takeOne(inbox, ctx);
      assert.equal(await inbox.complete(job.lease, { retentionMs: LONG, dropBody: true }), true);
      const view = await inbox.get(key);
      assert.equal(view?.hasBody, false);
      assert.equal(view?.delivery, undefined);
      assert.deepEqual(await inbox.accept(entry(ctx, key)), { status: 'duplicate', state: 'completed' });
    },
  },
  {
    name: 'a completed entry is forgotten after its retention: purge deletes it, and the key is accepted anew',
    async run(inbox, ctx) {
      const key = ctx.key();
      await inbox.accept(entry(ctx, key));
      const job = await takeOne(inbox, ctx);
      await inbox.complete(job.lease, { retentionMs: ctx.shortMs });
      await ctx.waitOut();
      assert.equal(await inbox.get(key), undefined, 'past retention it reads as absent');
      assert.ok((await inbox.purge()) >= 1, 'purge deleted it');
      assert.equal((await inbox.accept(entry(ctx, key))).status, 'accepted');
    },
  },
  {
    name: 'stats count by state for a receiver, with the age of the oldest due entry',
    async run(inbox, ctx) {
      const keys = [ctx.key('p'), ctx.key('q'), ctx.key('r'), ctx.key('s')];
      for (const key of keys) await inbox.accept(entry(ctx, key));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [a, b, c] = await inbox.take({ limit: 3, leaseMs: LONG, receiver: ctx.receiver });
      await inbox.complete(a!.lease, { retentionMs: LONG });
      await inbox.bury(b!.lease, { error: 'x' });
      const stats = await inbox.stats({ receiver: ctx.receiver });
      assert.deepEqual(
        { ...stats, oldestDueMs: 0 },
        { pending: 1, processing: 1, completed: 1, dead: 1, scheduled: 0, oldestDueMs: 0 },
      );
      assert.ok(stats.oldestDueMs >= 40, `the pending entry has waited (${stats.oldestDueMs} ms)`);
      void c;
    },
  },
  {
    name: 'hostile inputs never break it: NUL bytes and lone surrogates in type, id, item and the error, a large binary body and header (1 MiB and 1 MB, or 40% each of the maxDeliveryBytes a store sets)',
    async run(inbox, ctx) {
      const key = ctx.key();
      const odd = (what: string) => `${what}\u0000nul \ud800lone \udfff end "q" \\ ${'\u00e9'.repeat(3)}`;
      // 1 MiB and 1 MB, or within the store's bound on a delivery when it has a smaller one.
      const share = ctx.maxDeliveryBytes === undefined ? 1 << 20 : Math.floor(ctx.maxDeliveryBytes * 0.4);
      const body = Uint8Array.from({ length: Math.min(1 << 20, share) }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
      const big = 'v'.repeat(Math.min(1_000_000, share));
      const accepted = await inbox.accept(
        entry(ctx, key, {
          type: odd('type'),
          id: odd('id'),
          item: odd('item'),
          body,
          headers: [
            ['x-big', big],
            ['x-odd', 'a"b\\c\u00e9\t'],
          ],
        }),
      );
      assert.equal(accepted.status, 'accepted');
      const job = await takeOne(inbox, ctx);
      // The item is matched exactly against the re-verified batch, the type routes the handler.
      assert.equal(job.type, odd('type'), 'the type round-trips exactly');
      assert.equal(job.id, odd('id'), 'the id round-trips exactly');
      assert.equal(job.item, odd('item'), 'the item round-trips exactly');
      assert.equal(job.body.length, body.length);
      assert.ok(Buffer.from(job.body).equals(Buffer.from(body)), 'every byte survives');
      assert.deepEqual(job.headers, [
        ['x-big', big],
        ['x-odd', 'a"b\\c\u00e9\t'],
      ]);
      const error = `Error: ${odd('failed')} ${'x'.repeat(200_000)}`;
      assert.equal(await inbox.retry(job.lease, { delayMs: 0, error }), true, 'retry records any error');
      const view = await inbox.get(key);
      assert.equal(view?.state, 'pending');
      assert.ok(
        view?.lastError?.startsWith('Error: failed'),
        `lastError kept: ${view?.lastError?.slice(0, 40)}`,
      );
      const lastError = view.lastError ?? '';
      assert.ok(lastError.length <= 1_000, 'lastError is a short line (at most 1,000 characters)');
      assert.ok(!lastError.includes('\u0000'), 'no NUL byte kept');
      const again = await takeOne(inbox, ctx);
      assert.equal(await inbox.bury(again.lease, { error }), true, 'bury records any error');
      assert.equal((await inbox.get(key))?.state, 'dead');
      assert.deepEqual(await inbox.accept(entry(ctx, key, { type: odd('type'), id: odd('id') })), {
        status: 'duplicate',
        state: 'dead',
      });
    },
  },
  {
    name: 'purge deletes only completed entries past their retention: never pending, processing or dead ones',
    async run(inbox, ctx) {
      const keys = [ctx.key('p'), ctx.key('r'), ctx.key('d'), ctx.key('x'), ctx.key('c')];
      for (const key of keys) await inbox.accept(entry(ctx, key));
      const jobs = await takeAll(inbox, ctx, ctx.shortMs);
      const of = (key: string) => jobs.find((j) => j.key === key)!.lease;
      await inbox.retry(of(keys[0]!), { delayMs: 0, error: 'x' });
      await inbox.retry(of(keys[1]!), { delayMs: ctx.shortMs, error: 'x' });
      await inbox.bury(of(keys[2]!), { error: 'x' });
      await inbox.complete(of(keys[4]!), { retentionMs: ctx.shortMs });
      // keys[3] stays processing with a lease that runs out: due again, not done.
      await ctx.waitOut();
      assert.ok((await inbox.purge()) >= 1, 'the completed entry is purged');
      assert.equal(await inbox.get(keys[4]!), undefined);
      const states = await Promise.all(keys.slice(0, 4).map(async (k) => (await inbox.get(k))?.state));
      assert.deepEqual(states, ['pending', 'pending', 'dead', 'processing']);
      const stats = await inbox.stats({ receiver: ctx.receiver });
      assert.deepEqual(
        { ...stats, oldestDueMs: 0 },
        { pending: 2, processing: 1, completed: 0, dead: 1, scheduled: 0, oldestDueMs: 0 },
      );
    },
  },
  {
    name: 'stats count the pending entries whose next attempt is ahead as scheduled, until it comes',
    async run(inbox, ctx) {
      const keys = [ctx.key('later'), ctx.key('now'), ctx.key('run'), ctx.key('soon')];
      for (const key of keys) await inbox.accept(entry(ctx, key));
      const jobs = await takeAll(inbox, ctx, LONG);
      const of = (key: string) => jobs.find((j) => j.key === key)!.lease;
      await inbox.retry(of(keys[0]!), { delayMs: LONG, error: 'x' });
      await inbox.retry(of(keys[1]!), { delayMs: 0, error: 'x' });
      await inbox.retry(of(keys[3]!), { delayMs: ctx.shortMs, error: 'x' });
      const counts = async () => {
        const { oldestDueMs: _, ...rest } = await inbox.stats({ receiver: ctx.receiver });
        return rest;
      };
      assert.deepEqual(await counts(), { pending: 3, processing: 1, completed: 0, dead: 0, scheduled: 2 });
      await ctx.waitOut();
      assert.deepEqual(await counts(), { pending: 3, processing: 1, completed: 0, dead: 0, scheduled: 1 });
      assert.equal(await inbox.requeue({ key: keys[0]! }), 1, 'retry now');
      assert.deepEqual(await counts(), { pending: 3, processing: 1, completed: 0, dead: 0, scheduled: 0 });
    },
  },
  ...inboxListCases,
  ...inboxBatchCases,
];
