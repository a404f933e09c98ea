/**
 * NATS JetStream consumers under chaos (see support/chaos.ts): three processes on one durable consumer, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages: every effect exactly once, none lost, the poison ones in `<stream>_dead`.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { connect } from '@nats-io/transport-node';
import { reachable, servers } from '../support/servers.js';
import { chaosSummary, runChaos } from './support/chaos.js';
import { kit } from './support/kits/nats.js';

if (await reachable('NATS', servers.nats, async () => (await connect({ servers: servers.nats })).close())) {
  describe('onceonly/nats under SIGKILLs, throws and duplicates', () => {
    it('runs every message once, loses none, dead-letters the poison ones', async () => {
      const r = await runChaos(kit, { kit: new URL('./support/kits/nats.ts', import.meta.url).href });
      console.log(chaosSummary('NATS JetStream', r));
      assert.ok(r.killsLanded > 0, 'consumers were SIGKILLed mid-handler');
      assert.ok(r.throws > 0, 'handlers threw');
      assert.deepEqual(r.lost, [], 'messages lost');
      assert.deepEqual(r.doubled, [], 'effects doubled');
      assert.deepEqual(r.poisonInLedger, []);
      assert.deepEqual(r.deadLettered, r.poison, 'the poison messages are dead-lettered, each once');
    });
  });
}
