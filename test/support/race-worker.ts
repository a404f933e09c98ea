// A forked worker of race.ts: a real process delivering events through once().
import { once } from '../../src/once.js';
import type { RaceSpecModule } from './race.js';

/** The worker's run with its spec (the entry race.ts bundles puts the two together). */
export async function raceWorker(spec: RaceSpecModule): Promise<void> {
  const env = process.env;
  const runId = env.RACE_RUN!;
  const handle = await spec.open(runId);

  if (env.RACE_ROLE === 'crash') {
    await once(
      handle.store,
      env.RACE_KEY!,
      async () => {
        process.send?.('in-handler');
        await new Promise(() => {}); // hang until SIGKILL
      },
      { lease: Number(env.RACE_LEASE), timeout: '60s' },
    );
  } else if (env.RACE_ROLE === 'release') {
    // Claims one key, writes its attempt, extends, releases; again, until it owned it RACE_ROUNDS times.
    const key = env.RACE_KEY!;
    const rounds = Number(env.RACE_ROUNDS);
    const fingerprint = 'f'.repeat(64);
    const attempts: number[] = [];
    let lost = 0;
    while (attempts.length < rounds) {
      const claim = await handle.store.claim(key, { leaseMs: 30_000, retentionMs: 600_000, fingerprint });
      if (claim.status !== 'acquired') {
        if (claim.status !== 'in-flight' || !claim.sameFingerprint)
          throw new Error(`release race: unexpected claim ${JSON.stringify(claim)}`);
        await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 4));
        continue;
      }
      attempts.push(claim.lease.attempt);
      await handle.effect(`attempt-${claim.lease.attempt}`, claim.lease.attempt);
      // Another owner in the meantime would have changed the token: both of these would be false.
      if (!(await handle.store.extend(claim.lease, { leaseMs: 30_000 }))) lost++;
      if (!(await handle.store.release(claim.lease))) lost++;
    }
    process.send?.({ attempts, lost });
    await handle.close();
    process.disconnect?.();
  } else {
    const events = Number(env.RACE_EVENTS);
    const deliveries = Number(env.RACE_DELIVERIES);
    const outcomes: Record<string, number> = {};
    // Each worker walks the events in its own order, so workers collide at every point of the life.
    const seed = Number(env.RACE_SEED);
    const order = Array.from({ length: events }, (_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = (i * 7919 + seed * 104729) % (i + 1);
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    const queue: number[] = [];
    for (let d = 0; d < deliveries; d++) queue.push(...order);
    const deliver = async (i: number): Promise<void> => {
      for (;;) {
        const result = await once(
          handle.store,
          `${runId}:evt-${i}`,
          async ({ attempt }) => {
            await handle.effect(`evt-${i}`, attempt);
          },
          {
            lease: '30s',
            timeout: '20s',
            retention: '10m',
            ...(spec.storeTimeout ? { storeTimeout: spec.storeTimeout as `${number}s` } : {}),
          },
        );
        outcomes[result.outcome] = (outcomes[result.outcome] ?? 0) + 1;
        // A provider retries anything but success; a live owner will finish, so back off and retry.
        if (result.outcome === 'in-flight' || result.outcome === 'failed') {
          await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
          continue;
        }
        return;
      }
    };
    let next = 0;
    const lanes = Array.from({ length: 16 }, async () => {
      while (next < queue.length) await deliver(queue[next++]!);
    });
    await Promise.all(lanes);
    process.send?.({ outcomes });
    await handle.close();
    process.disconnect?.();
  }
}
