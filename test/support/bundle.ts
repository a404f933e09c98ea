/**
 * A child process's entry as one JavaScript file (scripts/bundle.mjs), for the suites that start
 * processes again and again (the fault fleets, restarted after every SIGKILL; the race and chaos
 * workers): started from the bundle with plain node (`--enable-source-maps` for stack traces in the
 * TypeScript), each costs a fraction of the CPU it did through tsx. Made once per test process from
 * the sources as they are (never stale), removed when the process exits.
 */
import { createHash } from 'node:crypto';
import { rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { bundle, bundlePath } from '../../scripts/bundle.mjs';

const tag = `child-${process.pid}`;

const made = new Map<string, Promise<string>>();

/**
 * The bundle of `entry` (a .ts file's absolute path), made on first use in this process. With
 * `contents`, the entry is that TypeScript, as if it were the file `entry` (a name of its own, in
 * the folder its imports resolve from): a child that puts modules named at run time together.
 */
export function bundled(entry: string, contents?: string): Promise<string> {
  let file = made.get(entry);
  if (file === undefined) {
    if (made.size === 0)
      process.on('exit', () => {
        for (const e of made.keys()) rmSync(bundlePath(e, tag), { force: true });
      });
    file = bundle(entry, tag, contents);
    made.set(entry, file);
  }
  return file;
}

/**
 * A child's entry that calls `worker`'s export `run` with the module `module` (an absolute path: a
 * module the parent names at run time, as a race's spec or a chaos run's kit), bundled as one (so
 * the worker and the module share every module of the repository, as they did through tsx).
 */
export function bundledRun(worker: string, run: string, module: string): Promise<string> {
  const id = createHash('sha256').update(`${worker}\n${run}\n${module}`).digest('hex').slice(0, 8);
  return bundled(
    join(dirname(worker), `${basename(worker, '.ts')}-${id}.ts`),
    `import * as module from ${JSON.stringify(module)};
import { ${run} } from ${JSON.stringify(worker)};
await ${run}(module);
`,
  );
}
