/**
 * Clock skew: a process whose clock is an hour fast or slow (Date patched by a preload, the
 * machine's clock untouched) claims and extends a lease on each shared store, finds a live lease in
 * flight and takes over a lapsed one, then dies. Only the
 * store's time counts: the lease ends `lease` after the claim on the store's clock, a clean process
 * sees it in flight until then and takes it over right after, never an hour early or late.
 */
import { strict as assert } from 'node:assert';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { createClient } from 'redis';
import { openStore } from '../../src/cli/stores.js';
import { dropStore } from '../support/drop-store.js';
import { reachable, servers } from '../support/servers.js';

const run = promisify(execFile);
const child = fileURLToPath(new URL('./support/skew-child.ts', import.meta.url));
const preload = fileURLToPath(new URL('./support/skew.mjs', import.meta.url));
const HOUR = 3_600_000;
const LEASE_MS = 2_500;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const dir = mkdtempSync(join(tmpdir(), 'onceonly-skew-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const stores: { label: string; url: string; probe: () => Promise<unknown> }[] = [
  {
    label: 'Redis',
    url: servers.redis,
    probe: async () => {
      const c = await createClient({ url: servers.redis }).connect();
      await c.ping();
      await c.quit();
    },
  },
  {
    label: 'PostgreSQL',
    url: servers.postgres,
    probe: async () => {
      const c = new pg.Client({ connectionString: servers.postgres });
      await c.connect();
      await c.end();
    },
  },
  {
    label: 'MySQL',
    url: servers.mysql,
    probe: async () => {
      const c = await mysql.createConnection(servers.mysql);
      await c.end();
    },
  },
  { label: 'SQLite', url: join(dir, 'skew.db'), probe: async () => {} },
];

for (const { label, url, probe } of stores) {
  if (!(await reachable(`${label} (clock skew)`, url, probe))) continue;
  describe(`clock skew on the ${label} store`, { concurrency: true }, () => {
    for (const skew of [HOUR, -HOUR]) {
      it(`a process ${skew > 0 ? 'an hour fast' : 'an hour slow'} cannot make a lease live longer or shorter`, async () => {
        // Arrange
        const name = `onceonly_skew_${randomBytes(4).toString('hex')}`;
        const key = `skew:${name}`;
        const opened = await openStore(url, name);
        const liveKey = `${key}:live`;
        const lapsedKey = `${key}:lapsed`;
        try {
          // A clean process holds one key for a minute and let another's lease run out.
          await opened.store.claim(liveKey, { leaseMs: 60_000 });
          await opened.store.claim(lapsedKey, { leaseMs: 200 });
          await sleep(500);
          // Act: the skewed process claims, extends and dies.
          const { stdout } = await run(process.execPath, ['--import', 'tsx', '--import', preload, child], {
            env: {
              ...process.env,
              ONCEONLY_SKEW_MS: String(skew),
              ONCEONLY_SKEW_CHILD: JSON.stringify({ url, name, key, leaseMs: LEASE_MS, liveKey, lapsedKey }),
            },
            timeout: 60_000,
          });
          const seen = JSON.parse(stdout.trim().split('\n').pop()!) as {
            localNow: number;
            extended: boolean;
            claimedUntil: number;
            viewUntil: number;
            between: number;
            live: string;
            lapsed: string;
          };
          const now = Date.now();

          // Assert: the skew was real, and the lease is measured on the store's clock.
          assert.ok(Math.abs(seen.localNow - now - skew) < 60_000, 'the child clock was shifted');
          assert.equal(seen.extended, true);
          const view = await opened.store.inspect(key);
          assert.equal(view?.state, 'processing');
          const left = view!.expiresAt.getTime() - now;
          assert.ok(left > 0 && left <= LEASE_MS + 1_000, `lease ends ${left} ms from now, not an hour off`);
          assert.ok(
            Math.abs(seen.viewUntil - view!.expiresAt.getTime()) < 50,
            'both processes read one expiry',
          );
          // The skewed process's own lease handle is on the store's clock too (the extend came a
          // moment after the claim, so its end is a little later, never an hour off).
          // The skewed process decides nothing by its own clock: the live lease is in flight for it,
          // and the lapsed one is taken over with the next attempt.
          assert.equal(seen.live, 'in-flight', 'a live lease is in flight for a skewed process too');
          assert.equal(seen.lapsed, 'acquired 2', 'a lapsed lease is taken over by a skewed process too');
          const drift = seen.viewUntil - seen.claimedUntil;
          // The SQL stores answer the claim's end from the server's own clock: the drift is how far
          // the store's clock ran from the claim to the extend, at most `between` (the child's
          // claim-to-extend time). Redis gives a free key's end from its TIME reading carried on the
          // monotonic clock, earlier by the SET's trip out plus the TIME reply's trip back (which
          // includes any event-loop stall before the reply is read: a first claim's is long on a
          // loaded host); both lie within `between`, hence twice it. 5 ms more for stores that keep
          // milliseconds rounded.
          const trips = label === 'Redis' ? 2 : 1;
          assert.ok(
            drift >= 0 && drift <= trips * seen.between + 5,
            `the claim's expiresAt is ${drift} ms off the store's (claim to extend took ${Math.round(seen.between)} ms)`,
          );
          const during = await opened.store.claim(key, { leaseMs: LEASE_MS });
          assert.equal(during.status, 'in-flight', 'the lease is live for a clean process');

          await sleep(left + 300);
          const afterward = await opened.store.claim(key, { leaseMs: LEASE_MS });
          assert.equal(afterward.status, 'acquired', 'taken over right after the store-clock expiry');
          assert.equal(afterward.status === 'acquired' && afterward.lease.attempt, 2);
          console.log(
            `[fault figures] ${label} skew ${skew / HOUR} h: lease ended ${left} ms after the claim was seen (lease ${LEASE_MS} ms), takeover at +${left + 300} ms; the claim's end ${drift} ms before the extend's (${Math.round(seen.between)} ms apart)`,
          );
        } finally {
          await opened.close();
          await dropStore(url, name);
        }
      });
    }
  });
}
