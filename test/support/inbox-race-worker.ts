// A forked worker of inbox-race.ts: a real process accepting every event and running due entries.
import type { InboxRaceReport, InboxRaceSpecModule } from './inbox-race.js';

/** The worker's run with its spec (the entry inbox-race.ts bundles puts the two together). */
export async function inboxRaceWorker(spec: InboxRaceSpecModule): Promise<void> {
  const env = process.env;
  const runId = env.RACE_RUN!;
  const events = Number(env.RACE_EVENTS);
  const leaseMs = Number(env.RACE_LEASE);
  const seed = Number(env.RACE_SEED);
  const { inbox, close } = await spec.open(runId, seed);

  // A small deterministic generator per worker, so a failing run can be told apart from the next.
  let state = (seed + 1) * 2654435761;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648;
  };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const report: InboxRaceReport = { accepted: 0, duplicates: 0, takes: [], completed: [], lateCompletes: 0 };
  const order = Array.from({ length: events }, (_, i) => i).sort(() => random() - 0.5);

  const accepting = (async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < order.length) {
          const i = order[next++]!;
          const body = new TextEncoder().encode(JSON.stringify({ id: `evt-${i}`, bytes: [0, 255, i % 256] }));
          const result = await inbox.accept({
            key: `${runId}:evt-${i}`,
            receiver: runId,
            fingerprint: `${String(i).padStart(8, '0')}${'f'.repeat(56)}`,
            type: 'race',
            id: `evt-${i}`,
            body,
            headers: [['x-seed', String(seed)]],
            receivedAt: new Date(),
          });
          if (result.status === 'accepted') report.accepted++;
          else if (result.status === 'duplicate') report.duplicates++;
          else throw new Error(`inbox race: conflict on evt-${i}`);
        }
      }),
    );
  })();

  async function runJob(job: Awaited<ReturnType<typeof inbox.take>>[number]): Promise<void> {
    const event = Number(job.key.slice(job.key.lastIndexOf('-') + 1));
    report.takes.push([event, job.lease.attempt]);
    const roll = random();
    if (roll < 0.1) return; // a crash: the lease runs out, another process takes over
    if (roll < 0.2) {
      // A failed run: due again after a short backoff (false only if this run was slow enough to lose it).
      if (!(await inbox.retry(job.lease, { delayMs: Math.floor(random() * 20), error: 'flaky' }))) {
        report.lateCompletes++;
      }
      return;
    }
    if (roll < 0.3) await sleep(leaseMs + 100); // stalls past its lease: may be taken over meanwhile
    if (await inbox.complete(job.lease, { retentionMs: 600_000 }))
      report.completed.push([event, job.lease.attempt]);
    else report.lateCompletes++;
  }

  const running = new Set<Promise<void>>();
  let done = false;
  let failure: unknown;
  while (!done && failure === undefined) {
    const free = 8 - running.size;
    if (free > 0) {
      const jobs = await inbox.take({ limit: free, leaseMs, receiver: runId });
      for (const job of jobs) {
        const run = runJob(job).catch((error: unknown) => {
          failure = error;
        });
        running.add(run);
        void run.finally(() => running.delete(run));
      }
      if (jobs.length === 0) {
        await sleep(10 + random() * 20);
        const stats = await inbox.stats({ receiver: runId });
        done = stats.completed === events && stats.pending + stats.processing === 0;
      }
    } else {
      await Promise.race(running);
    }
  }
  await accepting;
  await Promise.all(running);
  if (failure !== undefined) throw failure;
  process.send?.(report);
  await close();
  process.disconnect?.();
}
