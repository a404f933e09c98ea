/** `onceonly inspect`: one key's state, counts by state, the oldest leases (stuck work), and purge. */

import { inertJson, oneLine } from '../core/text.js';
import type { RecordView, Store } from '../core/types.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { table } from './report.js';
import { openStore } from './stores.js';

export const inspectFlags = {
  store: { type: 'string', help: 'redis://..., postgres://..., mysql://... or a SQLite file path' },
  name: {
    type: 'string',
    default: 'onceonly',
    help: "the store's table (SQL) or key prefix (Redis), as configured: with or without its trailing colon",
  },
  key: {
    type: 'string',
    help: 'the key to show (the same as giving it after the flags; needed for a key named "purge")',
  },
  id: {
    type: 'string',
    help: "look a key up by the provider's delivery or event id (evt_..., msg_...): tries <provider>:<id>",
  },
  limit: { type: 'number', default: 10, help: 'how many of the oldest leases to list' },
  json: { type: 'boolean', help: 'print JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

const SUMMARY = `Shows one key (onceonly inspect --store <url> <key>, or --id <delivery id>), or counts by state and the oldest leases
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
  if (flags._.length + (flags.key === undefined ? 0 : 1) + (flags.id === undefined ? 0 : 1) > 1)
    throw new UsageError('give at most one key or --id (quote keys with spaces)');
  // The prefix as configured in redisStore({ prefix: 'app:' }) or as a name: one trailing colon is the separator.
  const name = flags.name.replace(/:$/, '');
  if (name === '') throw new UsageError('--name is empty');
  const opened = await openStore(flags.store, name, { existing: true });
  try {
    const arg = flags.key ?? flags._[0];
    if (flags.id !== undefined) {
      const found = await byDeliveryId(opened.store, flags.id);
      if (!found) {
        print(
          flags.json,
          { id: flags.id, state: 'absent', tried: candidates(flags.id) },
          () =>
            `${flags.id}: no key for this id (tried ${candidates(flags.id!).join(', ')}); a provider keyed on the body digest (GitHub) needs the key itself`,
        );
        return 1;
      }
      printView(flags.json, found, await opened.now());
      return 0;
    }
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
          () => `${arg}: absent (never seen, or forgotten past its retention)`,
        );
        return 0;
      }
      printView(flags.json, view, now);
      return 0;
    }
    const admin = opened.admin;
    if (!admin) throw new UsageError(`the ${opened.kind} store offers no overview; give a key`);
    const [stats, oldest] = await Promise.all([admin.stats(), admin.oldestLeases(flags.limit)]);
    if (stats.processing + stats.takeable + stats.completed === 0 && opened.kind === 'redis') {
      // A Redis prefix is not declared anywhere: nothing under it is most likely a wrong --name.
      throw new Error(
        `no onceonly keys under the prefix "${name}:" in this Redis; check --name (the prefix your redisStore was given, default onceonly)`,
      );
    }
    const leases = oldest.map((v) => describe(v, now));
    print(flags.json, { stats, oldestLeases: leases }, () => {
      const lines = [
        table(
          `onceonly store ${opened.kind} (${name})${stats.partial ? ', counted over the first 100,000 keys only' : ''}`,
          [
            ['processing (live leases)', stats.processing],
            ['takeable (released: handler failed; lease ran out: crash?)', stats.takeable],
            ['completed (within retention)', stats.completed],
          ],
        ),
      ];
      if (leases.length > 0) {
        lines.push('', `oldest leases (${leases.length}):`);
        for (const l of leases)
          lines.push(`  ${oneLine(l.key)}  attempt ${l.attempt}  ${l.lease}  ${l.expires}`);
      }
      return lines.join('\n');
    });
    return 0;
  } finally {
    await opened.close();
  }
}

function printView(json: boolean, view: RecordView, now: number): void {
  const described = describe(view, now);
  print(json, described, () =>
    table(
      `key ${oneLine(view.key)}`,
      // The table shows durations as people read them; --json keeps renewedAgoMs for scripts.
      Object.entries(described).filter(([k]) => k !== 'key' && k !== 'renewedAgoMs') as [
        string,
        string | number,
      ][],
    ),
  );
}

/** The keys a provider's delivery id may be stored under: `<provider>:<id>` for each built-in name. */
const PROVIDER_SPACES = [
  'stripe',
  'standard-webhooks',
  'github',
  'shopify',
  'slack',
  'twilio',
  'paddle',
  'linear',
  'discord',
  'intercom',
  'lemonsqueezy',
  'mailgun',
  'sendgrid',
  'square',
  'zoom',
  'clerk',
  'resend',
];

function candidates(id: string): string[] {
  return [id, ...PROVIDER_SPACES.map((space) => `${space}:${id}`)];
}

async function byDeliveryId(store: Store, id: string): Promise<RecordView | undefined> {
  for (const key of candidates(id)) {
    const view = await store.inspect(key);
    if (view) return view;
  }
  return undefined;
}

const WRITTEN = { processing: 'lease renewed', released: 'released', completed: 'completed' } as const;

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
        : `${WRITTEN[view.state]} ${ago(now - view.updatedAt.getTime())} ago`,
    renewedAgoMs: view.updatedAt === undefined ? null : Math.max(0, now - view.updatedAt.getTime()),
    // A released record has no owner: its lease ended at the release, and the retry raises the attempt.
    expires:
      view.state === 'released'
        ? `takeable now: the next claim gets attempt ${view.attempt + 1}`
        : expiresIn > 0
          ? `expires in ${ago(expiresIn)}`
          : `expired ${ago(-expiresIn)} ago`,
    expiresAt: view.expiresAt.toISOString(),
    fingerprint: oneLine(view.fingerprint ?? '-'),
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
  console.log(json ? inertJson(value, 2) : text());
}
