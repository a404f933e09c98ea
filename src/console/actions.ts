/**
 * The console's actions, each one of the inbox's own operations (the same `requeue` and `purge` as
 * `onceonly inbox`): requeue one dead entry or retry a waiting one now, requeue the dead entries
 * of a filter after a confirmation that shows how many, purge completed entries past retention.
 * Each is logged with the operator who did it.
 */
import type { InboxStore } from '../core/inbox.js';
import { type FilterText, filtering, filterOf, SCAN_MAX, scan, stateList } from './filter.js';
import { actionForm, type Html, href, html, type PageContext, text } from './html.js';

/** One action as the console logs it. */
export interface ConsoleAction {
  /** The operator, as `authorize` named them. */
  readonly operator: string;
  readonly action: 'requeue' | 'requeue-dead' | 'purge';
  /** The entry's key (requeue) or the receiver filter (requeue-dead), when there is one. */
  readonly key?: string | undefined;
  readonly receiver?: string | undefined;
  /** The type and accepted-time filter of a requeue-dead, as the operator gave it. */
  readonly filter?: FilterText | undefined;
  /** How many entries it changed. */
  readonly count: number;
  readonly at: Date;
}

export type ActionResult = { readonly redirect: string } | { readonly status: number; readonly body: Html };

export async function runAction(
  path: string,
  form: URLSearchParams,
  ctx: PageContext,
  inbox: InboxStore,
  log: (action: ConsoleAction) => void,
): Promise<ActionResult> {
  const done = (
    action: ConsoleAction['action'],
    count: number,
    extra: Partial<ConsoleAction>,
    to: string,
  ) => {
    log({ operator: ctx.operator, action, count, at: new Date(), ...extra });
    return { redirect: to };
  };
  switch (path) {
    case '/requeue': {
      const key = form.get('key');
      if (!key) return { status: 400, body: html`<h1>Requeue</h1><p>No key given.</p>` };
      const n = await inbox.requeue({ key });
      return done(
        'requeue',
        n,
        { key },
        href(ctx.base, '/entry', { key, done: n === 1 ? 'requeued' : 'not-dead' }),
      );
    }
    case '/requeue-dead': {
      const receiver = form.get('receiver') || undefined;
      const selection = await deadSelection(inbox, receiver, form);
      if (selection === 'invalid')
        return { status: 400, body: html`<h1>Requeue</h1><p>The filter's time is not one.</p>` };
      let n = 0;
      if (selection === 'all') n = await inbox.requeue({ dead: true, receiver });
      else {
        // One fenced requeue per matching entry, a few at a time: an entry requeued meanwhile is not counted.
        const keys = [...selection.keys];
        const lane = async () => {
          for (let key = keys.pop(); key !== undefined; key = keys.pop()) {
            const changed = await inbox.requeue({ key });
            n += changed;
          }
        };
        await Promise.all(Array.from({ length: 8 }, lane));
      }
      const filter = selection === 'all' ? undefined : selection.text;
      return done('requeue-dead', n, { receiver, filter }, href(ctx.base, '/', { done: 'requeued', n }));
    }
    case '/purge': {
      const n = await inbox.purge();
      return done('purge', n, {}, href(ctx.base, '/', { done: 'purged', n }));
    }
    default:
      return { status: 404, body: html`<h1>Not found</h1>` };
  }
}

/**
 * The dead entries a bulk requeue moves: all of them (of a receiver), or those that match a type
 * and accepted-time filter, read from the dead list in one bounded scan ({@link SCAN_MAX} entries;
 * `bounded` when more remain, for another round).
 */
async function deadSelection(
  inbox: InboxStore,
  receiver: string | undefined,
  query: URLSearchParams,
): Promise<'all' | 'invalid' | { keys: string[]; text: FilterText; bounded: boolean }> {
  const parsed = filterOf(query);
  if (parsed === 'invalid') return 'invalid';
  if (!filtering(parsed.filter)) return 'all';
  const found = await scan(
    stateList(inbox, 'dead', receiver),
    {},
    Number.POSITIVE_INFINITY,
    parsed.filter,
    () => undefined,
  );
  return { keys: found.entries.map((e) => e.key), text: parsed.text, bounded: found.bounded };
}

/** The confirmation before a bulk requeue: how many dead entries it would move. */
export async function confirmRequeue(
  ctx: PageContext,
  inbox: InboxStore,
  receiver: string | undefined,
  query: URLSearchParams,
): Promise<Html> {
  const selection = await deadSelection(inbox, receiver, query);
  if (selection === 'invalid')
    return html`<h1>Requeue dead entries</h1><p class="note error">The filter's time is not one.</p>`;
  const dead =
    selection === 'all'
      ? (await inbox.stats(receiver === undefined ? {} : { receiver })).dead
      : selection.keys.length;
  const filter = selection === 'all' ? {} : selection.text;
  const of = html`${receiver === undefined ? 'of every receiver' : html`of ${text(receiver, 200)}`}${
    selection === 'all'
      ? ''
      : html` that match ${filter.type ? html`type ${text(filter.type, 200)}` : ''}${filter.since ? html` accepted since ${text(filter.since, 40)} UTC` : ''}${filter.until ? html` accepted before ${text(filter.until, 40)} UTC` : ''}`
  }`;
  const bounded =
    selection !== 'all' && selection.bounded
      ? html`<p class="muted">Only the first ${SCAN_MAX.toLocaleString('en-US')} dead entries were read (the filter is not indexed): requeue these, then this again for the rest.</p>`
      : '';
  if (dead === 0) return html`<h1>Requeue dead entries</h1><p>No dead entries ${of}.</p>${bounded}`;
  return html`<h1>Requeue dead entries</h1>
<p class="note">Requeue <strong>${dead.toLocaleString('en-US')}</strong> dead ${dead === 1 ? 'entry' : 'entries'} ${of}? Each is due now and runs on the next take: fix the cause first.</p>${bounded}
<p>${actionForm(ctx, '/requeue-dead', { receiver, ...filter }, `Requeue ${dead} ${dead === 1 ? 'entry' : 'entries'}`, true)} <a href="${href(ctx.base, '/entries', { state: 'dead', receiver, ...filter })}">Cancel</a></p>`;
}

/** The line an action's redirect shows, from fixed words only (never text from the query). */
export function notice(query: URLSearchParams): Html {
  const n = Number.parseInt(query.get('n') ?? '', 10);
  const count = Number.isFinite(n) && n >= 0 ? n : undefined;
  switch (query.get('done')) {
    case 'requeued':
      return html`<p class="note">Requeued${count === undefined ? '' : ` ${count} ${count === 1 ? 'entry' : 'entries'}`}: due now.</p>`;
    case 'not-dead':
      return html`<p class="note error">Not requeued: the entry is neither dead nor waiting for a later attempt (any more).</p>`;
    case 'purged':
      return html`<p class="note">Purged ${count ?? 0} completed ${count === 1 ? 'entry' : 'entries'} past retention.</p>`;
    default:
      return html``;
  }
}
