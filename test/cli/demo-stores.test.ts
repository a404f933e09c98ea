/**
 * `onceonly demo` on the shared stores (Redis, PostgreSQL, MariaDB): apart from demo.test.ts, so
 * neither file comes near the runner's per-file deadline on a loaded host (together they took
 * 225-240 s of its 240 s with a core busy).
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { cliPath } from '../support/cli.js';
import { assertLedger, root, runDemo } from '../support/demo.js';
import { dropStore, storeHas } from '../support/drop-store.js';
import { sharedStores } from '../support/probes.js';
import { reachable } from '../support/servers.js';

const EVENTS = Number(process.env.DEMO_EVENTS ?? 120);
const demo = (args: string[]) => runDemo(args, EVENTS);

for (const [label, url, probe] of sharedStores) {
  if (await reachable(`demo on ${label}`, url, probe)) {
    describe(`onceonly demo on ${label}`, () => {
      it('proves exactly one effect per event with workers killed mid-handler', async () => {
        const { report, code } = await demo(['--store', url, '--kill-rate', '0.03']);
        try {
          assert.equal(code, 0);
          assertLedger(report);
          // --keep keeps the run's tables or keys too.
          assert.ok(await storeHas(url, report.keySpace), `${report.keySpace} was kept`);
          assert.ok(report.notes.includes(`kept the key space ${report.keySpace} on the store`));
        } finally {
          await dropStore(url, report.keySpace);
        }
      });

      it('Ctrl-C mid-run stops the workers and removes the key space all the same', async () => {
        const child = spawn(
          process.execPath,
          [cliPath, 'demo', '--store', url, '--events', '100000', '--kill-rate', '0', '--json'],
          { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk;
        });
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        try {
          // The run names its key space before writing it (other suites run demos on this server
          // side by side, so a new name on the store need not be this run's).
          const deadline = Date.now() + 60_000;
          const named = () =>
            /this run's key space on the store is (onceonly_demo_[0-9a-f]{16}) \(removed at its end, and on Ctrl-C\)/.exec(
              stderr,
            )?.[1];
          while (named() === undefined && Date.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 50));
          const name = named();
          assert.ok(name, `the run named its key space; it printed: ${stderr}`);
          // The fault first: the run is under way, with its key space on the store.
          while (!(await storeHas(url, name)) && Date.now() < deadline)
            await new Promise((resolve) => setTimeout(resolve, 200));
          assert.ok(await storeHas(url, name), 'the run wrote its key space');
          // Once the workers are up, records follow; a moment of deliveries, then Ctrl-C.
          await new Promise((resolve) => setTimeout(resolve, 1_500));
          child.kill('SIGINT');
          assert.equal(await exited, 1);
          assert.match(
            stderr,
            new RegExp(`interrupted: the workers are stopped, and the key space ${name} is removed`),
          );
          assert.equal(await storeHas(url, name), false, `${name} is gone from the store`);
        } finally {
          child.kill('SIGKILL');
        }
      });

      it("removes the run's own tables or keys at its end (without --keep)", async () => {
        const { report, code } = await runDemo(['--store', url, '--kill-rate', '0'], 30, undefined, false);
        assert.equal(code, 0);
        assert.match(report.keySpace, /^onceonly_demo_[0-9a-f]{16}$/);
        assert.equal(report.effectsApplied, 30, 'the run wrote records, one per event');
        assert.deepEqual(report.notes, []);
        const left = await storeHas(url, report.keySpace);
        if (left) await dropStore(url, report.keySpace);
        assert.equal(left, false, `${report.keySpace} is gone from the store`);
      });
    });
  }
}
