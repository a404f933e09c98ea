/**
 * `completeMany`, for the stores that have it (optional: a store without it passes): several
 * completes in one call, each entry completed under its own lease only.
 */
import { strict as assert } from 'node:assert';
import type { Lease } from '../core/types.js';
import { entry, type InboxConformanceCase, LONG, takeAll, takeOne } from './inbox-kit.js';

export const inboxBatchCases: readonly InboxConformanceCase[] = [
  {
    name: 'completeMany (optional): each entry completed under its own lease only; a stale, forged or empty lease in the batch changes nothing and says false',
    async run(inbox, ctx) {
      if (typeof inbox.completeMany !== 'function') return;
      // Prepare: `c` leased short, then taken over (its first lease stale); a, b, d leased long.
      const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((s) => ctx.key(s)) as [string, string, string, string];
      assert.equal((await inbox.accept(entry(ctx, c))).status, 'accepted');
      const staleC = (await takeOne(inbox, ctx, ctx.shortMs)).lease;
      for (const k of [a, b, d]) assert.equal((await inbox.accept(entry(ctx, k))).status, 'accepted');
      const leases = new Map((await takeAll(inbox, ctx)).map((j) => [j.key, j.lease] as const));
      assert.equal(leases.size, 3);
      await ctx.waitOut();
      const newC = (await takeOne(inbox, ctx)).lease;
      assert.equal(newC.attempt, 2);
      const forgedB: Lease = { ...leases.get(b)!, token: 'f'.repeat(leases.get(b)!.token.length || 32) };
      const emptyD: Lease = { ...leases.get(d)!, token: '' };
      // Act, Assess: only the owners' completes land, in the batch's order.
      assert.deepEqual(
        await inbox.completeMany([leases.get(a)!, staleC, forgedB, emptyD], { retentionMs: LONG }),
        [true, false, false, false],
      );
      assert.equal((await inbox.get(a))?.state, 'completed');
      for (const k of [b, c, d]) assert.equal((await inbox.get(k))?.state, 'processing', k);
      assert.deepEqual(
        await inbox.completeMany([leases.get(b)!, newC, leases.get(d)!], {
          retentionMs: LONG,
          dropBody: true,
        }),
        [true, true, true],
      );
      for (const k of [b, c, d]) {
        const e = await inbox.get(k);
        assert.equal(e?.state, 'completed', k);
        assert.equal(e?.hasBody, false, `${k}: body dropped`);
      }
      assert.equal((await inbox.get(a))?.hasBody, true, 'a kept its body');
      assert.deepEqual(await inbox.completeMany([leases.get(a)!], { retentionMs: LONG }), [false], 'twice');
    },
  },
];
