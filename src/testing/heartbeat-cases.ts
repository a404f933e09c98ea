import { strict as assert } from 'node:assert';
import { runClaimed } from '../core/engine.js';
import type { Store } from '../core/types.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A conformance case (see cases.ts, which lists these with the rest) that needs only unique keys. */
interface HeartbeatCase {
  name: string;
  run(store: Store, ctx: { key(suffix?: string): string }): Promise<void>;
}

/**
 * Cases of the engine on the store under test: what its heartbeat must keep true on this store's
 * clock, with a competing claimant.
 */
export const heartbeatCases: readonly HeartbeatCase[] = [
  {
    name: 'work that runs three lease lengths keeps its key: a competitor claiming all along never gets in',
    async run(store: Store, ctx) {
      // A lease of 1 s, renewed every third by the engine's heartbeat: the run lasts 3.2 leases, so a heartbeat that renewed
      // late (only once the lease had run out, say) lets the competitor in.
      const key = ctx.key();
      const leaseMs = 1_000;
      const runMs = 3_200;
      let running = true;
      const seen: string[] = [];
      let claims = 0;
      const competitor = (async () => {
        await sleep(100);
        while (running) {
          const claim = await store.claim(key, { leaseMs, retentionMs: 60_000 });
          claims++;
          seen.push(claim.status);
          if (claim.status === 'acquired') await store.release(claim.lease);
          await sleep(40);
        }
      })();
      // The engine that once() and the receivers run on: claim, heartbeat, confirm.
      const result = await runClaimed(
        store,
        key,
        async () => {
          await sleep(runMs);
          running = false;
        },
        { leaseMs, timeoutMs: 20_000, storeTimeoutMs: 300, retentionMs: 60_000 },
      );
      running = false;
      await competitor;
      assert.equal(result.outcome, 'processed');
      assert.ok(claims >= 10, `the competitor claimed ${claims} times`);
      // Every claim while the work ran found it in flight; one sent as the work ended may find it
      // completed. None may acquire it.
      assert.ok(
        seen.every((status, n) => status === 'in-flight' || (status === 'completed' && n >= seen.length - 2)),
        `the competitor got in while the work ran: ${seen.join(' ')}`,
      );
    },
  },
];
