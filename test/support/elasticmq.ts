/**
 * A local stand-in for SQS in the onceonly/sqs suites: ElasticMQ 0.7.1 (the server jar the npm
 * package `elasticmq` bundles), run with the machine's Java on a free loopback port and stopped by
 * the caller. It speaks only SQS's query protocol, so the client is @aws-sdk/client-sqs 3.410 (the
 * last release that speaks it), sending each request to its queue URL's path as the query protocol
 * did. What it cannot show: FIFO queues, RedrivePolicy, message attributes on receive.
 *
 * Nothing to run beforehand: under CI=true a server that cannot start fails the suite (see
 * `elasticmqSuite`), elsewhere the suite is skipped with a notice naming why.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { SQS } from '@aws-sdk/client-sqs';
import { inCI } from './servers.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

const jar = join(
  dirname(createRequire(import.meta.url).resolve('elasticmq/package.json')),
  'elasticmq-server-0.7.1.jar',
);

export interface ElasticMq {
  readonly endpoint: string;
  /** A client of the server (SDK 3.410, dummy credentials, requests sent to the queue's path). */
  client(): SQS;
  /** A new queue `<prefix>_<random>`, with its visibility timeout in seconds; resolves with its URL. */
  queue(prefix?: string, visibilityTimeout?: number): Promise<string>;
  stop(): Promise<void>;
}

/** A client of an ElasticMQ at `endpoint`. */
export function elasticClient(endpoint: string): SQS {
  const sqs = new SQS({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'onceonly', secretAccessKey: 'onceonly' },
    maxAttempts: 2,
  });
  // The query protocol addressed a queue by its URL; SDK 3.410 posts everything to the endpoint's
  // root, which ElasticMQ 0.7.1 reads as no queue.
  sqs.middlewareStack.add(
    (next) => async (args) => {
      const input = args.input as { QueueUrl?: string };
      const request = args.request as { path?: string };
      if (input.QueueUrl) request.path = new URL(input.QueueUrl).pathname;
      return next(args);
    },
    { step: 'build', name: 'queuePath' },
  );
  return sqs;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no free port');
  return address.port;
}

/** Starts ElasticMQ on 127.0.0.1 and a free port; resolves once it answers a ListQueues. */
export async function startElasticMq(): Promise<ElasticMq> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    'java',
    [
      // Its 2013 Scala and Akka reflect into these (they crash without on Java 17).
      '--add-opens',
      'java.base/java.util.regex=ALL-UNNAMED',
      '--add-opens',
      'java.base/java.lang=ALL-UNNAMED',
      `-Drest-sqs.bind-hostname=127.0.0.1`,
      `-Drest-sqs.bind-port=${port}`,
      `-Dnode-address.host=127.0.0.1`,
      `-Dnode-address.port=${port}`,
      '-jar',
      jar,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // A test or bench that dies without stop() must not leave the JVM behind.
  const orphan = () => child.kill('SIGKILL');
  process.once('exit', orphan);
  child.once('exit', () => process.off('exit', orphan));
  let log = '';
  child.stdout?.on('data', (chunk: Buffer) => (log = (log + chunk).slice(-4_000)));
  child.stderr?.on('data', (chunk: Buffer) => (log = (log + chunk).slice(-4_000)));
  const exited = new Promise<never>((_, reject) => {
    // No java on the PATH: an error event, not an exit.
    child.once('error', (error) => reject(new Error(`java would not run: ${error.message}`)));
    child.once('exit', (code, signal) =>
      reject(new Error(`ElasticMQ exited (${code ?? signal}) before answering:\n${log}`)),
    );
  });
  exited.catch(() => {});
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGTERM');
      setTimeout(() => child.kill('SIGKILL'), 5_000).unref();
    });
  };
  const endpoint = `http://127.0.0.1:${port}`;
  const admin = elasticClient(endpoint);
  try {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        await Promise.race([admin.listQueues({}), exited]);
        break;
      } catch (error) {
        if (child.exitCode !== null || child.pid === undefined || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } catch (error) {
    admin.destroy();
    await stop();
    throw error;
  }
  return {
    endpoint,
    client: () => elasticClient(endpoint),
    async queue(prefix = 'oo_sqs', visibilityTimeout = 30) {
      const { QueueUrl } = await admin.createQueue({
        QueueName: `${prefix}_${randomBytes(4).toString('hex')}`,
        Attributes: { VisibilityTimeout: String(visibilityTimeout) },
      });
      if (!QueueUrl) throw new Error('ElasticMQ: createQueue gave no QueueUrl');
      return QueueUrl;
    },
    async stop() {
      admin.destroy();
      await stop();
    },
  };
}

/**
 * Starts ElasticMQ for a suite: resolves with it; or, when it would not start, with undefined after
 * registering a failing test under CI=true (the run is red, never skipped), or a notice elsewhere.
 */
export async function elasticMqForSuite(): Promise<ElasticMq | undefined> {
  try {
    return await startElasticMq();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    if (inCI)
      describe(`ElasticMQ (${jar})`, () => {
        it('starts', () => {
          throw new Error(`onceonly tests: ElasticMQ (java -jar) would not start in CI: ${why}`);
        });
      });
    else
      console.warn(
        `\n*** SKIPPED ElasticMQ: it would not start (${why}). Set CI=true to make this fail. ***\n`,
      );
    return undefined;
  }
}
