// SQLite store: claim + confirm per event against a raw `INSERT OR IGNORE` followed by an `UPDATE` on
// the same better-sqlite3 connection (temp file, WAL, better-sqlite3's default synchronous), measured in
// rounds of rotating order in one run.
//
//   npx tsx bench/sqlite.bench.ts              (BENCH_SMALL=1 for a quick run)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { sqliteStore } from '../src/stores/sqlite.js';
import { median } from './support/stats.js';

const small = process.env.BENCH_SMALL === '1';
const events = small ? 1_000 : 5_000;
const rounds = small ? 3 : 9;

const dir = mkdtempSync(join(tmpdir(), 'onceonly-sqlite-bench-'));
const db = new Database(join(dir, 'bench.db'));
const NOW = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

async function measure(count: number, work: (i: number) => Promise<void> | void): Promise<number> {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await work(i);
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

type Contender = { name: string; event(prefix: string, i: number): Promise<void> | void };

async function main(): Promise<void> {
  const store = sqliteStore({ client: db });
  await store.ready();
  db.exec(`CREATE TABLE raw (key TEXT NOT NULL PRIMARY KEY, state INTEGER NOT NULL, token TEXT NOT NULL,
    attempt INTEGER NOT NULL, fingerprint TEXT, expires_at INTEGER NOT NULL, updated_at INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX raw_expires ON raw (expires_at);`);
  const insert = db.prepare(`INSERT OR IGNORE INTO raw VALUES (?, 0, ?, 1, ?, ${NOW} + 120000, ${NOW})`);
  const update = db.prepare(
    `UPDATE raw SET state = 1, expires_at = ${NOW} + 259200000, updated_at = ${NOW} WHERE key = ? AND token = ?`,
  );
  const fingerprint = 'a'.repeat(64);
  const contenders: Contender[] = [
    {
      name: 'raw INSERT OR IGNORE + UPDATE',
      event(prefix, i) {
        const token = randomBytes(16).toString('hex');
        insert.run(`${prefix}:${i}`, token, fingerprint);
        update.run(`${prefix}:${i}`, token);
      },
    },
    {
      name: 'sqliteStore claim + confirm',
      async event(prefix, i) {
        const claim = await store.claim(`${prefix}:${i}`, { leaseMs: 120_000, fingerprint });
        if (claim.status !== 'acquired') throw new Error(`unexpected ${claim.status}`);
        await store.confirm(claim.lease, { retentionMs: 3 * 86_400_000 });
      },
    },
    {
      name: 'sqliteStore record',
      async event(prefix, i) {
        if ((await store.record(`${prefix}:${i}`, { retentionMs: 3 * 86_400_000, fingerprint })).duplicate)
          throw new Error('unexpected duplicate');
      },
    },
  ];
  for (const c of contenders) await measure(300, (i) => c.event(`warm:${c.name}`, i));
  const results = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  for (let r = 0; r < rounds; r++) {
    const shift = r % contenders.length;
    for (const c of [...contenders.slice(shift), ...contenders.slice(0, shift)]) {
      results.get(c.name)!.push(await measure(events, (i) => c.event(`r${r}:${c.name}`, i)));
    }
  }
  const raw = median(results.get(contenders[0]!.name)!);
  const version = db.prepare('SELECT sqlite_version()').pluck().get();
  console.log(
    `\nSQLite ${version} (better-sqlite3), journal_mode ${db.pragma('journal_mode', { simple: true })}, synchronous ${['OFF', 'NORMAL', 'FULL', 'EXTRA'][db.pragma('synchronous', { simple: true }) as number]}, ${events} events x ${rounds} rounds, one connection\n`,
  );
  console.log('| contender | events/s (median) | vs raw |');
  console.log('| --- | ---: | ---: |');
  for (const c of contenders) {
    const m = median(results.get(c.name)!);
    console.log(`| ${c.name} | ${Math.round(m)} | ${(m / raw).toFixed(2)}x |`);
  }
}

try {
  await main();
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
