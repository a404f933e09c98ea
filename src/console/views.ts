/** The console's read-only views: overview, entry lists and search, one entry, the claims. */
import type { InboxEntryView, InboxState, InboxStats, InboxStore } from '../core/inbox.js';
import { keyPart } from '../core/keys.js';
import { hasAdmin, type Store } from '../core/types.js';
import {
  type EntryFilter,
  type FilterText,
  filtering,
  type Read,
  SCAN_MAX,
  scan,
  stateList,
} from './filter.js';
import type { History } from './history.js';
import { actionForm, type Html, href, html, type PageContext, raw, text } from './html.js';
import { deliveryView } from './payload.js';

export const STATES: readonly InboxState[] = ['dead', 'pending', 'processing', 'completed'];

/** What the views read: the inbox, the store behind it (claims), the receivers to break counts down by. */
export interface ConsoleSource {
  readonly inbox: InboxStore;
  readonly store: Store | undefined;
  readonly receivers: readonly string[];
  readonly pageSize: number;
  /** Deliveries per minute in this process, for the chart. */
  readonly history: History;
  /** The store's clock (ms), where known; else this host's. */
  readonly now: (() => number | Promise<number>) | undefined;
}

export function duration(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const h = Math.floor(m / 60);
  return h < 48 ? `${h} h ${m % 60} min` : `${Math.floor(h / 24)} d ${h % 24} h`;
}

const stateCell = (state: string) => html`<span class="${`state state-${state}`}">${state}</span>`;

function countsRow(ctx: PageContext, label: Html, receiver: string | undefined, s: InboxStats): Html {
  const cell = (state: InboxState) =>
    html`<td class="num"><a href="${href(ctx.base, '/entries', { state, receiver })}">${s[state].toLocaleString('en-US')}</a></td>`;
  const scheduled = html`<td class="num">${s.scheduled === undefined ? '–' : s.scheduled.toLocaleString('en-US')}</td>`;
  return html`<tr><td>${label}</td>${STATES.map(cell)}${scheduled}<td class="num">${duration(s.oldestDueMs)}</td></tr>`;
}

export async function overview(ctx: PageContext, src: ConsoleSource): Promise<Html> {
  const [all, ...each] = await Promise.all([
    src.inbox.stats(),
    ...src.receivers.map((receiver) => src.inbox.stats({ receiver })),
  ]);
  const rows = [
    countsRow(ctx, raw('<strong>all receivers</strong>'), undefined, all!),
    ...src.receivers.map((r, i) => countsRow(ctx, text(r, 200), r, each[i]!)),
  ];
  return html`<h1>Inbox</h1>
<table><thead><tr><th>receiver</th>${STATES.map((s) => html`<th class="num">${s}</th>`)}<th class="num">of pending: retry scheduled</th><th class="num">oldest due waiting</th></tr></thead>
<tbody>${rows}</tbody></table>
${all!.oldestDueMs > 60_000 ? html`<p class="note error">The oldest due entry has waited ${duration(all!.oldestDueMs)}: are the workers running?</p>` : ''}
<h2>Deliveries per minute, last hour <span class="muted">(this process)</span></h2>
${src.history.chart()}
<h2>Actions</h2>
<p>${all!.dead > 0 ? html`<a href="${href(ctx.base, '/requeue-dead')}">Requeue dead entries…</a> · ` : ''}${actionForm(ctx, '/purge', {}, 'Purge completed entries past retention')}</p>`;
}

export interface ListQuery {
  readonly state: InboxState | undefined;
  readonly receiver: string | undefined;
  readonly q: string | undefined;
  readonly offset: number;
  /** Every state: the state the page starts in (`after` and `offset` are within it). */
  readonly from?: InboxState | undefined;
  /** Where the page starts: the cursor of the last entry of the page before (keyset paging). */
  readonly after?: string | undefined;
  /** Type and accepted time (no store indexes them: scanned, bounded per page). */
  readonly filter?: EntryFilter | undefined;
  /** The filter as the query gave it (for the form and the links). */
  readonly filterText?: FilterText | undefined;
}

