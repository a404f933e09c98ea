/**
 * A throwaway PostgreSQL instance for fault tests: `initdb` into a temp dir, `pg_ctl start` on a
 * free port with the socket in that dir, and `stop()` / `start()` to take it down and bring it back
 * with its data. Never touches the machine's shared server. Needs `initdb` and `pg_ctl` on PATH;
 * as root the binaries run as the `postgres` user (initdb refuses root).
 */
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
// Below the ephemeral range: an outgoing connection cannot take the port while the server is down.
import { freePort } from '../../src/cli/wait.js';

const run = promisify(execFile);

export interface PgInstance {
  readonly port: number;
  readonly url: string;
  /** Fast shutdown: every connection is cut, the data stays. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and deletes its directory. */
  destroy(): Promise<void>;
}

async function asPostgres(bin: string, args: string[]): Promise<string> {
  const root = userInfo().uid === 0;
  const { stdout } = await run(root ? 'runuser' : bin, root ? ['-u', 'postgres', '--', bin, ...args] : args, {
    timeout: 60_000,
  });
  return stdout;
}

/** Fails with a clear message when the binaries are missing. */
export async function pgBinaries(): Promise<string> {
  return (await run('pg_ctl', ['--version'])).stdout.trim();
}

/**
 * `password`: TCP logins need a password (scram-sha-256, `postgres` gets this one and `url` carries
 * it); the socket in the temp dir stays trusted. Without it every login is trusted.
 */
export async function startPgInstance(options: { password?: string } = {}): Promise<PgInstance> {
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-pg-'));
  const owner =
    userInfo().uid === 0
      ? {
          uid: Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
          gid: Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
        }
      : undefined;
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  let auth = ['--auth=trust'];
  if (options.password !== undefined) {
    const pwfile = join(dir, 'pwfile');
    writeFileSync(pwfile, `${options.password}\n`, { mode: 0o600 });
    if (owner) chownSync(pwfile, owner.uid, owner.gid);
    auth = ['--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`];
  }
  await asPostgres('initdb', ['-D', data, '-U', 'postgres', ...auth, '-E', 'UTF8', '--no-sync']);
  let running = false;
  const start = async () => {
    await asPostgres('pg_ctl', [
      '-D',
      data,
      '-o',
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`,
      '-l',
      join(dir, 'log'),
      '-w',
      '-t',
      '60',
      'start',
    ]);
    running = true;
  };
  const stop = async () => {
    if (!running) return;
    await asPostgres('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
    running = false;
  };
  await start();
  return {
    port,
    url: `postgres://postgres${options.password === undefined ? '' : `:${encodeURIComponent(options.password)}`}@127.0.0.1:${port}/postgres`,
    start,
    stop,
    async destroy() {
      await stop().catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
