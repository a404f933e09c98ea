/**
 * `onceonly inbox`: counts by state and the oldest due entry's age; list and show entries (dead
 * ones first); requeue one or every dead entry; purge completed entries past retention. The same
 * as the inbox's own functions (`store.inbox.stats()`, `list()`, `get()`, `requeue()`, `purge()`)
 * for apps that build their own admin page.
 */
import type { InboxEntryView, InboxState, InboxStore } from '../core/inbox.js';
import { shownHeaderValue, shownUrl } from '../core/shown-headers.js';
import { inertJson, oneLine } from '../core/text.js';
import { type FlagSpec, parseFlags, UsageError, usage } from './args.js';
import { table } from './report.js';
import { openStore } from './stores.js';

export const inboxFlags = {
  store: { type: 'string', help: 'redis://..., postgres://..., mysql://... or a SQLite file path' },
  name: {
    type: 'string',
    default: 'onceonly',
    help: "the store's table (SQL) or key prefix without the colon (Redis)",
  },
  receiver: { type: 'string', help: "only this receiver's entries (its name: the provider's by default)" },
  state: { type: 'string', help: 'list: only entries in this state (pending, processing, completed, dead)' },
  dead: { type: 'boolean', help: 'retry: requeue every dead entry (of --receiver, if given)' },
  limit: { type: 'number', default: 20, help: 'list: how many entries' },
  offset: {
    type: 'number',
    default: 0,
    help: 'list: entries to pass over first (the next page: --offset 20)',
  },
  json: { type: 'boolean', help: 'print JSON' },
  help: { type: 'boolean', help: 'show this help' },
} satisfies FlagSpec;

const SUMMARY = `With no command: counts by state, the age of the oldest due entry, and the dead entries.
  list                 entries, dead first, then the oldest due (--state, --limit, --offset)
  show <key>           one entry, with its last error and the headers it kept
  retry <key>          requeue one dead entry, or retry a waiting one now: due now
  retry --dead         requeue every dead entry (of --receiver)
  purge                delete completed entries past their retention
It never creates a table or a file: a wrong --name or path is an error.`;

const STATES: readonly InboxState[] = ['pending', 'processing', 'completed', 'dead'];

export async function inboxCommand(argv: readonly string[]): Promise<number> {
  const flags = parseFlags(argv, inboxFlags);
  if (flags.help) {
    console.log(
      usage(
        'inbox --store <url> [list | show <key> | retry <key> | retry --dead | purge]',
        SUMMARY,
        inboxFlags,
      ),
    );
    return 0;
  }
  if (!flags.store) throw new UsageError('--store is required, e.g. --store postgres://localhost/app');
  if (flags.store === 'memory')
    throw new UsageError(
      'a memory store lives inside its own process: there is nothing to inspect from outside',
    );
  if (flags.state !== undefined && !STATES.includes(flags.state as InboxState))
    throw new UsageError(`--state must be one of ${STATES.join(', ')}`);
  const [command = 'overview', ...args] = flags._;
  const opened = await openStore(flags.store, flags.name, { existing: true });
  try {
    const inbox = opened.store.inbox;
    if (!inbox) throw new UsageError('this store has no inbox');
    const receiver = flags.receiver;
    switch (command) {
      case 'overview':
        return await overview(inbox, receiver, flags.limit, flags.json);
      case 'list': {
        const entries = await inbox.list({
          state: flags.state as InboxState | undefined,
          receiver,
          limit: flags.limit,
          offset: flags.offset,
        });
        print(flags.json, entries, () => listing(entries));
        return 0;
      }
      case 'show': {
        const key = args[0];
        if (key === undefined || args.length > 1) throw new UsageError('show needs one key');
        const entry = await inbox.get(key);
        if (!entry) {
          print(
            flags.json,
            null,
            () => `no entry ${JSON.stringify(key)} (never accepted, or completed and purged)`,
          );
          return 1;
        }
        const { delivery, ...view } = entry;
        const shown = {
          ...view,
          delivery: delivery && {
            bytes: delivery.body.byteLength,
            url: shownUrl(delivery.url),
            receivedAt: delivery.receivedAt,
            headers: delivery.headers.map(([n, v]) => [n, shownHeaderValue(n, v)]),
          },
        };
        print(flags.json, shown, () => details(shown));
        return 0;
      }
      case 'retry': {
        if (flags.dead) {
          if (args.length > 0) throw new UsageError('give a key or --dead, not both');
          const n = await inbox.requeue({ dead: true, receiver });
          print(flags.json, { requeued: n }, () => `requeued ${n} dead ${n === 1 ? 'entry' : 'entries'}`);
          return 0;
        }
        const key = args[0];
        if (key === undefined || args.length > 1) throw new UsageError('retry needs one key, or --dead');
        const n = await inbox.requeue({ key });
        if (n === 0) {
          print(
            flags.json,
            { requeued: 0 },
            () => `${JSON.stringify(key)} is neither dead nor waiting for a later attempt: nothing requeued`,
          );
          return 1;
        }
        print(flags.json, { requeued: 1 }, () => `requeued ${key}: due now`);
        return 0;
      }
      case 'purge': {
        const n = await inbox.purge();
        print(
          flags.json,
          { purged: n },
          () => `purged ${n} completed ${n === 1 ? 'entry' : 'entries'} past retention`,
        );
        return 0;
      }
      default:
        throw new UsageError(`unknown inbox command ${JSON.stringify(command)} (see --help)`);
    }
  } finally {
    await opened.close();
  }
}

