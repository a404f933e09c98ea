/**
 * `onceonly console --store <url>`: the operator's console (onceonly/console) on this machine only.
 * It listens on 127.0.0.1 and answers only requests addressed to it by that name (`Host:
 * 127.0.0.1:<port>` or `localhost:<port>`), so a web page elsewhere cannot reach it through DNS
 * rebinding; the operator is the local user. Ctrl-C stops it and closes the store.
 */
import { createServer } from 'node:http';
import { userInfo } from 'node:os';
import { createConsole, nodeHandler } from '../console/index.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { openStore } from './stores.js';

export const consoleFlags = {
  store: { type: 'string', help: 'redis://..., postgres://..., mysql://... or a SQLite file path' },
  name: {
    type: 'string',
    default: 'onceonly',
    help: "the store's table (SQL) or key prefix without the colon (Redis)",
  },
  receiver: { type: 'string', help: 'receiver names to break counts down by, comma-separated' },
  port: { type: 'number', default: 4377, help: 'the port on 127.0.0.1 (0: any free one)' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

const SUMMARY = `Serves the operator's console on http://127.0.0.1:<port>/ for this machine only: counts by
state, dead entries, an entry's payload and error, requeue and purge. It never creates a table.`;

export async function consoleCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, consoleFlags);
  if (flags.help) {
    console.log(usage('console --store <url> [--port 4377]', SUMMARY, consoleFlags));
    return 0;
  }
  if (!flags.store) throw new UsageError('--store is required, e.g. --store postgres://localhost/app');
  if (flags.store === 'memory')
    throw new UsageError(
      'a memory store lives inside its own process: there is nothing to look at from outside',
    );
  if (!Number.isInteger(flags.port) || flags.port > 65_535)
    throw new UsageError('--port must be a port number');
  const opened = await openStore(flags.store, flags.name, { existing: true });
  if (!opened.store.inbox) {
    await opened.close();
    throw new UsageError('this store has no inbox');
  }
  let port = flags.port;
  const operator = `${userInfo().username} (local)`;
  const app = createConsole({
    store: opened.store,
    receivers: (flags.receiver ?? '')
      .split(',')
      .map((r) => r.trim())
      .filter((r) => r !== ''),
    now: opened.now,
    // Loopback only, and only under its own name: a page that rebinds its host name to 127.0.0.1
    // sends its own Host, and is refused.
    authorize: (request) => {
      const host = request.headers.get('host');
      return host === `127.0.0.1:${port}` || host === `localhost:${port}` ? operator : undefined;
    },
  });
  const server = createServer(nodeHandler(app));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  port = (server.address() as { port: number }).port;
  console.log(`onceonly console on http://127.0.0.1:${port}/ (this machine only; Ctrl-C stops it)`);
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  await closed;
  await opened.close();
  return 0;
}
