/**
 * MQTT consumers under chaos (see support/chaos.ts): three processes on one topic through a shared
 * subscription, each a persistent session resumed by its restart, SIGKILLed in the middle of runs,
 * handlers that throw, every message published once and a share twice, poison messages: every
 * effect exactly once, none lost, the poison ones on `<topic>/dead`.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import mqtt from 'mqtt';
import { reachable, servers } from '../support/servers.js';
import { chaosSummary, runChaos } from './support/chaos.js';
import { kit } from './support/kits/mqtt.js';

if (
  await reachable('Mosquitto', servers.mqtt, async () =>
    (await mqtt.connectAsync(servers.mqtt, { reconnectPeriod: 0 })).endAsync(),
  )
) {
  describe('onceonly/mqtt under SIGKILLs, throws and duplicates', () => {
    it('runs every message once, loses none, dead-letters the poison ones', async () => {
      const r = await runChaos(kit, { kit: new URL('./support/kits/mqtt.ts', import.meta.url).href });
      console.log(chaosSummary('MQTT', r));
      assert.ok(r.killsLanded > 0, 'consumers were SIGKILLed mid-handler');
      assert.ok(r.throws > 0, 'handlers threw');
      assert.deepEqual(r.lost, [], 'messages lost');
      assert.deepEqual(r.doubled, [], 'effects doubled');
      assert.deepEqual(r.poisonInLedger, []);
      assert.deepEqual(r.deadLettered, r.poison, 'the poison messages are dead-lettered, each once');
    });
  });
}
