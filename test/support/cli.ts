/**
 * The CLI as a user runs it: the built `dist/cli/index.js` (the package's `bin`), started with plain
 * node. `npm test` builds first when dist/ is older than src/ (`npm test -- test/cli` too); a
 * stale build is refused here, so a test never runs an old CLI. Through tsx every start cost about 1.5 s of
 * CPU (the demo's workers, restarted after each kill, paid it again); the built file starts in 0.2 s.
 */
import { execFile, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const run = promisify(execFile);
export const cliPath = join(root, 'dist/cli/index.js');

const check = spawnSync(process.execPath, [join(root, 'scripts/build-if-stale.mjs'), '--check'], {
  cwd: root,
});
if (check.status !== 0) {
  throw new Error(
    'dist/ is older than src/: run the CLI tests with `npm test -- test/cli` (it builds first)',
  );
}

/** Node's argv for `onceonly ...args`, with `imports` (`--import` modules) loaded first. */
export function cliArgv(args: readonly string[], imports: readonly string[] = []): string[] {
  return [...imports.flatMap((module) => ['--import', module]), cliPath, ...args];
}

/** Runs `onceonly ...args` to its end: exit code and output, never rejecting on a non-zero exit. */
export async function runCli(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; timeout?: number; imports?: readonly string[] } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, cliArgv(args, options.imports), {
      cwd: root,
      timeout: options.timeout ?? 60_000,
      env: options.env ?? process.env,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number | string; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
