/**
 * Issue 11's chaos proof with a sender that never retries (GitHub: each event sent once, plus 20%
 * plain duplicates; a failed delivery is never sent again; one that takes over 10 s fails). Handlers
 * throw 30% of the time and hang past their deadline 5%; the processes that run handlers are
 * SIGKILLed (5% of runs; 10% in hybrid, whose worker processes run only the retries) and restarted
 * throughout. It is the demo itself (`onceonly demo --mode
 * ...`), run in its own process: web receivers, inbox worker processes, and a ledger the handler
 * writes outside the store. Inline mode loses every failed event; inbox and hybrid lose none and
 * apply none twice, and an event is dead only after `--max-attempts` runs (the last one failed).
 *
 * Size: INBOX_CHAOS_EVENTS (default 80 per mode; issue 11's full run is 2000). The stores are the
 * shared servers and SQLite (see storeOf).
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, it } from 'node:test';
import { type DemoRunReport, readDemoLedger, runDemo } from '../../support/demo.js';
import { dropStore } from '../../support/drop-store.js';
import { sharedStores } from '../../support/probes.js';
import { reachable } from '../../support/servers.js';

/**
 * A store of the suite, by label: one of the shared servers, or SQLite on a file of its own made
 * now and removed after the suite (one file that every web and worker process opens: several
 * processes on one host).
 */
function storeOf(label: string): readonly [string, string, () => Promise<unknown>] | undefined {
  if (label !== 'SQLite') return sharedStores.find(([shared]) => shared === label);
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-inbox-chaos-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  return ['SQLite', join(dir, 'inbox.db'), async () => {}];
}

const EVENTS = Number(process.env.INBOX_CHAOS_EVENTS ?? 80);
const MAX_ATTEMPTS = 6;
const chaos = [
  ...['--provider', 'github', '--max-attempts', String(MAX_ATTEMPTS)],
  ...['--throw-rate', '0.3', '--hang-rate', '0.05'],
];
// Hybrid runs most handlers inline in the web processes, which are not killed (a killed web process
// fails the deliveries it has not accepted yet, whatever the mode): the few runs in its worker
// processes are killed more often so that some are.
const killRate = { inline: '0.05', inbox: '0.05', hybrid: '0.1' };

/** The ledger's own count: effects per event, and the attempt each dead event died at. */
function recount(report: DemoRunReport) {
  try {
    const rows = readDemoLedger(report.ledger);
    const counts = new Map<string, number>();
    for (const r of rows) if (r.t === 'effects') counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    const effects = [...counts].map(([id, n]) => ({ id, n }));
    const dead = rows.filter((r) => r.t === 'dead').map((r) => ({ id: r.id, attempt: r.attempt }));
    return { effects, dead };
  } finally {
    rmSync(dirname(report.ledger), { recursive: true, force: true });
  }
}

/** The chaos suite on one store (one test file per store, so the files run side by side). */
export async function inboxChaosSuite(store: string): Promise<void> {
  const found = storeOf(store);
  if (!found) throw new Error(`no inbox chaos store ${store}`);
  const [label, url, probe] = found;
  if (!(await reachable(`inbox chaos on ${label}`, url, probe))) return;
  // Each run keeps its ledger (--keep) for the recount; its key space on the store goes at once.
  const demo = async (args: string[]) => {
    const run = await runDemo(args, EVENTS);
    await dropStore(url, run.report.keySpace);
    return run;
  };
  describe(`never-retrying sender, chaos, ${label}`, () => {
    it('inline (today): the failed events are lost, counted', async () => {
      const { report, code } = await demo([
        '--store',
        url,
        '--mode',
        'inline',
        '--kill-rate',
        killRate.inline,
        ...chaos,
      ]);
      console.log(`[fault figures] inbox chaos ${label} inline: ${JSON.stringify(report)}`);
      const { effects } = recount(report);
      assert.equal(code, 1);
      assert.ok(report.handlerFailures > 0, 'handlers failed');
      assert.equal(report.eventsLost, report.events - effects.length);
      // Inline loses what failed: an event answered 500 (its handler threw or hung) is never sent
      // again, so each is an event without effect.
      assert.ok(report.eventsLost >= report.handlerFailures, 'each delivery answered failed is a lost event');
      // And only what failed: nothing answered 2xx is lost. Not every delivery the sender saw fail is
      // a lost event, though: an answer past 10 s on a loaded host, or a connection a kill cut after
      // the handler's effect and confirm, fails on the wire with the effect applied.
      assert.equal(report.lostAfter2xx, 0, 'events lost after a 2xx');
      assert.ok(report.eventsLost <= report.deliveriesFailed, 'every lost event is a failed delivery');
      assert.equal(report.effectsAppliedTwice, 0);
    });

    for (const mode of ['inbox', 'hybrid'] as const) {
      it(`${mode}: none lost, none doubled, dead only after ${MAX_ATTEMPTS} runs`, async () => {
        const { report, code } = await demo([
          '--store',
          url,
          '--mode',
          mode,
          '--kill-rate',
          killRate[mode],
          ...chaos,
        ]);
        console.log(`[fault figures] inbox chaos ${label} ${mode}: ${JSON.stringify(report)}`);
        const { effects, dead } = recount(report);
        // The chaos happened first.
        assert.ok(report.workersKilled > 0, 'worker processes were killed');
        assert.ok(report.retriesAfterFailure > 0, 'failed runs were retried');
        assert.ok(report.takeoversAfterCrash > 0, 'killed runs were taken over');
        // Then what survived.
        assert.equal(report.undrained, 0, 'every accepted event settled');
        // No handler failure or kill reaches the sender: nothing is answered 500. (Connections can
        // still drop on a host so loaded that answers take seconds: counted as failed deliveries.)
        assert.equal(report.byOutcome.failed, undefined, 'no delivery answered failed');
        // The promise: nothing answered 2xx is lost. A delivery the sender saw fail (an answer past
        // 10 s, a 503 when the store did not answer in time: both only on an overloaded host) may
        // never have been accepted, as may one whose connection dropped; those are counted, and
        // must be the only losses.
        assert.equal(report.lostAfter2xx, 0, 'events lost after a 2xx');
        assert.ok(report.eventsLost <= report.deliveriesFailed, 'every lost event is a failed delivery');
        if (report.deliveriesFailed > 0)
          console.log(
            `[fault figures] ${mode}: ${report.deliveriesFailed} deliveries failed on a loaded host (${report.timeouts} past 10 s, ${report.byOutcome['store-unavailable'] ?? 0} store-unavailable, ${report.droppedConnections} dropped), ${report.eventsLost} of them never accepted`,
          );
        assert.equal(report.effectsAppliedTwice, 0, 'effects applied twice');
        assert.deepEqual(
          effects.filter((e) => e.n !== 1),
          [],
          'no event has two effects',
        );
        assert.equal(
          effects.length + dead.length + report.eventsLost,
          report.events,
          'every event: one effect, or dead, or lost before any 2xx',
        );
        // A killed run counts as a run too: after a kill at the last attempt, the entry runs once
        // more (attempt MAX_ATTEMPTS + 1) and is buried when that one fails.
        assert.deepEqual(
          dead.filter((d) => d.attempt < MAX_ATTEMPTS),
          [],
          `dead only after ${MAX_ATTEMPTS} runs`,
        );
        // The demo's verdict agrees with its report: it exits 1 exactly when it lost an event, which
        // here can only be a delivery the sender saw fail (checked above).
        assert.equal(code, report.eventsLost === 0 ? 0 : 1, 'the exit code follows the events lost');
      });
    }
  });
}