function filters(ctx: PageContext, src: ConsoleSource, query: ListQuery): Html {
  const ft = query.filterText ?? {};
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}"${raw(selected ? ' selected' : '')}>${label}</option>`;
  const receiverField =
    src.receivers.length > 0
      ? html`<select name="receiver">${option('', 'all', query.receiver === undefined)}${src.receivers.map((r) => option(r, r, r === query.receiver))}</select>`
      : html`<input name="receiver" value="${query.receiver ?? ''}" size="16">`;
  return html`<form class="filters" method="get" action="${href(ctx.base, '/entries')}">
<label>state<select name="state">${option('', 'all', query.state === undefined)}${STATES.map((s) => option(s, s, s === query.state))}</select></label>
<label>receiver${receiverField}</label>
<label>type<input name="type" value="${ft.type ?? ''}" size="16" placeholder="order.paid or order.*"></label>
<label>accepted since (UTC)<input type="datetime-local" step="1" name="since" value="${ft.since ?? ''}"></label>
<label>before (UTC)<input type="datetime-local" step="1" name="until" value="${ft.until ?? ''}"></label>
<label>event id or key<input name="q" value="${query.q ?? ''}" size="32"></label>
<button type="submit">Show</button></form>`;
}

function entryRows(ctx: PageContext, entries: readonly InboxEntryView[]): Html {
  if (entries.length === 0) return html`<p class="muted">No entries.</p>`;
  return html`<table><thead><tr><th>state</th><th>key</th><th>receiver</th><th>type</th><th class="num">attempts</th><th>due / since</th><th>last error</th></tr></thead><tbody>${entries.map(
    (
      e,
    ) => html`<tr><td>${stateCell(e.state)}</td><td class="mono wrap"><a href="${href(ctx.base, '/entry', { key: e.key })}">${text(e.key, 200)}</a></td>
<td>${text(e.receiver, 100)}</td><td class="wrap">${text(e.type ?? '', 120)}</td><td class="num">${e.attempts}</td>
<td class="mono">${(e.state === 'pending' || e.state === 'processing' ? e.dueAt : e.updatedAt).toISOString()}</td><td class="wrap">${text(e.lastError ?? '', 200)}</td></tr>`,
  )}</tbody></table>`;
}

/** The entries a search finds: the key itself, or an event id under each receiver's key space. */
async function search(
  src: ConsoleSource,
  q: string,
  receiver: string | undefined,
): Promise<InboxEntryView[]> {
  const spaces = receiver !== undefined ? [receiver] : src.receivers;
  const keys = [q, ...spaces.map((space) => `${space}:${keyPart(q)}`)];
  const found = await Promise.all([...new Set(keys)].map((k) => src.inbox.get(k)));
  return found.filter((e) => e !== undefined).map(({ delivery: _, ...view }) => view);
}

export async function list(ctx: PageContext, src: ConsoleSource, query: ListQuery): Promise<Html> {
  const head = filters(ctx, src, query);
  if (query.q) {
    const found = await search(src, query.q, query.receiver);
    return html`<h1>Search</h1>${head}${entryRows(ctx, found)}`;
  }
  const filtered =
    query.filter && filtering(query.filter) ? await scanned(src, query, query.filter) : undefined;
  const { entries, next, first } =
    filtered ?? (await (query.state ? oneState(src, query) : acrossStates(src, query)));
  const at = (q: Record<string, string | number | undefined>) =>
    href(ctx.base, '/entries', { state: query.state, receiver: query.receiver, ...query.filterText, ...q });
  // Pages continue from a cursor (however deep, a page is read from the store's index where it
  // starts): the way back is to the first page, or the browser's.
  const prev = first ? '' : html`<a href="${at({})}">← first page</a>`;
  const pager = html`<div class="pager">${prev}<span class="muted">${entries.length} ${entries.length === 1 ? 'entry' : 'entries'}</span>${
    next
      ? html`<a href="${at(next)}" rel="next">${filtered?.bounded ? 'scan further →' : 'next page →'}</a>`
      : ''
  }</div>${
    filtered?.bounded
      ? html`<p class="note">The filter is not indexed: this page read ${filtered.scanned.toLocaleString('en-US')} entries (at most ${SCAN_MAX.toLocaleString('en-US')} a page) and the list goes on; scan further for more matches.</p>`
      : ''
  }`;
  const requeue =
    query.state === 'dead' && entries.length > 0
      ? html`<p><a href="${href(ctx.base, '/requeue-dead', { receiver: query.receiver, ...query.filterText })}">Requeue every dead entry${query.receiver === undefined ? '' : html` of ${text(query.receiver, 100)}`}${query.filter && filtering(query.filter) ? ' that matches the filter' : ''}…</a></p>`
      : '';
  return html`<h1>Entries${query.state ? html` · ${query.state}` : ''}</h1>${head}${requeue}${entryRows(ctx, entries)}${pager}`;
}

