/**
 * A restartable throwaway `redis-server` for fault tests: its own port and directory, AOF with
 * fsync on every write so a stop and start keeps every key (and its absolute expiry), and
 * `stop()` / `start()` to take it down and bring it back. Never touches the machine's shared server.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
// Below the ephemeral range: an outgoing connection cannot take the port while the server is down.
import { freePort } from '../../src/cli/wait.js';

const run = promisify(execFile);

export interface RedisInstance {
  readonly port: number;
  readonly url: string;
  cli(...args: string[]): Promise<string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Freezes the server (SIGSTOP) for `ms`, then resumes it: connections stay open, nothing answers. */
  pause(ms: number): Promise<void>;
  destroy(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

export interface RedisInstanceOptions {
  /** The server binary (a Valkey 8.1 from scripts/valkey.sh, say). @default 'redis-server' */
  server?: string;
  /** AOF with fsync on every write, so a stop and start keeps every key. @default true */
  persist?: boolean;
}

export async function startRedisInstance(options: RedisInstanceOptions = {}): Promise<RedisInstance> {
  const binary = options.server ?? 'redis-server';
  const persist = options.persist ?? true;
  const dir = await mkdtemp(join(tmpdir(), 'onceonly-redis-fault-'));
  const port = await freePort();
  const cli = async (...args: string[]) =>
    (await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 })).stdout;
  let child: ChildProcess | undefined;
  const start = async () => {
    const c = spawn(
      binary,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        ...(persist ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
        '--logfile',
        join(dir, 'redis.log'),
      ],
      { stdio: 'ignore' },
    );
    live.add(c);
    c.once('exit', () => live.delete(c));
    child = c;
    const end = Date.now() + 30_000;
    for (;;) {
      if (c.exitCode !== null) throw new Error(`${binary} exited with ${c.exitCode}`);
      try {
        if ((await cli('ping')).trim() === 'PONG') return;
      } catch {
        // not up yet
      }
      if (Date.now() > end) throw new Error(`${binary} on ${port} did not answer PING`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };
  const stop = async () => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill('SIGCONT'); // a frozen server cannot act on SIGTERM
    c.kill('SIGTERM');
    // A server that does not shut down in 10 s is killed: a test never waits on it for ever.
    const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
    child = undefined;
  };
  await start();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    cli,
    start,
    stop,
    async pause(ms) {
      const c = child;
      if (!c) throw new Error('redis test server: not running');
      c.kill('SIGSTOP');
      try {
        await new Promise((resolve) => setTimeout(resolve, ms));
      } finally {
        c.kill('SIGCONT');
      }
    },
    async destroy() {
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
