/**
 * Crashes at every step: receiver processes SIGKILL themselves (and are restarted) right after the
 * claim, in the handler, between the handler's end and the confirm, and during the release, on the
 * first attempt of a share of events. One store per line, shared by every process: SQLite (in the
 * ledger's own file), and DynamoDB on a dynalite server this file starts (its sizes in its line of
 * support/stores.ts). The provider (the delivery simulator) retries until a 2xx. Verdict from the
 * ledger: one effect per event.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { type FleetReport, runFleet, summary } from './support/fleet.js';
import { crashFleet, FAULT_STORES, faultServer } from './support/stores.js';

/**
 * The stores, and what differs between them: `transactional` when the store joins the ledger's
 * transaction (`recordSync(key, { tx })`: SQLite's, the store living in the ledger file), which
 * the cases between the handler's end and the confirm need (the transactional effect, and the
 * plain effect it is set against).
 */
const LINES = [
  { label: 'SQLite', transactional: true },
  { label: 'DynamoDB', transactional: false },
] as const;

function assertExactlyOnce(r: FleetReport) {
  assert.equal(r.gaveUp, 0, 'the simulator gave up on events');
  assert.equal(r.eventsLost, 0, 'events lost');
  assert.equal(r.effectsDoubled, 0, 'effects doubled');
  assert.ok(r.workersKilled > 0, 'workers were killed');
  assert.ok(r.takeovers > 0, 'crashed claims were taken over after their lease ran out');
}

for (const line of LINES) {
  const s = FAULT_STORES.find((x) => x.label === line.label)!;
  const url = await faultServer(s, `SIGKILL crash tests on ${s.label}`);
  if (url === undefined) continue;
  const { rate: RATE, common } = crashFleet(s, url);

  describe(`SIGKILL at every step of a delivery, on ${s.label}`, () => {
    it('right after the claim: the lease runs out and the retry takes over; one effect each', async () => {
      const r = await runFleet({ ...common, crash: { at: 'claimed', rate: RATE } });
      console.log(summary(`${s.label}: SIGKILL after claim`, r));
      assertExactlyOnce(r);
    });

    it('in the handler, before its effect: one effect each', async () => {
      const r = await runFleet({ ...common, crash: { at: 'handler', rate: RATE } });
      console.log(summary(`${s.label}: SIGKILL in handler`, r));
      assertExactlyOnce(r);
    });

    it('during the release of a failed run: the lease runs out instead; one effect each', async () => {
      const r = await runFleet({ ...common, crash: { at: 'release', rate: RATE } });
      console.log(summary(`${s.label}: SIGKILL during release`, r));
      assertExactlyOnce(r);
    });

    if (!line.transactional) return;

    it('between the handler end and confirm, effect and dedup row in one transaction: one effect each', async () => {
      const r = await runFleet({ ...common, effect: 'tx', crash: { at: 'before-confirm', rate: RATE } });
      console.log(summary(`${s.label}: SIGKILL before confirm, transactional effect`, r));
      assertExactlyOnce(r);
    });

    it('between the handler end and confirm, plain effect: the window no claim can close runs it twice', async () => {
      // Shown, not hidden: the effect committed, the process died before confirm, the lease ran out,
      // the retry ran the handler again. Nothing was lost; only the transactional pattern closes this.
      const r = await runFleet({
        ...common,
        effect: 'plain',
        crash: { at: 'before-confirm', rate: RATE },
      });
      console.log(summary(`${s.label}: SIGKILL before confirm, plain effect (the window)`, r));
      assert.equal(r.gaveUp, 0);
      assert.equal(r.eventsLost, 0);
      assert.ok(r.workersKilled > 0);
      assert.ok(r.effectsDoubled > 0, 'a crash after a plain effect and before confirm doubles it');
      assert.ok(r.effectsDoubled <= r.takeovers, 'every double comes from a takeover after a crash');
      assert.equal(
        r.unreportedDoubles,
        0,
        'every double is reported: its takeover answers Onceonly-Attempt >= 2',
      );
    });
  });
}
