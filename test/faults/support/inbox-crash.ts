/**
 * Inbox mode under SIGKILL, on every store with an inbox shared by processes. Receiver processes
 * (each also running a worker, restarted when killed) kill themselves (a) right after the durable
 * accept, before the answer leaves: the provider sees the connection drop and redelivers, and the
 * redelivery is a duplicate of the entry already kept; (b) in a worker between the handler's
 * effect and `complete`: the lease runs out, another worker takes the entry over at attempt 2, and
 * the fenced effect recipe sees the effect already applied. Verdict from the ledger the processes
 * write (outside the store): every event exactly one effect, none lost.
 *
 * A store is one line of FAULT_STORES (support/stores.ts).
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type FleetReport, runFleet, summary } from './fleet.js';
import { crashFleet, FAULT_STORES as STORES, faultServer } from './stores.js';

/** The kills landed at `step`, each on an event that then had exactly one effect; none lost. */
function assertSurvived(r: FleetReport, step: string) {
  assert.ok((r.crashes[step] ?? 0) > 0, `processes were killed at ${step}`);
  assert.equal(r.killsLanded, r.crashes[step], 'every recorded kill killed its process');
  assert.ok(r.crashedEvents.length > 0);
  assert.deepEqual(
    r.crashedEvents.filter((e) => e.effects !== 1),
    [],
    'every event a process died on had exactly one effect',
  );
  assert.equal(r.undrained, 0, 'every event settled');
  assert.equal(r.dead, 0, 'no entry died');
  assert.equal(r.eventsLost, 0, 'events lost');
  assert.equal(r.effectsDoubled, 0, 'effects doubled');
}

/** The crash tests on one store (one test file per store, so the files run side by side). */
export async function inboxCrashSuite(label: string): Promise<void> {
  const s = STORES.find((x) => x.label === label);
  if (!s) throw new Error(`no inbox crash store ${label}`);
  const url = await faultServer(s, `inbox crash tests on ${s.label}`);
  if (url === undefined) return;
  const { rate: RATE, common } = crashFleet(s, url);

  describe(`inbox mode, SIGKILL, ${s.label}`, () => {
    it('(a) between the durable accept and its answer: the redelivery is a duplicate; run once', async () => {
      const r = await runFleet({ ...common, inbox: {}, crash: { at: 'accepted', rate: RATE } });
      console.log(summary(`inbox ${s.label}: SIGKILL between accept and answer`, r));
      assertSurvived(r, 'accepted');
      // The provider saw no 2xx for those deliveries (dropped connections), came back, and was
      // answered that the entry is kept: a duplicate (or accepted, had the kill landed on a copy).
      assert.ok(r.sim.dropped > 0, 'the provider saw connections drop');
      assert.ok((r.byOutcome.duplicate ?? 0) > 0, 'redeliveries answered duplicate');
      assert.equal(r.gaveUp, 0);
    });

    it('(b) in a worker between the effect and complete: takeover at attempt 2, the fence sees it', async () => {
      const r = await runFleet({
        ...common,
        inbox: {},
        effect: 'fenced',
        crash: { at: 'before-complete', rate: RATE },
      });
      console.log(summary(`inbox ${s.label}: SIGKILL between effect and complete, fenced`, r));
      assertSurvived(r, 'before-complete');
      assert.ok(r.takeovers >= r.crashedEvents.length, 'each crashed entry was taken over at attempt 2+');
      // Every crashed event has exactly one effect (assertSurvived); the fence is what kept it so on
      // the takeovers that ran the handler again (a crashed entry whose takeover ran after another
      // kill, or whose redelivery found it done, may not come through the fence).
      assert.ok(r.fenceSaw > 0, 'a takeover found the effect through the fence');
    });

    it('(b) hybrid (inline 2 s): the inline run killed between effect and complete, a worker takes over', async () => {
      const r = await runFleet({
        ...common,
        inbox: { inlineMs: 2_000 },
        effect: 'fenced',
        crash: { at: 'before-complete', rate: RATE },
      });
      console.log(summary(`hybrid ${s.label}: SIGKILL between effect and complete, fenced`, r));
      assertSurvived(r, 'before-complete');
      // Every crashed event has exactly one effect (assertSurvived); the fence is what kept it so on
      // the takeovers that ran the handler again (a crashed entry whose takeover ran after another
      // kill, or whose redelivery found it done, may not come through the fence).
      assert.ok(r.fenceSaw > 0, 'a takeover found the effect through the fence');
    });
  });
}
