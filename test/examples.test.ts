/**
 * Every example app starts with one command from its folder (as the README says), prints a signed
 * `curl`, and answers it processed, then duplicate (the Lambda example serves its handler as a
 * Function URL would). The Next.js example is the Next adapter's own
 * test app's twin and starts with `next dev`; it is covered by test/adapters/next.test.ts.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/cli/wait.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Starts an example and resolves with the curl line it printed. */
function start(folder: string, port: number): Promise<{ child: ChildProcess; curl: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: `${root}examples/${folder}`,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${folder} printed no curl within 60 s:\n${out}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n').find((l) => l.trim().startsWith('curl '));
      if (line) {
        clearTimeout(timer);
        resolve({ child, curl: line.trim() });
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', (code) => reject(new Error(`${folder} exited with ${code}:\n${out}`)));
  });
}

/** A free port can be taken again before the app listens (an outgoing connection's, say): retry. */
async function startOnFreePort(folder: string): Promise<{ child: ChildProcess; curl: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start(folder, await freePort());
    } catch (error) {
      if (attempt >= 4 || !/EADDRINUSE/.test(String((error as Error).message))) throw error;
    }
  }
}

/** Sends what a `curl -si URL -H '...' -d '...'` line describes. */
async function send(curl: string): Promise<Response> {
  const url = /curl -si (\S+)/.exec(curl)![1]!;
  const headers: Record<string, string> = {};
  for (const [, h] of curl.matchAll(/-H '([^']*)'/g)) {
    const at = h!.indexOf(':');
    headers[h!.slice(0, at).trim()] = h!.slice(at + 1).trim();
  }
  const body = /-d '([^']*)'/.exec(curl)![1]!;
  return fetch(url, { method: 'POST', headers, body });
}

describe('examples', { concurrency: 2 }, () => {
  for (const folder of ['express', 'fastify', 'hono', 'koa', 'lambda', 'nestjs', 'node']) {
    it(`${folder}: one command starts it, and its printed curl is processed once, then a duplicate`, async () => {
      const { child, curl } = await startOnFreePort(folder);
      try {
        const first = await send(curl);
        assert.equal(first.status, 200);
        assert.equal(first.headers.get('onceonly-outcome'), 'processed');
        const again = await send(curl);
        assert.equal(again.status, 200);
        assert.equal(again.headers.get('onceonly-outcome'), 'duplicate');
      } finally {
        child.kill();
      }
    });
  }
});
