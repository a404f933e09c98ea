// The console's pages with 100,000 entries in the inbox, on PostgreSQL and Redis: the time of one
// page (the handler's fetch, store round trips included, no browser), median and p95 of 30 loads
// each after 3 unmeasured ones. 100,000 pending entries of 2 KiB, 1,000 of them then dead. Target
// (issue 31): a list page within 200 ms.
//
//   npm run bench -- console        (BENCH_SMALL=1: 10,000 entries)
import { randomBytes } from 'node:crypto';
import { openStore } from '../src/cli/stores.js';
import { createConsole } from '../src/console/index.js';
import { servers } from '../test/support/servers.js';
import { inboxInput } from './support/inbox-input.js';

const small = process.env.BENCH_SMALL === '1';
const entries = small ? 10_000 : 100_000;
const dead = 1_000;
const loads = 30;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

async function bench(label: string, url: string): Promise<void> {
  const name = `oo_bench_console_${randomBytes(4).toString('hex')}`;
  const receiver = 'stripe';
  const opened = await openStore(url, name);
  const inbox = opened.store.inbox!;
  try {
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = next++; i < entries; i = next++)
          await inbox.accept(inboxInput(`${receiver}:evt_${i}`, receiver));
      }),
    );
    for (let left = dead; left > 0; ) {
      const jobs = await inbox.take({ limit: Math.min(left, 500), leaseMs: 60_000, receiver });
      await Promise.all(jobs.map((j) => inbox.bury(j.lease, { error: 'downstream 500' })));
      left -= jobs.length;
    }
    console.log(
      `${label}: ${entries.toLocaleString('en-US')} entries (${dead} dead) written in ${((performance.now() - started) / 1000).toFixed(1)} s`,
    );
    // The cursor a next link carries at that depth: the entry before the page's first.
    const [{ cursor: deep } = { cursor: undefined }] = await inbox.list({
      state: 'pending',
      receiver,
      offset: entries / 2 - 1,
      limit: 1,
    });
    const app = createConsole({
      store: opened.store,
      receivers: [receiver],
      authorize: () => 'bench',
      now: opened.now,
    });
    const pages: [string, string][] = [
      ['overview (counts by state, per receiver)', '/'],
      ['entries, all states, first page', '/entries'],
      ['entries, dead, first page', '/entries?state=dead'],
      ['entries, pending, first page', `/entries?state=pending&receiver=${receiver}`],
      [
        `entries, pending, page at offset ${(entries / 2).toLocaleString('en-US')}`,
        `/entries?state=pending&receiver=${receiver}&offset=${entries / 2}`,
      ],
      [
        `entries, pending, the page after entry ${(entries / 2).toLocaleString('en-US')} (its cursor, the next link)`,
        `/entries?state=pending&receiver=${receiver}&after=${encodeURIComponent(deep!)}`,
      ],
      ['search by event id', `/entries?q=evt_${entries - 7}`],
      ['one entry (2 KiB payload)', `/entry?key=${receiver}:evt_${entries - 7}`],
    ];
    for (const [what, path] of pages) {
      const times: number[] = [];
      for (let i = 0; i < loads + 3; i++) {
        const t = performance.now();
        const res = await app.fetch(new Request(`http://bench.local${path}`));
        await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        if (i >= 3) times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      console.log(
        `  ${what.padEnd(72)} median ${quantile(times, 0.5).toFixed(1).padStart(6)} ms   p95 ${quantile(times, 0.95).toFixed(1).padStart(6)} ms`,
      );
    }
  } finally {
    await opened.drop().catch(() => {});
    await opened.close();
  }
}

const only = process.env.BENCH_ONLY; // postgres or redis: one store
if (only === undefined || only === 'postgres') await bench('PostgreSQL', servers.postgres);
if (only === undefined || only === 'redis') await bench('Redis', servers.redis);
