/**
 * A DynamoDB-compatible server for the DynamoDB store's suites: dynalite (an npm devDependency),
 * started in this process on a free loopback port, in memory, and stopped by the caller. Nothing to
 * install or run beforehand, so the suites never skip: a server that cannot start fails them.
 */
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoDbTable } from '../../src/stores/dynamodb.js';

// The SDK warns once per process that its releases after January 2027 need Node 22; the tests run on 20.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

interface DynaliteServer {
  listen(port: number, host: string, done: (err?: Error) => void): void;
  close(done: (err?: Error) => void): void;
  address(): AddressInfo | string | null;
}
const dynalite = createRequire(import.meta.url)('dynalite') as (
  options: Record<string, unknown>,
) => DynaliteServer;

/** A client of the server at `endpoint` (any credentials: dynalite checks none). */
export function dynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'onceonly', secretAccessKey: 'onceonly' },
    maxAttempts: 2,
  });
}

export interface Dynalite {
  readonly endpoint: string;
  /** A new table named `onceonly_<prefix>_<random>` with the store's schema (no TTL: dynalite has none). */
  table(prefix?: string): Promise<string>;
  stop(): Promise<void>;
}

export async function startDynalite(): Promise<Dynalite> {
  // Tables become ACTIVE at once; a real service takes seconds.
  const server = dynalite({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) =>
    server.listen(0, '127.0.0.1', (err) => (err ? reject(err) : resolve())),
  );
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('dynalite: no TCP address');
  const endpoint = `http://127.0.0.1:${address.port}`;
  const admin = dynamoClient(endpoint);
  return {
    endpoint,
    async table(prefix = 'test') {
      const name = `onceonly_${prefix}_${randomBytes(4).toString('hex')}`;
      await createDynamoDbTable({ client: admin, table: name, ttl: false });
      return name;
    },
    async stop() {
      admin.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