/**
 * A page of the entries that match the filter: the state's list (or every state's) read from where
 * the page starts, in bounded batches (see filter.ts).
 */
async function scanned(
  src: ConsoleSource,
  query: ListQuery,
  filter: EntryFilter,
): Promise<Page & { scanned: number; bounded: boolean }> {
  const read: Read = async (at, limit) => {
    const from = STATES.find((s) => s === at.from);
    const after = typeof at.after === 'string' ? at.after : undefined;
    const q = { ...query, from, after, offset: Number(at.offset ?? 0) };
    return query.state
      ? oneState({ ...src, pageSize: limit }, q)
      : acrossStates({ ...src, pageSize: limit }, q);
  };
  const start = { from: query.from, after: query.after, offset: query.offset };
  const page = await scan(read, start, src.pageSize, filter, (e) =>
    e.cursor === undefined
      ? undefined
      : query.state
        ? { after: e.cursor }
        : { from: e.state, after: e.cursor },
  );
  const first = query.offset === 0 && query.after === undefined && (query.from ?? STATES[0]) === STATES[0];
  return { ...page, first };
}

type Page = {
  entries: InboxEntryView[];
  next: Record<string, string | number | undefined> | undefined;
  first: boolean;
};

/** A page of one state, read from the page's position (see {@link stateList}). */
async function oneState(src: ConsoleSource, query: ListQuery): Promise<Page> {
  const read = stateList(src.inbox, query.state, query.receiver);
  const { entries, next } = await read({ after: query.after, offset: query.offset }, src.pageSize);
  return { entries, next, first: query.offset === 0 && query.after === undefined };
}

/**
 * A page of every state, dead first, then pending, processing, completed: read state by state from
 * where the page starts (`from`, `offset` within it), so each read is one state's ordered index
 * range and no page needs a count or a sort of the whole table.
 */
async function acrossStates(src: ConsoleSource, query: ListQuery): Promise<Page> {
  const start0 = query.from === undefined ? 0 : STATES.indexOf(query.from);
  const got: InboxEntryView[] = [];
  for (let i = start0; i < STATES.length && got.length <= src.pageSize; i++) {
    const [offset, after] = i === start0 ? [query.offset, query.after] : [0, undefined];
    const limit = src.pageSize + 1 - got.length;
    got.push(...(await src.inbox.list({ state: STATES[i], receiver: query.receiver, limit, offset, after })));
  }
  const shown = got.slice(0, src.pageSize);
  const following = got[src.pageSize];
  let next: Page['next'];
  if (following) {
    // After the last entry of its state shown here (each cursor is of its state's own list), or
    // from that state's start when this page showed none of it.
    const same = shown.filter((e) => e.state === following.state);
    const last = same.at(-1);
    const startState = following.state === STATES[start0];
    next =
      last?.cursor !== undefined
        ? { from: following.state, after: last.cursor }
        : last
          ? // A store that gives no cursor: by offset within the state, as before cursors.
            {
              from: following.state,
              after: startState ? query.after : undefined,
              offset: (startState ? query.offset : 0) + same.length,
            }
          : startState && (query.offset > 0 || query.after !== undefined)
            ? { from: following.state, after: query.after, offset: query.offset || undefined }
            : { from: following.state };
  }
  return {
    entries: shown,
    next,
    first: start0 === 0 && query.offset === 0 && query.after === undefined,
  };
}

