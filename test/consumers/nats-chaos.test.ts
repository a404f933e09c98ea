/**
 * NATS JetStream consumers under chaos (see support/chaos.ts): three processes on one durable consumer, SIGKILLed in
 * the middle of runs and restarted, handlers that throw, every message published once and a share
 * twice, poison messages: every effect exactly once, none lost, the poison ones in `<stream>_dead`.
 */
import { connect } from '@nats-io/transport-node';
import { servers } from '../support/servers.js';
import { chaosSuite } from './support/chaos.js';
import { kit } from './support/kits/nats.js';

await chaosSuite({
  label: 'NATS JetStream',
  server: ['NATS', servers.nats, async () => (await connect({ servers: servers.nats })).close()],
  kit,
  kitModule: new URL('./support/kits/nats.ts', import.meta.url),
  adapter: 'onceonly/nats',
  deadLetters: 'the dead-letter stream',
});
