/**
 * The demo's verdict from its ledger (countLedger): what it counts as a retry after a failure and
 * as a takeover after a crash, from the rows the workers append.
 */
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { SimulateReport } from '../simulate.js';
import { countLedger, ledgerWriter, openLedger } from './ledger.js';

const dir = mkdtempSync(join(tmpdir(), 'onceonly-ledger-'));
after(() => rmSync(dir, { recursive: true, force: true }));

type Writer = ReturnType<typeof ledgerWriter>;

const sim = (eventIds: string[]) => ({ eventIds, gaveUp: [] }) as unknown as SimulateReport;

function ledgerOf(name: string, write: (w: Writer) => void): string {
  const path = openLedger(join(dir, `${name}.jsonl`));
  const writer = ledgerWriter(path);
  write(writer);
  writer.close();
  return path;
}

/** Runs of `id` at attempts 1 to `last`, the first `failed` of them failed (the rest left no verdict). */
function runs(w: Writer, id: string, last: number, failed: number): void {
  for (let attempt = 1; attempt <= last; attempt++) {
    w.write('runs', { id, attempt, pid: 1 });
    if (attempt <= failed) w.write('failures', { id, attempt, timeout: false });
  }
}

describe('countLedger', () => {
  it('a run after one that failed is a retry; after one that never finished, a takeover', () => {
    const path = ledgerOf('runs', (w) => {
      w.write('runs', { id: 'a', attempt: 1, pid: 1 });
      w.write('failures', { id: 'a', attempt: 1, timeout: false });
      w.write('runs', { id: 'a', attempt: 2, pid: 2 });
      w.write('effects', { id: 'a', attempt: 2, pid: 2 });
      w.write('runs', { id: 'b', attempt: 1, pid: 1 }); // killed: no verdict
      w.write('runs', { id: 'b', attempt: 2, pid: 2 });
      w.write('effects', { id: 'b', attempt: 2, pid: 2 });
    });
    const counts = countLedger(path, sim(['a', 'b']));
    assert.equal(counts.retriesAfterFailure, 1);
    assert.equal(counts.takeovers, 1);
    assert.equal(counts.applied, 2);
  });

  it('an entry buried when taken over (its last run killed, its attempts spent) is a takeover too', () => {
    const path = ledgerOf('buried', (w) => {
      runs(w, 'p', 2, 1);
      // The run at attempt 2 was killed; the takeover, at 3, buried the entry without running it.
      w.write('dead', { id: 'p', attempt: 3 });
    });
    const counts = countLedger(path, sim(['p']));
    assert.equal(counts.takeovers, 1);
    assert.equal(counts.dead, 1);
    assert.equal(counts.retriesAfterFailure, 1);
  });

  it('an entry buried after its last run failed is no takeover', () => {
    const path = ledgerOf('failed-out', (w) => {
      runs(w, 'p', 3, 2);
      w.write('dead', { id: 'p', attempt: 3 });
    });
    const counts = countLedger(path, sim(['p']));
    assert.equal(counts.takeovers, 0);
    assert.equal(counts.dead, 1);
    assert.equal(counts.retriesAfterFailure, 2);
  });
});
