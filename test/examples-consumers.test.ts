/**
 * Every queue consumer example (examples/consumers/) runs with one command from the repository root
 * against its broker, and prints each message's result: the three orders processed, the copy a
 * duplicate, the order that fails its first attempt failed then processed on its second; then it
 * cleans up and exits 0. A copy that arrives while its original still runs is deferred (`in-flight`)
 * and settles as a duplicate later: such lines are left out of the comparison.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import amqp from 'amqplib';
import { Redis } from 'ioredis';
import mqtt from 'mqtt';
import { elasticMqForSuite } from './support/elasticmq.js';
import { reachable, servers } from './support/servers.js';

const root = fileURLToPath(new URL('..', import.meta.url));

const expected = [
  'order-1: duplicate',
  'order-1: processed (attempt 1)',
  'order-2: failed (attempt 1)',
  'order-2: processed (attempt 2)',
  'order-3: processed (attempt 1)',
];

/** Runs an example to its end: its exit code and what it printed. */
function run(
  file: string,
  env: Record<string, string>,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `examples/consumers/${file}`], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${file} did not exit within 60 s:\n${out}${err}`));
    }, 60_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

const examples: Array<{
  broker: string;
  file: string;
  variable: string;
  url: string;
  probe: () => Promise<unknown>;
}> = [
  {
    broker: 'RabbitMQ',
    file: 'amqp.ts',
    variable: 'AMQP_URL',
    url: servers.amqp,
    probe: async () => (await amqp.connect(servers.amqp)).close(),
  },
  {
    broker: 'NATS',
    file: 'nats.ts',
    variable: 'NATS_URL',
    url: servers.nats,
    probe: async () => (await connect({ servers: servers.nats })).close(),
  },
  {
    broker: 'Redis (BullMQ)',
    file: 'bullmq.ts',
    variable: 'REDIS_URL',
    url: servers.redis,
    probe: async () => new Redis(servers.redis).quit(),
  },
  {
    broker: 'Mosquitto',
    file: 'mqtt.ts',
    variable: 'MQTT_URL',
    url: servers.mqtt,
    probe: async () => (await mqtt.connectAsync(servers.mqtt, { reconnectPeriod: 0 })).endAsync(),
  },
];

// SQS: ElasticMQ 0.7.1, started here (see support/elasticmq.ts), the example given its endpoint.
const elastic = await elasticMqForSuite();
if (elastic) {
  const client = elastic.client();
  after(async () => {
    client.destroy();
    await elastic.stop();
  });
  examples.push({
    broker: 'ElasticMQ (SQS)',
    file: 'sqs.ts',
    variable: 'SQS_ENDPOINT',
    url: elastic.endpoint,
    probe: () => client.listQueues({}),
  });
}

for (const { broker, file, variable, url, probe } of examples) {
  if (!(await reachable(broker, url, probe))) continue;
  describe(`examples/consumers/${file} on ${broker}`, () => {
    it('prints processed, duplicate, failed then processed, and exits 0', async () => {
      const { code, out, err } = await run(file, { [variable]: url });
      const results = out
        .split('\n')
        .filter((line) => /^order-\d: /.test(line) && !line.includes('in-flight'))
        .sort();
      assert.deepEqual(results, expected, `${file} printed:\n${out}${err}`);
      assert.equal(code, 0, `${file} exited with ${code}:\n${out}${err}`);
    });
  });
}
