/**
 * Throwaway Redis servers for tests: a single `redis-server` with chosen flags, or a 3-master Redis
 * Cluster, each in its own temp dir on free ports, stopped and deleted afterwards. Needs
 * `redis-server` and `redis-cli` on PATH (override with ONCEONLY_REDIS_SERVER / ONCEONLY_REDIS_CLI).
 */

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ephemeralLow } from '../../src/cli/wait.js';

const run = promisify(execFile);
const serverBin = process.env.ONCEONLY_REDIS_SERVER ?? 'redis-server';
const cliBin = process.env.ONCEONLY_REDIS_CLI ?? 'redis-cli';
// Generous: a slow 2-core CI runner with other suites running can take seconds per step.
const STEP_TIMEOUT_MS = 60_000;

export interface TestServer {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly url: string;
  /** Runs redis-cli against this server and returns its output. */
  cli(...args: string[]): Promise<string>;
}

export interface TestCluster {
  readonly nodes: readonly TestServer[];
  stop(): Promise<void>;
  /** Stops one node (SIGTERM); its cluster config file stays, so `startNode` brings it back as itself. */
  stopNode(index: number): Promise<void>;
  /** Starts a stopped node again on its port and waits until every node reports cluster_state:ok. */
  startNode(index: number): Promise<void>;
  /** Freezes one node (SIGSTOP) for `ms`, then resumes it: connections stay open, nothing answers. */
  pauseNode(index: number, ms: number): Promise<void>;
}

/** Fails fast with a clear message when the binaries are missing. */
export async function redisBinaries(): Promise<string> {
  const { stdout } = await run(serverBin, ['--version']);
  await run(cliBin, ['--version']);
  return stdout.trim();
}

const live = new Set<ChildProcess>();
process.on('exit', () => {
  // A crashed test run must not leave servers behind.
  for (const child of live) child.kill('SIGKILL');
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Free ports whose cluster bus port (+10000) is free too. */
async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let tries = 0; ports.length < count && tries < 500; tries++) {
    // Port and bus port below the ephemeral range: no outgoing connection can take them meanwhile.
    const port = 10_000 + Math.floor(Math.random() * Math.max(1_000, ephemeralLow() - 20_000));
    if (ports.includes(port) || ports.includes(port + 10_000) || ports.includes(port - 10_000)) continue;
    if ((await portFree(port)) && (await portFree(port + 10_000))) ports.push(port);
  }
  if (ports.length < count) throw new Error('redis test servers: no free ports found');
  return ports;
}

function cliFor(port: number) {
  return async (...args: string[]) => {
    const { stdout } = await run(cliBin, ['-h', '127.0.0.1', '-p', String(port), ...args], {
      timeout: STEP_TIMEOUT_MS,
    });
    return stdout;
  };
}

async function until(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = STEP_TIMEOUT_MS,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (let delay = 50; Date.now() < deadline; delay = Math.min(delay * 2, 500)) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
  throw new Error(
    `redis test servers: ${what} did not happen within ${timeoutMs} ms${last ? ` (${String(last)})` : ''}`,
  );
}

interface Started {
  server: TestServer;
  child: ChildProcess;
  logfile: string;
}

async function startOne(dir: string, port: number, args: string[]): Promise<Started> {
  const logfile = join(dir, `redis-${port}.log`);
  const child = spawn(
    serverBin,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--logfile',
      logfile,
      '--save',
      '',
      '--appendonly',
      'no',
      '--daemonize',
      'no',
      ...args,
    ],
    { stdio: 'ignore' },
  );
  live.add(child);
  child.once('exit', () => live.delete(child));
  const server: TestServer = { host: '127.0.0.1', port, url: `redis://127.0.0.1:${port}`, cli: cliFor(port) };
  try {
    await until(`redis-server on port ${port} answering PING`, async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      return (await server.cli('ping')).trim() === 'PONG';
    });
  } catch (err) {
    const log = await readFile(logfile, 'utf8').catch(() => '');
    await stopAll([child]);
    throw new Error(`${(err as Error).message}\n${log.slice(-2000)}`);
  }
  return { server, child, logfile };
}

async function stopAll(children: ChildProcess[]): Promise<void> {
  await Promise.all(
    children.map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          const force = setTimeout(() => child.kill('SIGKILL'), 5_000);
          child.once('exit', () => {
            clearTimeout(force);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
  );
}

/**
 * Starts one standalone `redis-server` with extra flags (e.g. `['--maxmemory-policy', 'allkeys-lru']`).
 */
export async function startRedisServer(args: string[] = []): Promise<TestServer & { stop(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'onceonly-redis-'));
  try {
    const [port] = await freePorts(1);
    const { server, child } = await startOne(dir, port!, args);
    return {
      ...server,
      async stop() {
        await stopAll([child]);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/**
 * Starts a Redis Cluster of `masters` nodes (no replicas) from `redis-server --cluster-enabled yes`
 * and `redis-cli --cluster create`, and waits until every node reports cluster_state:ok with all
 * 16384 slots assigned and knows every other node.
 */
export async function startRedisCluster(masters = 3): Promise<TestCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'onceonly-redis-cluster-'));
  const started: Started[] = [];
  const stop = async () => {
    await stopAll(started.map((s) => s.child));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const ports = await freePorts(masters);
    const clusterArgs = (port: number) => [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      join(dir, `nodes-${port}.conf`),
      '--cluster-node-timeout',
      '5000',
    ];
    for (const port of ports) started.push(await startOne(dir, port, clusterArgs(port)));
    await run(
      cliBin,
      [
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: STEP_TIMEOUT_MS },
    );
    const nodes = started.map((s) => s.server);
    const ready = async () => {
      for (const node of nodes) {
        await until(`cluster_state:ok on port ${node.port}`, async () => {
          const info = await node.cli('cluster', 'info');
          return (
            /cluster_state:ok/.test(info) &&
            /cluster_slots_ok:16384/.test(info) &&
            new RegExp(`cluster_known_nodes:${masters}\\b`).test(info)
          );
        });
      }
    };
    await ready();
    const at = (index: number) => {
      const s = started[index];
      if (!s) throw new Error(`redis test cluster: no node ${index}`);
      return s;
    };
    return {
      nodes,
      stop,
      async stopNode(index) {
        await stopAll([at(index).child]);
      },
      async startNode(index) {
        const { server, child } = at(index);
        if (child.exitCode === null && child.signalCode === null) throw new Error(`node ${index} is running`);
        started[index] = await startOne(dir, server.port, clusterArgs(server.port));
        await ready();
      },
      async pauseNode(index, ms) {
        const { child } = at(index);
        child.kill('SIGSTOP');
        try {
          await new Promise((resolve) => setTimeout(resolve, ms));
        } finally {
          child.kill('SIGCONT');
        }
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