async function overview(
  inbox: InboxStore,
  receiver: string | undefined,
  limit: number,
  json: boolean,
): Promise<number> {
  const stats = await inbox.stats(receiver === undefined ? {} : { receiver });
  const dead = stats.dead > 0 ? await inbox.list({ state: 'dead', receiver, limit }) : [];
  print(json, { ...stats, deadEntries: dead }, () => {
    const lines = [
      table(`inbox${receiver ? ` of ${oneLine(receiver)}` : ''}`, [
        ['pending', stats.pending],
        ...(stats.scheduled === undefined
          ? []
          : [['  of which waiting for a retry', stats.scheduled] as [string, number]]),
        ['processing', stats.processing],
        ['completed (within retention)', stats.completed],
        ['dead (kept, not retried)', stats.dead],
        ['oldest due entry waiting', human(stats.oldestDueMs)],
      ]),
    ];
    if (dead.length > 0)
      lines.push('', 'dead entries (onceonly inbox retry <key>, or retry --dead):', listing(dead));
    return lines.join('\n');
  });
  return 0;
}

function listing(entries: readonly InboxEntryView[]): string {
  if (entries.length === 0) return '(none)';
  return entries
    .map(
      (e) =>
        // Keys, types and errors come from outside (a signed event, a handler error quoting it):
        // printed inert, so none can move the cursor, clear the screen or fake a line.
        `${e.state.padEnd(10)} ${oneLine(e.key)}  ${oneLine(e.type ?? '')}  attempts ${e.attempts}  ${
          e.state === 'pending' ? `due ${e.dueAt.toISOString()}` : `since ${e.updatedAt.toISOString()}`
        }${e.lastError ? `\n           last error: ${oneLine(e.lastError)}` : ''}`,
    )
    .join('\n');
}

function details(entry: Record<string, unknown>): string {
  return Object.entries(entry)
    .map(
      ([k, v]) =>
        `${k.padEnd(12)} ${v instanceof Date ? v.toISOString() : oneLine(typeof v === 'object' ? JSON.stringify(v) : String(v))}`,
    )
    .join('\n');
}

/** A duration for people: 0 s, 42 s, 3 min 5 s, 2 h 4 min, 3 d 1 h. */
export function human(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

function print(json: boolean, value: unknown, text: () => string): void {
  console.log(json ? inertJson(value, 2) : text());
}
