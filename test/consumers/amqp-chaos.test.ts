/**
 * RabbitMQ consumers under chaos (see support/chaos.ts): three processes on one queue, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages (one that always throws, one that kills every run of its own): every effect
 * once, none lost, the poison ones in `<queue>.dead`.
 */
import amqp from 'amqplib';
import { servers } from '../support/servers.js';
import { chaosSuite } from './support/chaos.js';
import { kit } from './support/kits/amqp.js';

await chaosSuite({
  label: 'RabbitMQ',
  server: ['RabbitMQ', servers.amqp, async () => (await amqp.connect(servers.amqp)).close()],
  kit,
  kitModule: new URL('./support/kits/amqp.ts', import.meta.url),
  adapter: 'onceonly/amqp',
  deadLetters: '<queue>.dead',
});
