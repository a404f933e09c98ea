import { strict as assert } from 'node:assert';
import { entry, type InboxConformanceCase, LONG, takeAll } from './inbox-kit.js';

/** The inbox conformance cases of `list`: its order, and its pages by offset and by cursor. */
export const inboxListCases: readonly InboxConformanceCase[] = [
  {
    name: 'list shows dead entries first, then the oldest due',
    async run(inbox, ctx) {
      const [a, b] = [ctx.key('a'), ctx.key('b')];
      await inbox.accept(entry(ctx, a));
      await inbox.accept(entry(ctx, b));
      const jobs = await takeAll(inbox, ctx);
      const jb = jobs.find((j) => j.key === b)!;
      await inbox.bury(jb.lease, { error: 'x' });
      const ja = jobs.find((j) => j.key === a)!;
      await inbox.retry(ja.lease, { delayMs: 0, error: 'y' });
      const list = await inbox.list({ receiver: ctx.receiver });
      assert.deepEqual(
        list.map((e) => [e.key, e.state]),
        [
          [b, 'dead'],
          [a, 'pending'],
        ],
      );
    },
  },
  {
    name: 'list pages with offset and limit: every entry once, in order, across states',
    async run(inbox, ctx) {
      const keys = Array.from({ length: 7 }, (_, i) => ctx.key(`page${i}`));
      for (const k of keys) await inbox.accept(entry(ctx, k));
      const jobs = await takeAll(inbox, ctx);
      for (const j of jobs.slice(0, 3)) await inbox.bury(j.lease, { error: 'x' });
      for (const j of jobs.slice(3)) await inbox.retry(j.lease, { delayMs: 0, error: 'y' });
      const whole = await inbox.list({ receiver: ctx.receiver });
      assert.equal(whole.length, 7);
      const paged: string[] = [];
      for (let offset = 0; offset < 9; offset += 2) {
        const page = await inbox.list({ receiver: ctx.receiver, limit: 2, offset });
        assert.ok(page.length <= 2);
        paged.push(...page.map((e) => e.key));
      }
      assert.deepEqual(
        paged,
        whole.map((e) => e.key),
      );
      assert.deepEqual(
        whole.map((e) => e.state),
        ['dead', 'dead', 'dead', 'pending', 'pending', 'pending', 'pending'],
      );
      const dead = await inbox.list({ receiver: ctx.receiver, state: 'dead', limit: 5, offset: 2 });
      assert.deepEqual(
        dead.map((e) => e.key),
        whole.slice(2, 3).map((e) => e.key),
      );
      assert.deepEqual(await inbox.list({ receiver: ctx.receiver, state: 'pending', offset: 10 }), []);
    },
  },
  {
    name: 'list pages after a cursor: every entry once, in order, in every state and within one (ties of one due time too); a forged cursor is refused',
    async run(inbox, ctx) {
      // Prepare: 12 entries accepted at once (due times that tie), then 3 dead, 3 processing, 3
      // completed and 3 left pending: every rank of the list.
      const keys = Array.from({ length: 12 }, (_, i) => ctx.key(`cursor${i}`));
      await Promise.all(keys.map((k) => inbox.accept(entry(ctx, k))));
      const jobs = await takeAll(inbox, ctx);
      assert.equal(jobs.length, 12);
      for (const j of jobs.slice(0, 3)) await inbox.bury(j.lease, { error: 'x' });
      for (const j of jobs.slice(3, 6)) await inbox.complete(j.lease, { retentionMs: LONG });
      for (const j of jobs.slice(6, 9)) await inbox.retry(j.lease, { delayMs: 0, error: 'y' });
      const walk = async (state?: 'dead' | 'pending' | 'processing' | 'completed') => {
        const keysSeen: string[] = [];
        let after: string | undefined;
        for (let pages = 0; pages < 20; pages++) {
          const page = await inbox.list({ receiver: ctx.receiver, state, limit: 2, after });
          assert.ok(page.length <= 2);
          if (page.length === 0) return keysSeen;
          keysSeen.push(...page.map((e) => e.key));
          after = page.at(-1)!.cursor;
          assert.equal(typeof after, 'string', 'list gives each entry a cursor');
        }
        assert.fail('a walk by cursor never ended');
      };
      // Act and assess: every state, then each one.
      const whole = await inbox.list({ receiver: ctx.receiver });
      assert.deepEqual(
        whole.map((e) => e.state),
        [
          ...Array(3).fill('dead'),
          ...Array(3).fill('pending'),
          ...Array(3).fill('processing'),
          ...Array(3).fill('completed'),
        ],
      );
      assert.deepEqual(
        await walk(),
        whole.map((e) => e.key),
      );
      for (const state of ['dead', 'pending', 'processing', 'completed'] as const) {
        assert.deepEqual(
          await walk(state),
          whole.filter((e) => e.state === state).map((e) => e.key),
          `${state} by cursor`,
        );
      }
      // An offset counts from the cursor.
      const from = await inbox.list({ receiver: ctx.receiver, after: whole[4]!.cursor, offset: 2, limit: 3 });
      assert.deepEqual(
        from.map((e) => e.key),
        whole.slice(7, 10).map((e) => e.key),
      );
      for (const forgedCursor of ['', 'nonsense', '@-1', 'k9.1.1', `${whole[0]!.cursor}x`]) {
        await assert.rejects(
          inbox.list({ receiver: ctx.receiver, after: forgedCursor }),
          (e: Error & { code?: string }) => e.code === 'invalid_option',
          `after ${JSON.stringify(forgedCursor)} is refused`,
        );
      }
    },
  },
];
