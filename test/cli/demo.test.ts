import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { reachable, servers } from '../support/servers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const EVENTS = Number(process.env.DEMO_EVENTS ?? 120);

interface Report {
  events: number;
  eventsLost: number;
  effectsAppliedTwice: number;
  effectsApplied: number;
  handlerRuns: number;
  workersKilled: number;
  deliveries: number;
  ledger: string;
}

async function demo(args: string[]): Promise<{ report: Report; code: number }> {
  const argv = [
    '--import',
    'tsx',
    join(root, 'src/cli/index.ts'),
    'demo',
    '--events',
    String(EVENTS),
    '--timeout',
    '1000',
    '--keep',
    '--json',
    ...args,
  ];
  try {
    const { stdout } = await run(process.execPath, argv, { cwd: root, timeout: 180_000 });
    return { report: JSON.parse(stdout), code: 0 };
  } catch (error) {
    const e = error as { stdout?: string; code?: number; stderr?: string };
    if (!e.stdout) throw new Error(`demo failed: ${e.stderr}`);
    return { report: JSON.parse(e.stdout), code: e.code ?? 1 };
  }
}

/** Recounts from the ledger itself: every event exactly one effect. */
function assertLedger(report: Report) {
  const ledger = new Database(report.ledger, { readonly: true });
  try {
    const rows = ledger
      .prepare('SELECT event_id AS id, COUNT(*) AS n FROM effects GROUP BY event_id')
      .all() as { id: string; n: number }[];
    assert.equal(rows.length, report.events, 'every event has an effect');
    assert.deepEqual(
      rows.filter((r) => r.n !== 1),
      [],
      'no event has two effects',
    );
    const runs = (ledger.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n;
    assert.ok(runs >= report.events);
  } finally {
    ledger.close();
    rmSync(dirname(report.ledger), { recursive: true, force: true });
  }
  assert.equal(report.eventsLost, 0);
  assert.equal(report.effectsAppliedTwice, 0);
  assert.ok(report.deliveries > report.events, 'events were delivered more than once');
}

describe('onceonly demo', () => {
  it('on a temporary SQLite file: chaos, kills and duplicates, and exactly one effect per event', async () => {
    const { report, code } = await demo([
      '--kill-rate',
      '0.03',
      '--throw-rate',
      '0.05',
      '--hang-rate',
      '0.02',
    ]);
    assert.equal(code, 0);
    assertLedger(report);
    assert.ok(report.workersKilled > 0, 'workers were killed mid-handler');
    assert.ok(report.handlerRuns > report.events, 'some handlers ran again after a failure or a crash');
  });

  it('on the memory store (one worker, no kills)', async () => {
    const { report, code } = await demo(['--store', 'memory']);
    assert.equal(code, 0);
    assertLedger(report);
  });

  it('with Standard Webhooks signatures', async () => {
    const { report, code } = await demo(['--provider', 'standard-webhooks', '--kill-rate', '0']);
    assert.equal(code, 0);
    assertLedger(report);
  });

  it('refuses a bad flag with one clear line and exit code 2', async () => {
    await assert.rejects(
      run(process.execPath, ['--import', 'tsx', join(root, 'src/cli/index.ts'), 'demo', '--events', 'lots'], {
        cwd: root,
      }),
      (error: { code?: number; stderr?: string }) => {
        assert.equal(error.code, 2);
        assert.equal(error.stderr?.trim(), 'onceonly: --events must be a non-negative number, got "lots"');
        return true;
      },
    );
  });
});

const shared: [string, string, () => Promise<unknown>][] = [
  ['Redis', servers.redis, async () => (await createClient({ url: servers.redis }).connect()).quit()],
  [
    'PostgreSQL',
    servers.postgres,
    async () => {
      const c = new pg.Client({ connectionString: servers.postgres });
      await c.connect();
      await c.end();
    },
  ],
  ['MariaDB/MySQL', servers.mysql, async () => (await mysql.createConnection(servers.mysql)).end()],
];
for (const [label, url, probe] of shared) {
  if (await reachable(`demo on ${label}`, url, probe)) {
    describe(`onceonly demo on ${label}`, () => {
      it('proves exactly one effect per event with workers killed mid-handler', async () => {
        const { report, code } = await demo(['--store', url, '--kill-rate', '0.03']);
        assert.equal(code, 0);
        assertLedger(report);
      });
    });
  }
}
