/**
 * The Prometheus example (examples/prometheus/server.ts) started as its README says, fed a simulated
 * provider's run (duplicates, concurrent copies, retries: src/cli/simulate.ts), then scraped over
 * real HTTP: `onceonly_deliveries_total` by outcome matches what the simulator was answered, request
 * for request; /ready answers 200 with the health report.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { demoSecret } from '../src/cli/sign.js';
import { simulate } from '../src/cli/simulate.js';
import { freePort } from '../src/cli/wait.js';

const folder = fileURLToPath(new URL('../examples/prometheus/', import.meta.url));

function start(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: folder,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the example did not listen within 60 s:\n${out}`)),
      60_000,
    );
    const read = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening on')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the example exited with ${code}:\n${out}`));
    });
  });
}

/** Sums of a counter's samples by one label, from the Prometheus text format. */
function byLabel(text: string, metric: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`)) continue;
    const value = new RegExp(`${label}="([^"]*)"`).exec(line)?.[1];
    if (value === undefined) continue;
    out[value] = (out[value] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

describe('the Prometheus example', () => {
  let child: ChildProcess | undefined;
  after(() => {
    child?.kill();
  });

  it("after a simulated run, /metrics counts every delivery by outcome exactly as the simulator's report", async () => {
    const port = await freePort();
    child = await start(port);
    const base = `http://127.0.0.1:${port}`;
    const report = await simulate({
      url: `${base}/webhooks`,
      provider: 'stripe',
      secret: demoSecret('stripe'),
      events: 60,
      concurrency: 8,
      duplicateRate: 0.3,
      concurrentRate: 0.3,
      requestTimeoutMs: 60_000,
      maxAttempts: 8,
      backoffMs: 50,
      maxBackoffMs: 400,
      run: randomBytes(4).toString('hex'),
    });
    // Every request got an answer: the server's count and the simulator's can be compared.
    assert.equal(report.timeouts, 0);
    assert.equal(report.dropped, 0);
    assert.deepEqual(report.gaveUp, []);
    assert.ok((report.byOutcome.duplicate ?? 0) > 0, 'the run sent duplicates');

    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    const text = await res.text();
    const counted = byLabel(text, 'onceonly_deliveries_total', 'onceonly_outcome');
    assert.deepEqual(counted, report.byOutcome);
    assert.equal(
      Object.values(counted).reduce((a, b) => a + b, 0),
      report.deliveries,
    );
    // Each event ran once: as many processed deliveries as events.
    assert.equal(counted.processed, report.events);
    assert.match(text, /onceonly_store_operation_duration_count\{[^}]*onceonly_store_operation="claim"/);
    assert.match(text, /# UNIT onceonly_delivery_duration seconds|onceonly_delivery_duration_bucket/);

    const ready = await fetch(`${base}/ready`);
    assert.equal(ready.status, 200);
    const health = (await ready.json()) as { ok: boolean; store: string };
    assert.equal(health.ok, true);
    assert.equal(health.store, 'memory');
  });
});
