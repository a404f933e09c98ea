/** `onceonly inspect`: one key's state, counts by state, the oldest leases (stuck work), and purge. */
import type { RecordView } from '../lease/types.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { table } from './report.js';
import { openStore } from './stores.js';

export const inspectFlags = {
  store: { type: 'string', help: 'redis://..., postgres://..., mysql://... or a SQLite file path' },
  name: {
    type: 'string',
    default: 'onceonly',
    help: "the store's table (SQL) or key prefix without the colon (Redis)",
  },
  key: {
    type: 'string',
    help: 'the key to show (the same as giving it after the flags; needed for a key named "purge")',
  },
  limit: { type: 'number', default: 10, help: 'how many of the oldest leases to list' },
  json: { type: 'boolean', help: 'print JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

const SUMMARY = `Shows one key (onceonly inspect --store <url> <key>), or counts by state and the oldest leases
(stuck work) when no key is given. "onceonly inspect --store <url> purge" deletes rows past retention.
It never creates a table or a file: a wrong --name or path is an error.`;

export async function inspect(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, inspectFlags);
  if (flags.help) {
    console.log(usage('inspect --store <url> [key | purge]', SUMMARY, inspectFlags));
    return 0;
  }
  if (!flags.store) throw new UsageError('--store is required, e.g. --store postgres://localhost/app');
  if (flags.store === 'memory')
    throw new UsageError(
      'a memory store lives inside its own process: there is nothing to inspect from outside',
    );
  if (flags._.length > 1 || (flags._.length === 1 && flags.key !== undefined))
    throw new UsageError('give at most one key (quote keys with spaces)');
  const opened = await openStore(flags.store, flags.name, { existing: true });
  try {
    const arg = flags.key ?? flags._[0];
    if (flags.key === undefined && arg === 'purge') {
      if (!opened.purge) {
        print(
          flags.json,
          { purged: 0, note: 'Redis keys expire by themselves: nothing to purge' },
          () => 'Redis keys expire by themselves: nothing to purge.',
        );
        return 0;
      }
      const purged = await opened.purge();
      print(flags.json, { purged }, () => `purged ${purged} expired rows`);
      return 0;
    }
    // Live, expired and "renewed ago" on the store's clock, as the store itself decides them.
    const now = await opened.now();
    if (arg !== undefined) {
      const view = await opened.store.inspect(arg);
      if (!view) {
        print(
          flags.json,
          { key: arg, state: 'absent' },
          () => `${arg}: absent (never seen, released, or past retention)`,
        );
        return 0;
      }
      print(flags.json, describe(view, now), () =>
        table(
          `key ${view.key}`,
          Object.entries(describe(view, now)).filter(([k]) => k !== 'key') as [string, string | number][],
        ),
      );
      return 0;
    }
    const admin = opened.admin;
    if (!admin) throw new UsageError(`the ${opened.kind} store offers no overview; give a key`);
    const [stats, oldest] = await Promise.all([admin.stats(), admin.oldestLeases(flags.limit)]);
    const leases = oldest.map((v) => describe(v, now));
    print(flags.json, { stats, oldestLeases: leases }, () => {
      const lines = [
        table(
          `onceonly store ${opened.kind} (${flags.name})${stats.partial ? ', counted over the first 100,000 keys only' : ''}`,
          [
            ['processing (live leases)', stats.processing],
            ['takeable (lease ran out, crash?)', stats.takeable],
            ['completed (within retention)', stats.completed],
          ],
        ),
      ];
      if (leases.length > 0) {
        lines.push('', `oldest leases (${leases.length}):`);
        for (const l of leases) lines.push(`  ${l.key}  attempt ${l.attempt}  ${l.lease}  ${l.expires}`);
      }
      return lines.join('\n');
    });
    return 0;
  } finally {
    await opened.close();
  }
}

function describe(view: RecordView, now: number) {
  const expiresIn = view.expiresAt.getTime() - now;
  return {
    key: view.key,
    state: view.state === 'processing' && expiresIn <= 0 ? 'takeable' : view.state,
    attempt: view.attempt,
    // A live owner renews its lease every third of its length: a lease renewed long ago lost its owner.
    lease:
      view.updatedAt === undefined
        ? 'renewal time not kept by this store'
        : `${view.state === 'processing' ? 'lease renewed' : 'completed'} ${ago(now - view.updatedAt.getTime())} ago`,
    renewedAgoMs: view.updatedAt === undefined ? null : Math.max(0, now - view.updatedAt.getTime()),
    expires: expiresIn > 0 ? `expires in ${ago(expiresIn)}` : `expired ${ago(-expiresIn)} ago`,
    expiresAt: view.expiresAt.toISOString(),
    fingerprint: view.fingerprint ?? '-',
  };
}

function ago(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  if (ms < 172_800_000) return `${Math.round(ms / 3_600_000)} h`;
  return `${Math.round(ms / 86_400_000)} d`;
}

function print(json: boolean, value: unknown, text: () => string): void {
  console.log(json ? JSON.stringify(value, null, 2) : text());
}
