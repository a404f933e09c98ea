/**
 * Real processes racing on the shared Redis server through once(): exactly one effect per event,
 * and a SIGKILLed lease holder is taken over with attempt 2 once its lease runs out.
 */
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { describeRaces } from '../support/race.js';
import { reachable, servers } from '../support/servers.js';

const spec = fileURLToPath(new URL('./race-spec.ts', import.meta.url));

if (
  await reachable('Redis', servers.redis, async () => {
    const probe = await createClient({ url: servers.redis }).connect();
    await probe.ping();
    await probe.quit();
  })
) {
  describeRaces('redisStore across processes', spec);
}
