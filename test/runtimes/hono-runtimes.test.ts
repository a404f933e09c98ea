/**
 * Hono through the web-standard core on Bun, Deno and Cloudflare Workers (installed from npm as devDependencies): the
 * runtime's own server hands `app.fetch` the request, and the deliveries come over real HTTP, signed
 * as Stripe signs them. The Worker is bundled with esbuild and served by workerd (from npm) with
 * the `nodejs_compat` flag, as `wrangler dev` would.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { freePort } from '../../src/cli/wait.js';
import { stripeSignature } from '../support/stripe-signature.js';
import { requireRuntimes } from './workspace.js';

requireRuntimes();
const root = fileURLToPath(new URL('../..', import.meta.url));
const APP = fileURLToPath(new URL('./fixtures/hono-runtime/app.mjs', import.meta.url));
const WORKER = fileURLToPath(new URL('./fixtures/hono-worker/worker.mjs', import.meta.url));
const SECRET = 'whsec_honoRuntimeSuite0123456789abcdef';

function signedEvent(id: string, extra: Record<string, unknown> = {}) {
  const body = JSON.stringify({ id, object: 'event', type: 'invoice.paid', data: { object: {} }, ...extra });
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'stripe-signature': stripeSignature(body, SECRET),
    },
  };
}

/** POSTs a body with or without Content-Length and resolves with the answer, even if the server closed early. */
function sendBig(
  url: string,
  d: { body: string; headers: Record<string, string> },
  declared: boolean,
): Promise<{ status: number; outcome: string | undefined }> {
  const bytes = Buffer.from(d.body);
  const headers: Record<string, string | number> = { ...d.headers };
  if (declared) headers['content-length'] = bytes.length;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers }, (res) => {
      res.resume();
      resolve({
        status: res.statusCode ?? 0,
        outcome: res.headers['onceonly-outcome'] as string | undefined,
      });
    });
    req.on('error', (error) => {
      // A reset after the answer arrived is the server refusing early; before it, a failure.
      setTimeout(() => reject(error), 1_000);
    });
    for (let at = 0; at < bytes.length; at += 4096) req.write(bytes.subarray(at, at + 4096));
    req.end();
  });
}

/** A Worker bundled as wrangler would (esbuild, nodejs_compat), and a workerd config serving it. */
const made: string[] = [];
after(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

async function workerdFiles(port: number): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'onceonly-workerd-'));
  made.push(dir);
  await build({
    entryPoints: [WORKER],
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['module', 'main'],
    external: ['node:*'],
    outfile: join(dir, 'worker.mjs'),
    logLevel: 'error',
  });
  writeFileSync(
    join(dir, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .worker) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ]
);
const worker :Workerd.Worker = (
  modules = [ (name = "worker.mjs", esModule = embed "worker.mjs") ],
  compatibilityDate = "2025-09-01",
  compatibilityFlags = ["nodejs_compat"],
  bindings = [ (name = "STRIPE_SECRET", text = "${SECRET}") ],
);
`,
  );
  return dir;
}

const bin = (name: string) => `${root}test/runtimes/node_modules/.bin/${name}`;
const runtimes: [name: string, banner: RegExp, command: (port: number) => Promise<string[]>][] = [
  ['Bun', /^bun \d/, async () => [bin('bun'), 'run', APP]],
  ['Deno', /^deno \d/, async () => [bin('deno'), 'run', '--allow-net', '--allow-env', '--allow-read', APP]],
  [
    'Cloudflare Workers (workerd, nodejs_compat)',
    /^workerd Cloudflare-Workers/,
    async (port) => [bin('workerd'), 'serve', join(await workerdFiles(port), 'config.capnp')],
  ],
];

for (const [name, banner, command] of runtimes) {
  describe(`Hono on ${name}: the web-standard core`, () => {
    let child: ChildProcess;
    let url: string;
    let runtime = '';
    before(async () => {
      // A free port can be taken again before the runtime listens: try another one.
      for (let attempt = 1; ; attempt++) {
        try {
          await launch(await freePort());
          return;
        } catch (error) {
          child?.kill();
          if (attempt >= 4 || !/EADDRINUSE|[Aa]ddress already in use/.test(String((error as Error).message)))
            throw error;
        }
      }
    });
    async function launch(port: number): Promise<void> {
      url = `http://127.0.0.1:${port}/webhooks`;
      const [exe, ...args] = await command(port);
      child = spawn(exe!, args, {
        cwd: root,
        env: {
          ...process.env,
          PORT: String(port),
          STRIPE_SECRET: SECRET,
          NO_COLOR: '1',
          DENO_NO_UPDATE_CHECK: '1',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout!.on('data', (chunk) => (output += chunk));
      child.stderr!.on('data', (chunk) => (output += chunk));
      const deadline = Date.now() + 60_000;
      for (;;) {
        if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output}`);
        try {
          const res = await fetch(`http://127.0.0.1:${port}/runtime`);
          if (res.ok) {
            runtime = await res.text();
            break;
          }
        } catch {}
        if (Date.now() > deadline) throw new Error(`${name} did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    after(() => {
      child?.kill();
    });

    it('runs on the runtime itself, not on Node', () => {
      assert.match(runtime, banner);
    });

    it('processes a Stripe-signed event once, then answers its retry as a duplicate', async () => {
      const id = `evt_${Date.now()}_once`;
      const first = await fetch(url, { method: 'POST', ...signedEvent(id) });
      assert.equal(first.status, 200);
      assert.equal(first.headers.get('onceonly-outcome'), 'processed');
      const retry = await fetch(url, { method: 'POST', ...signedEvent(id) });
      assert.equal(retry.headers.get('onceonly-outcome'), 'duplicate');
    });

    it('answers 500 when the handler throws, releasing the claim, and the retry is processed', async () => {
      const id = `evt_${Date.now()}_throw`;
      const first = await fetch(url, { method: 'POST', ...signedEvent(id) });
      assert.equal(first.status, 500);
      assert.equal(first.headers.get('onceonly-outcome'), 'failed');
      const retry = await fetch(url, { method: 'POST', ...signedEvent(id) });
      assert.equal(retry.headers.get('onceonly-outcome'), 'processed');
    });

    it('rejects a tampered body with 401 invalid_signature, echoing no signature', async () => {
      const d = signedEvent(`evt_${Date.now()}_tampered`);
      const res = await fetch(url, {
        method: 'POST',
        headers: d.headers,
        body: d.body.replace('invoice', 'invoicf'),
      });
      assert.equal(res.status, 401);
      const text = await res.text();
      assert.equal(JSON.parse(text).code, 'invalid_signature');
      assert.doesNotMatch(text, /v1=|whsec_/);
    });

    it('refuses an oversized body with 413, with and without Content-Length', async () => {
      // node:http rather than fetch: the server may answer and close before the client sent it all.
      const d = signedEvent(`evt_${Date.now()}_big`, { padding: 'x'.repeat(64 * 1024) });
      for (const declared of [true, false]) {
        const res = await sendBig(url, d, declared);
        assert.equal(res.status, 413, `declared: ${declared}`);
        assert.equal(res.outcome, 'too-large');
      }
    });
  });
}
