/**
 * The SIGKILL crash suite (crash.test.ts) on the DynamoDB store: receiver processes kill themselves
 * right after the claim, in the handler, and during the release of a failed run, on the first
 * attempt of a share of events; the store is one dynalite server this test starts, shared by every
 * process. Verdict from the ledger: one effect per event. (The transactional-effect case needs a
 * store that joins the ledger's transaction: SQLite's, in crash.test.ts.)
 */
import { strict as assert } from 'node:assert';
import { after, describe, it } from 'node:test';
import { startDynalite } from '../support/dynalite.js';
import { FAULT_SIZE, type FleetReport, runFleet, summary } from './support/fleet.js';

const server = await startDynalite();
after(() => server.stop());

// dynalite answers one request at a time (about 7 ms a write): fewer events than the SQLite suite,
// and a deadline of 1 s (lease 4 s) rather than 400 ms: on a loaded host a handler whose plain effect
// waited that long for the ledger passes its deadline just after its effect, is released and runs
// again (the plain-effect window of crash.test.ts, not the store's doing).
const EVENTS = 30 * FAULT_SIZE;
const RATE = 0.1;
const common = {
  store: 'dynamodb',
  url: server.endpoint,
  events: EVENTS,
  timeoutMs: 1_000,
  workers: 2,
} as const;

function assertExactlyOnce(r: FleetReport) {
  assert.equal(r.gaveUp, 0, 'the simulator gave up on events');
  assert.equal(r.eventsLost, 0, 'events lost');
  assert.equal(r.effectsDoubled, 0, 'effects doubled');
  assert.ok(r.workersKilled > 0, 'workers were killed');
  assert.ok(r.takeovers > 0, 'crashed claims were taken over after their lease ran out');
}

describe('SIGKILL at every step of a delivery, on DynamoDB (dynalite)', () => {
  it('right after the claim: the lease runs out and the retry takes over; one effect each', async () => {
    const r = await runFleet({ ...common, crash: { at: 'claimed', rate: RATE } });
    console.log(summary('DynamoDB: SIGKILL after claim', r));
    assertExactlyOnce(r);
  });

  it('in the handler, before its effect: one effect each', async () => {
    const r = await runFleet({ ...common, crash: { at: 'handler', rate: RATE } });
    console.log(summary('DynamoDB: SIGKILL in handler', r));
    assertExactlyOnce(r);
  });

  it('during the release of a failed run: the lease runs out instead; one effect each', async () => {
    const r = await runFleet({ ...common, crash: { at: 'release', rate: RATE } });
    console.log(summary('DynamoDB: SIGKILL during release', r));
    assertExactlyOnce(r);
  });
});
