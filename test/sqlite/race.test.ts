// Real processes racing on one SQLite file through once(): exactly one effect per event, and
// a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertExactlyOnce, runCrash, runRace, runReleaseRace } from '../support/race.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));
describe('sqliteStore across processes on one file', () => {
  it('4 processes racing 2,000 events with 3 deliveries each write exactly one effect per event', async () => {
    const report = await runRace({ spec, processes: 4, events: 2000, deliveries: 3 });
    assertExactlyOnce(report);
  });

  it('a lease holder SIGKILLed mid-handler: in-flight during its lease, taken over with attempt 2 after', async () => {
    await runCrash({ spec });
  });

  it('4 processes releasing and claiming one key 25 times each: attempts 1..100, strictly increasing, one owner at a time', async () => {
    await runReleaseRace({ spec, processes: 4, rounds: 25 });
  });
});
