import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { demoFlags } from '../../src/cli/demo.js';
import { inboxFlags } from '../../src/cli/inbox.js';
import { inspectFlags } from '../../src/cli/inspect.js';
import { simulateFlags } from '../../src/cli/simulate-command.js';
import { cliPath } from '../support/cli.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const run = promisify(execFile);
const cli = (...args: string[]) => run(process.execPath, [cliPath, ...args], { cwd: root });

describe('onceonly --version', () => {
  it("prints the package's version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    assert.equal((await cli('--version')).stdout.trim(), version);
    assert.equal((await cli('-v')).stdout.trim(), version);
  });
});

describe('onceonly --help', () => {
  it('lists the commands and exits 0', async () => {
    const { stdout } = await cli('--help');
    for (const command of ['demo', 'simulate', 'inspect', 'inbox'])
      assert.match(stdout, new RegExp(`^  ${command} `, 'm'));
  });

  for (const [command, flags] of [
    ['demo', demoFlags],
    ['simulate', simulateFlags],
    ['inspect', inspectFlags],
    ['inbox', inboxFlags],
  ] as const) {
    it(`${command} --help shows its usage and every flag with its help, and exits 0`, async () => {
      const { stdout } = await cli(command, '--help');
      assert.match(stdout, new RegExp(`^usage: onceonly ${command} `));
      for (const [name, spec] of Object.entries(flags)) {
        assert.match(
          stdout,
          new RegExp(
            `--${name}\\b.*${(spec as { help: string }).help.slice(0, 20).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`,
          ),
        );
      }
    });
  }

  it('refuses an unknown command in one line with exit code 2', async () => {
    await assert.rejects(cli('frobnicate'), (error: { code?: number; stderr?: string }) => {
      assert.equal(error.code, 2);
      assert.equal(error.stderr?.trim(), 'onceonly: unknown command "frobnicate"; try onceonly --help');
      return true;
    });
  });
});
