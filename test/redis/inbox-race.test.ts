/**
 * Real processes racing on one Redis inbox: 4 workers (two on node-redis, two on ioredis) accept
 * the same 400 events and take, complete, retry, abandon and stall on them at once. Every entry is
 * accepted once and completed exactly once; the attempts of each are 1..k, each handed out once.
 */
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { assertInboxRace, runInboxRace } from '../support/inbox-race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./inbox-race-spec.ts', import.meta.url));

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  describe('redisStore inbox across processes', () => {
    it('4 processes accepting 400 events each and running them at once complete every entry exactly once', async () => {
      const result = await runInboxRace({ spec, processes: 4, events: 400, leaseMs: 500 });
      assertInboxRace(result);
      const takes = result.reports.reduce((n, r) => n + r.takes.length, 0);
      const late = result.reports.reduce((n, r) => n + r.lateCompletes, 0);
      console.log(
        `inbox race: ${takes} takes for 400 entries, ${late} completes or retries refused to a stale owner`,
      );
    });
  });
}
