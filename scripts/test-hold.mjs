// Preloaded into every test file's process by scripts/test.mjs (`--import ./scripts/test-hold.mjs`).
//
// node:test starts a file's first suites while the file is still being evaluated, and with
// `--test-force-exit` the process exits as soon as the suites registered so far are done: a suite
// declared after a top-level `await` (a server probe, say) that outlasts them never ran, silently
// (test/health.test.ts ran 1 test of 18). This holds the first test until the file has been
// evaluated to its end: a load hook appends one statement to the entry file that releases a root
// `before` hook, so every suite is declared before any runs.
import { register } from 'node:module';
import { resolve } from 'node:path';
import { before } from 'node:test';
import { pathToFileURL } from 'node:url';

const RELEASE = Symbol.for('onceonly.test.evaluated');
const entry = pathToFileURL(resolve(process.argv[1] ?? '')).href;
const evaluated = new Promise((done) => {
  globalThis[RELEASE] = done;
});
register('./test-hold-hook.mjs', import.meta.url, { data: { entry, release: RELEASE.description } });
before(() => evaluated);

// The CPU the file's process and the children it waited for used (user + system, /proc's clock
// ticks), handed to the runner (TEST_CPU_FILE): the suite is CPU-bound on small machines, and
// its report names the files that cost the most CPU, not only the longest.
const cpuFile = process.env.TEST_CPU_FILE;
if (cpuFile) {
  const { readFileSync, writeFileSync } = await import('node:fs');
  process.on('exit', () => {
    try {
      // Fields after the command's closing parenthesis: utime, stime, cutime, cstime are 14–17.
      const stat = readFileSync('/proc/self/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ticks = [11, 12, 13, 14].reduce((sum, i) => sum + Number(fields[i]), 0);
      writeFileSync(cpuFile, String(ticks / 100));
    } catch {}
  });
}
