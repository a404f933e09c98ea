/**
 * RabbitMQ consumers under chaos (see support/chaos.ts): three processes on one queue, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages (one that always throws, one that kills every run of its own): every effect
 * once, none lost, the poison ones in `<queue>.dead`.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import amqp from 'amqplib';
import { reachable, servers } from '../support/servers.js';
import { chaosSummary, runChaos } from './support/chaos.js';
import { kit } from './support/kits/amqp.js';

if (await reachable('RabbitMQ', servers.amqp, async () => (await amqp.connect(servers.amqp)).close())) {
  describe('onceonly/amqp under SIGKILLs, throws and duplicates', () => {
    it('runs every message once, loses none, dead-letters the poison ones', async () => {
      const r = await runChaos(kit, { kit: new URL('./support/kits/amqp.ts', import.meta.url).href });
      console.log(chaosSummary('RabbitMQ', r));
      assert.ok(r.killsLanded > 0, 'consumers were SIGKILLed mid-handler');
      assert.ok(r.throws > 0, 'handlers threw');
      assert.deepEqual(r.lost, [], 'messages lost');
      assert.deepEqual(r.doubled, [], 'effects doubled with no SIGKILL between the effect and its confirm');
      // A SIGKILL cuts at most the other runs in flight in its process (prefetch 8) between effect and confirm.
      assert.ok(
        r.doubledByKill.length <= r.killsLanded * 7,
        `${r.doubledByKill.length} doubles for ${r.killsLanded} kills`,
      );
      assert.deepEqual(r.poisonInLedger, []);
      assert.deepEqual(r.deadLettered, r.poison, 'the poison and killer messages are dead-lettered');
    });
  });
}
