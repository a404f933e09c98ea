/**
 * BullMQ workers under chaos (see support/chaos.ts): three processes on one queue, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages: every effect exactly once, none lost, the poison ones in the failed set.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { reachable, servers } from '../support/servers.js';
import { chaosSummary, runChaos } from './support/chaos.js';
import { kit } from './support/kits/bullmq.js';

if (await reachable('Redis (BullMQ)', servers.redis, async () => new Redis(servers.redis).quit())) {
  describe('onceonly/bullmq under SIGKILLs, throws and duplicates', () => {
    it('runs every message once, loses none, dead-letters the poison ones', async () => {
      const r = await runChaos(kit, { kit: new URL('./support/kits/bullmq.ts', import.meta.url).href });
      console.log(chaosSummary('BullMQ', r));
      assert.ok(r.killsLanded > 0, 'consumers were SIGKILLed mid-handler');
      assert.ok(r.throws > 0, 'handlers threw');
      assert.deepEqual(r.lost, [], 'messages lost');
      assert.deepEqual(r.doubled, [], 'effects doubled');
      assert.deepEqual(r.poisonInLedger, []);
      assert.deepEqual(r.deadLettered, r.poison, 'the poison messages are dead-lettered, each once');
    });
  });
}
