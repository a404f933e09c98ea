/**
 * MQTT consumers under chaos (see support/chaos.ts): three processes on one topic through a shared
 * subscription, each a persistent session resumed by its restart, SIGKILLed in the middle of runs,
 * handlers that throw, every message published once and a share twice, poison messages: every
 * effect exactly once, none lost, the poison ones on `<topic>/dead`.
 */
import mqtt from 'mqtt';
import { servers } from '../support/servers.js';
import { chaosSuite } from './support/chaos.js';
import { kit } from './support/kits/mqtt.js';

await chaosSuite({
  label: 'MQTT',
  server: [
    'Mosquitto',
    servers.mqtt,
    async () => (await mqtt.connectAsync(servers.mqtt, { reconnectPeriod: 0 })).endAsync(),
  ],
  kit,
  kitModule: new URL('./support/kits/mqtt.ts', import.meta.url),
  adapter: 'onceonly/mqtt',
  deadLetters: '<topic>/dead',
});
