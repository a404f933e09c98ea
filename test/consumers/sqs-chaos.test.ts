/**
 * SQS long-poll consumers under chaos (see support/chaos.ts), on ElasticMQ 0.7.1 (the stand-in of
 * test/support/elasticmq.ts, started here): three processes on one queue, SIGKILLed in the middle
 * of runs and restarted, handlers that throw, every message published once and a share twice,
 * poison messages: every effect exactly once, none lost, the poison ones in `<queue>_dead`.
 */
import { after } from 'node:test';
import { elasticMqForSuite } from '../support/elasticmq.js';
import { chaosSuite } from './support/chaos.js';
import { kit } from './support/kits/sqs.js';

const server = await elasticMqForSuite();
if (server) {
  // The workers' kit reads it: they inherit this process's environment.
  process.env.ONCEONLY_SQS_ENDPOINT = server.endpoint;
  const probe = server.client();
  after(async () => {
    probe.destroy();
    await server.stop();
  });
  await chaosSuite({
    label: 'SQS (ElasticMQ 0.7.1)',
    server: ['ElasticMQ', server.endpoint, () => probe.listQueues({})],
    kit,
    kitModule: new URL('./support/kits/sqs.ts', import.meta.url),
    adapter: 'onceonly/sqs',
    deadLetters: '<queue>_dead',
  });
}
