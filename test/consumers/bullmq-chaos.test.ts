/**
 * BullMQ workers under chaos (see support/chaos.ts): three processes on one queue, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages: every effect exactly once, none lost, the poison ones in the failed set.
 */
import { Redis } from 'ioredis';
import { servers } from '../support/servers.js';
import { chaosSuite } from './support/chaos.js';
import { kit } from './support/kits/bullmq.js';

await chaosSuite({
  label: 'BullMQ',
  server: ['Redis (BullMQ)', servers.redis, async () => new Redis(servers.redis).quit()],
  kit,
  kitModule: new URL('./support/kits/bullmq.ts', import.meta.url),
  adapter: 'onceonly/bullmq',
  deadLetters: 'the failed set',
});
