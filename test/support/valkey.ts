/**
 * A Valkey 8.1 server binary (its SET ... IFEQ is the Redis store's native compare-and-set), put in
 * .tmp/valkey by scripts/valkey.sh from Debian's packages the first time a suite asks for it.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = fileURLToPath(new URL('../../scripts/valkey.sh', import.meta.url));

/** The path of a runnable valkey-server 8.1, fetching it first if needed; rejects naming why not. */
export async function valkeyServer(): Promise<string> {
  const explicit = process.env.ONCEONLY_VALKEY_SERVER;
  const server =
    explicit ?? (await run('bash', [script], { timeout: 300_000 })).stdout.trim().split('\n').pop()!;
  const { stdout } = await run(server, ['--version'], { timeout: 30_000 });
  if (!/v=(8\.([1-9]|\d\d)|9|\d\d)\./.test(stdout))
    throw new Error(`${server} is not Valkey 8.1 or later: ${stdout.trim()}`);
  return server;
}
