// DynamoDB store: claim + confirm per event against AWS Powertools idempotency's
// DynamoDBPersistenceLayer (makeIdempotent, with a registered Lambda context of 30 s remaining), and
// against the floor of any DynamoDB dedup (a raw PutItem if absent, then an UpdateItem), all on one
// dynalite server (a child process, on a free loopback port) at the same concurrency, in alternating
// rounds; a ratio is the median of each round's own (paired) ratio.
//
// dynalite answers one request at a time, so this compares what each library asks of the server
// (requests per event, and their weight), not DynamoDB's latency.
//
//   npx tsx bench/dynamodb.bench.ts              (BENCH_SMALL=1 for a quick run)
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { CreateTableCommand, PutItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { createDynamoDbTable, dynamoDbStore } from '../src/stores/dynamodb.js';
import { dynamoClient } from '../test/support/dynalite.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 150 : 500;
const rounds = small ? 3 : 8;
const concurrency = 16;
const leaseMs = 120_000;
const retentionMs = 3 * 86_400_000;
const fingerprint = 'a'.repeat(64);
const run = randomBytes(4).toString('hex');

/** A free loopback port (dynalite's CLI takes a port number). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

async function startServer(): Promise<{ endpoint: string; child: ChildProcess }> {
  const port = await freePort();
  const cli = createRequire(import.meta.url).resolve('dynalite/cli.js');
  const child = spawn(
    process.execPath,
    [cli, '--host', '127.0.0.1', '--port', String(port), '--createTableMs', '0'],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('listening') && resolve());
    child.on('exit', (code) => reject(new Error(`dynalite exited with ${code}`)));
  });
  return { endpoint: `http://127.0.0.1:${port}`, child };
}

/** Runs `work(i)` for `count` items with `concurrency` in flight; returns events per second. */
async function measure(count: number, work: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await work(next++);
    }),
  );
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

const { endpoint, child } = await startServer();
const client = dynamoClient(endpoint);
try {
  const table = `oo_bench_${run}`;
  const rawTable = `oo_bench_raw_${run}`;
  const powertoolsTable = `oo_bench_pt_${run}`;
  await createDynamoDbTable({ client, table, ttl: false });
  await createDynamoDbTable({ client, table: rawTable, ttl: false });
  // Powertools' default schema: partition key `id`.
  await client.send(
    new CreateTableCommand({
      TableName: powertoolsTable,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  const store = dynamoDbStore({ client, table });
  const config = new IdempotencyConfig({ expiresAfterSeconds: retentionMs / 1000 });
  type LambdaContext = Parameters<IdempotencyConfig['registerLambdaContext']>[0];
  config.registerLambdaContext({ getRemainingTimeInMillis: () => 30_000 } as LambdaContext);
  const powertools = makeIdempotent(async (_event: { id: string }) => ({ ok: true }), {
    // Its own client, from the bench workspace's copy of the SDK, to the same server.
    persistenceStore: new DynamoDBPersistenceLayer({
      tableName: powertoolsTable,
      clientConfig: {
        endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'onceonly', secretAccessKey: 'onceonly' },
        maxAttempts: 2,
      },
    }),
    config,
  });

  const contenders: { name: string; deliver(eventId: string): Promise<void> }[] = [
    {
      name: 'raw PutItem if absent + UpdateItem',
      async deliver(eventId) {
        await client.send(
          new PutItemCommand({
            TableName: rawTable,
            Item: {
              pk: { S: `k:${eventId}` },
              state: { S: 'processing' },
              token: { S: randomBytes(16).toString('hex') },
              fingerprint: { S: fingerprint },
              expiresAt: { N: String(Date.now() + leaseMs) },
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        await client.send(
          new UpdateItemCommand({
            TableName: rawTable,
            Key: { pk: { S: `k:${eventId}` } },
            UpdateExpression: 'SET #s = :c, expiresAt = :e',
            ExpressionAttributeNames: { '#s': 'state' },
            ExpressionAttributeValues: {
              ':c': { S: 'completed' },
              ':e': { N: String(Date.now() + retentionMs) },
            },
          }),
        );
      },
    },
    {
      name: 'Powertools DynamoDBPersistenceLayer',
      async deliver(eventId) {
        await powertools({ id: eventId });
      },
    },
    {
      name: 'dynamoDbStore claim + confirm',
      async deliver(eventId) {
        const claim = await store.claim(eventId, { leaseMs, fingerprint, retentionMs });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        if (!(await store.confirm(claim.lease, { retentionMs }))) throw new Error('lease lost');
      },
    },
  ];

  // Warm-up: connections opened, code paths compiled.
  for (const c of contenders) await measure(100, (i) => c.deliver(`warm:${c.name}:${i}`));

  const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < contenders.length; k++) {
      const c = contenders[(r + k) % contenders.length]!;
      results.get(c.name)!.push(await measure(events, (i) => c.deliver(`r${r}:${c.name}:${i}`)));
    }
  }
  const ratio = (of: string, to: string) => {
    const a = results.get(of)!;
    const b = results.get(to)!;
    return median(a.map((x, i) => x / b[i]!));
  };
  const [raw, pt] = [contenders[0]!.name, contenders[1]!.name];
  console.log(
    `\ndynalite 4 (child process), ${rounds} rounds x ${events} events, ${concurrency} in flight\n`,
  );
  console.log('| contender | events/s (median) | min .. max | vs raw | vs Powertools |');
  console.log('| --- | ---: | ---: | ---: | ---: |');
  for (const c of contenders) {
    const xs = results.get(c.name)!;
    console.log(
      `| ${c.name} | ${Math.round(median(xs))} | ${Math.round(Math.min(...xs))} .. ${Math.round(Math.max(...xs))} | ${ratio(c.name, raw).toFixed(2)}x | ${ratio(c.name, pt).toFixed(2)}x |`,
    );
  }
  console.log('\nRatios are medians of per-round ratios (each round runs every contender back to back).');
} finally {
  client.destroy();
  child.kill();
}
