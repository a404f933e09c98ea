/**
 * A real Next.js 16 app (App Router, `test/runtimes/next-app`) started with `next dev` on a
 * loopback port. The handler and store live in the Next process; the suite steers and observes them
 * through the app's `/control` route.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  adapterSuite,
  assertParsedFirst,
  bodyOf,
  type Controls,
  deliver,
  eventId,
  handshakeSuite,
  outcomeSuite,
  type Server,
} from '../adapters/harness.js';
import { requireRuntimes } from './workspace.js';

requireRuntimes();
const APP = fileURLToPath(new URL('./next-app', import.meta.url));
const NEXT_BIN = fileURLToPath(new URL('./node_modules/next/dist/bin/next', import.meta.url));
/** Generous: a cold `next dev` compile on a loaded 2-core machine. */
const STARTUP_MS = 180_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as import('node:net').AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

interface NextServer extends Server {
  base: string;
  log: () => string;
}

/** `next dev`, or a production build served by `next start` (its own dist folder). */
type Mode = 'dev' | 'start';

function envFor(mode: Mode): NodeJS.ProcessEnv {
  return mode === 'dev'
    ? { ...process.env, NEXT_TELEMETRY_DISABLED: '1', NODE_ENV: 'development' }
    : {
        ...process.env,
        NEXT_TELEMETRY_DISABLED: '1',
        NODE_ENV: 'production',
        ONCEONLY_NEXT_DIST: '../.tmp/next-app-prod',
      };
}

/** Runs `next build` for the production mode; resolves when it succeeded. */
async function buildNext(): Promise<void> {
  const child = spawn(process.execPath, [NEXT_BIN, 'build', APP], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: envFor('start'),
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`next build failed (${code}):\n${output}`);
}

async function startNext(mode: Mode): Promise<NextServer> {
  if (mode === 'start') await buildNext();
  // A free port can be taken again before Next listens on it (another suite's server, or an
  // outgoing connection's ephemeral port): try another one.
  for (let attempt = 1; ; attempt++) {
    try {
      return await launchNext(mode, await freePort());
    } catch (error) {
      if (attempt >= 4 || !/EADDRINUSE/.test(String((error as Error).message))) throw error;
    }
  }
}

async function launchNext(mode: Mode, port: number): Promise<NextServer> {
  const base = `http://127.0.0.1:${port}`;
  let output = '';
  const child: ChildProcess = spawn(
    process.execPath,
    [NEXT_BIN, mode, APP, '-H', '127.0.0.1', '-p', String(port)],
    {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: envFor(mode),
    },
  );
  // If this process dies before `close`, do not leave the Next process group behind.
  const orphanGuard = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {}
  };
  process.once('exit', orphanGuard);
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const close = async () => {
    process.off('exit', orphanGuard);
    if (child.exitCode !== null || child.pid === undefined) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, 5_000);
    await exited;
    clearTimeout(timer);
  };

  const deadline = Date.now() + STARTUP_MS;
  // What the last probe saw, for the error: a route answering the wrong outcome (a production
  // bundle that broke the library) must not read as a slow start.
  let lastProbe = 'no probe answered';
  for (;;) {
    if (child.exitCode !== null) throw new Error(`next ${mode} exited early:\n${output}`);
    try {
      // The first requests compile the routes: wait for both.
      const control = await fetch(`${base}/control`, { signal: AbortSignal.timeout(60_000) });
      const answers = [`/control ${control.status}`];
      let ready = control.ok;
      for (const route of ['webhooks', 'direct', 'outcomes-closed', 'outcomes-open', 'handshake']) {
        const res = await fetch(`${base}/${route}`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
        const outcome = res.headers.get('onceonly-outcome');
        answers.push(`/${route} ${res.status} ${outcome} ${(await res.text()).slice(0, 200)}`);
        ready &&= outcome === 'rejected';
      }
      if (ready) break;
      lastProbe = answers.join('\n');
    } catch (error) {
      lastProbe = String(error);
    }
    if (Date.now() > deadline) {
      await close();
      throw new Error(
        `next ${mode} did not answer as expected within ${STARTUP_MS} ms; last probe:\n${lastProbe}\n${output}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  if (/Installing (dev)?dependencies/i.test(output)) {
    await close();
    throw new Error(`next dev tried to install packages (a TypeScript file in the fixture app?):\n${output}`);
  }
  return { url: `${base}/webhooks`, base, close, log: () => output, controls: remoteControls(base) };
}

function remoteControls(base: string): Controls {
  const call = async (body: object) => {
    const res = await fetch(`${base}/control`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { value?: unknown }).value;
  };
  return {
    async gate(id) {
      await call({ op: 'gate', id });
      return {
        started: call({ op: 'started', id }).then(() => undefined),
        release: () => call({ op: 'release', id }).then(() => undefined),
      };
    },
    runs: async (id) => ((await call({ op: 'runs', id })) as number | null) ?? undefined,
    attempts: async (id) => ((await call({ op: 'attempts', id })) as number | null) ?? undefined,
    inspect: async (key) => (await call({ op: 'inspect', key })) ?? undefined,
    outcomes: async () => (await call({ op: 'outcomes' })) as string[],
  };
}

for (const mode of ['dev', 'start'] as const) {
  const label =
    mode === 'dev' ? 'Next.js 16 App Router (next dev)' : 'Next.js 16 App Router (next build + next start)';
  let shared: Promise<NextServer> | undefined;
  const server = () => (shared ??= startNext(mode));

  // One server per mode for the whole file: the suite's own close is a no-op, the last describe stops it.
  // The suite runs on /direct, which the app's proxy does not match (a matching proxy makes Next
  // buffer the body before the route, so no adapter can refuse it earlier); /webhooks is behind it.
  adapterSuite(label, async () => {
    const next = await server();
    return { ...next, url: `${next.base}/direct`, close: async () => {} };
  });

  // GET and POST both exported from app/handshake/route.js.
  handshakeSuite(label, async () => {
    const next = await server();
    return { ...next, url: `${next.base}/handshake`, close: async () => {} };
  });

  outcomeSuite(label, async () => {
    const next = await server();
    const control = async (body: object) => {
      const res = await fetch(`${next.base}/control`, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200);
    };
    return {
      closed: `${next.base}/outcomes-closed`,
      open: `${next.base}/outcomes-open`,
      setDown: (down) => control({ op: 'down', value: down }),
      plant: (key, ms) => control({ op: 'plant', key, ms }),
      close: async () => {},
    };
  });

  describe(`${label}: body parsing before the route`, () => {
    let next: NextServer;
    before(
      async () => {
        next = await server();
      },
      { timeout: STARTUP_MS + 10_000 },
    );
    after(async () => {
      await next?.close();
    });

    it("verifies the exact bytes even when the app's proxy parsed the JSON body first", async () => {
      const controls = next.controls!;
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      const res = await deliver(next.url, body, { headers: { 'x-proxy-parse': 'json' } });
      assert.equal(res.headers.get('x-proxy-parsed'), 'object', 'the proxy did parse the body');
      assert.equal(res.status, 200);
      assert.equal(res.outcome, 'processed');
      assert.equal(
        (await deliver(next.url, body, { headers: { 'x-proxy-parse': 'json' } })).outcome,
        'duplicate',
      );
      assert.equal(await controls.runs(id), 1);
    });

    it('answers 500 body_already_parsed naming the fix when the route read the body first', async () => {
      const controls = next.controls!;
      const id = eventId();
      const res = await deliver(`${next.base}/preread`, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /export const POST = webhook\(\.\.\.\)/, {
        id,
        ran: await controls.attempts(id),
      });
    });
  });
}