export async function detail(ctx: PageContext, src: ConsoleSource, key: string): Promise<Html | undefined> {
  const entry = await src.inbox.get(key);
  if (!entry) return undefined;
  const due =
    entry.state === 'pending'
      ? 'next attempt'
      : entry.state === 'processing'
        ? 'lease runs out'
        : entry.state === 'completed'
          ? 'forgotten at'
          : 'due (requeue to run)';
  return html`<h1>Entry</h1>
<dl><dt>key</dt><dd class="mono">${text(entry.key, 600)}</dd>
<dt>state</dt><dd>${stateCell(entry.state)}</dd>
<dt>receiver</dt><dd>${text(entry.receiver, 200)}</dd>
<dt>type</dt><dd>${text(entry.type ?? '(none)', 600)}</dd>
<dt>event id</dt><dd class="mono">${text(entry.id ?? '(none)', 600)}</dd>
<dt>attempts</dt><dd>${entry.attempts}</dd>
<dt>accepted</dt><dd class="mono">${entry.acceptedAt.toISOString()}</dd>
<dt>${due}</dt><dd class="mono">${entry.dueAt.toISOString()}</dd>
<dt>updated</dt><dd class="mono">${entry.updatedAt.toISOString()}</dd>
<dt>last error</dt><dd class="mono wrap">${text(entry.lastError ?? '(none)', 1_000)}</dd></dl>
${entry.state === 'dead' ? html`<p>${actionForm(ctx, '/requeue', { key: entry.key }, 'Requeue: due now')}</p>` : ''}
${entry.state === 'pending' && entry.attempts > 0 && entry.dueAt.getTime() > (src.now ? await src.now() : Date.now()) ? html`<p>${actionForm(ctx, '/requeue', { key: entry.key }, 'Retry now: due now, not at the next attempt')}</p>` : ''}
${entry.delivery ? deliveryView(entry.delivery) : html`<p class="muted">The delivery is not kept (dropped after completion, or unreadable).</p>`}`;
}

export async function claims(src: ConsoleSource): Promise<Html> {
  const store = src.store;
  if (!store || !hasAdmin(store))
    return html`<h1>Claims</h1><p class="muted">This store offers no overview of its claims (give the console the store itself, not only its inbox).</p>
<h2>Recent conflicts and lost leases <span class="muted">(reported in this process)</span></h2>
${incidents(src)}`;
  const [stats, leases, now] = await Promise.all([
    store.stats(),
    store.oldestLeases(50),
    src.now ? src.now() : Date.now(),
  ]);
  return html`<h1>Claims</h1>
<table><tbody><tr><th>processing (live leases)</th><td class="num">${stats.processing}</td></tr>
<tr><th>takeable (released, or the lease ran out: stuck work)</th><td class="num">${stats.takeable}</td></tr>
<tr><th>completed (within retention)</th><td class="num">${stats.completed}</td></tr></tbody></table>
<h2>Oldest leases <span class="muted">(${src.now ? "on the store's clock" : "on this host's clock"})</span></h2>
${
  leases.length === 0
    ? html`<p class="muted">None.</p>`
    : html`<table><thead><tr><th>key</th><th>state</th><th class="num">attempt</th><th>expires</th><th></th></tr></thead><tbody>${leases.map(
        (l) => {
          const left = l.expiresAt.getTime() - now;
          return html`<tr><td class="mono wrap">${text(l.key, 200)}</td><td>${l.state}</td><td class="num">${l.attempt}</td><td class="mono">${l.expiresAt.toISOString()}</td>
<td>${l.state === 'released' ? 'released: takeable' : left <= 0 ? html`<span class="state state-dead">ran out ${duration(-left)} ago</span>` : `runs out in ${duration(left)}`}</td></tr>`;
        },
      )}</tbody></table>`
}
<h2>Recent conflicts and lost leases <span class="muted">(reported in this process)</span></h2>
${incidents(src)}`;
}

/**
 * What the receivers reported through `onOutcome: ops.record`: a key held with another fingerprint
 * (an event id reused for other content: replayed or forged), a run that outlived its lease. No
 * store keeps these; the log has every one.
 */
function incidents(src: ConsoleSource): Html {
  const list = src.history.incidents;
  if (list.length === 0)
    return html`<p class="muted">None reported (pass <code>onOutcome: ops.record</code> to the receiver to list them here).</p>`;
  return html`<table><thead><tr><th>when</th><th>outcome</th><th>receiver</th><th>key</th><th>type</th></tr></thead><tbody>${list.map(
    (i) =>
      html`<tr><td class="mono">${i.at.toISOString()}</td><td><span class="state state-dead">${i.outcome}</span></td><td>${text(i.receiver ?? '', 100)}</td>
<td class="mono wrap">${text(i.key ?? '', 200)}</td><td class="wrap">${text(i.type ?? '', 120)}</td></tr>`,
  )}</tbody></table>`;
}
