/**
 * `onceonly/console`: the operator's console as one web-standard `fetch(request)` handler, to mount
 * under a path beside the receiver in any framework. Server-rendered HTML, no script, a strict
 * Content-Security-Policy, every stored value shown as inert text, header values off the allow-list
 * masked; actions (requeue, purge) only by POST from its own pages (same origin, CSRF token), each
 * one of the inbox's own operations, logged with the operator's name. See docs/console.md.
 */
import { randomBytes } from 'node:crypto';
import { ConfigError } from '../core/errors.js';
import type { InboxState } from '../core/inbox.js';
import { inertJson, oneLine } from '../core/text.js';
import { type ConsoleAction, confirmRequeue, notice, runAction } from './actions.js';
import { filterOf } from './filter.js';
import { History } from './history.js';
import { type Html, href, html, type PageContext, page } from './html.js';
import {
  csrfToken,
  csrfValid,
  newSession,
  sameOrigin,
  securityHeaders,
  sessionCookie,
  sessionOf,
} from './security.js';
import { STYLE } from './style.js';
import type { Console, ConsoleOptions } from './types.js';
import { type ConsoleSource, claims, detail, list, overview, STATES } from './views.js';

export type { ConsoleAction } from './actions.js';
export { CSP } from './security.js';
export type { Console, ConsoleOptions } from './types.js';

const FORM_MAX = 16 * 1024;

function source(options: ConsoleOptions): ConsoleSource {
  const inbox = options.inbox ?? options.store?.inbox;
  if (!inbox) throw new TypeError('onceonly console: give a store with an inbox (store.inbox), or an inbox');
  const pageSize = options.pageSize ?? 50;
  if (!Number.isInteger(pageSize) || pageSize < 1 || pageSize > 1_000)
    throw new TypeError('onceonly console: pageSize must be an integer from 1 to 1000');
  return {
    inbox,
    store: options.store,
    receivers: [...(options.receivers ?? [])],
    pageSize,
    now: options.now,
    history: new History(),
  };
}

export function createConsole(options: ConsoleOptions): Console {
  if (typeof options?.authorize !== 'function')
    throw new TypeError(
      'onceonly console: authorize(request) is required: it names the operator, or refuses (the console shows signed deliveries and acts on them)',
    );
  const src = source(options);
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  if (base !== '' && !/^\/[A-Za-z0-9._~\-/]*$/.test(base))
    throw new TypeError(
      `onceonly console: basePath must be a path like /admin/webhooks, got ${oneLine(base)}`,
    );
  const secret =
    options.secret === undefined
      ? randomBytes(32)
      : typeof options.secret === 'string'
        ? new TextEncoder().encode(options.secret)
        : options.secret;
  if (secret.byteLength < 16) throw new TypeError('onceonly console: secret must be at least 16 bytes');
  const log = options.log ?? ((a: ConsoleAction) => console.log(inertJson({ console: a })));

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (base !== '' && url.pathname !== base && !url.pathname.startsWith(`${base}/`))
      return answer(404, 'text/plain; charset=utf-8', 'not found');
    const path = url.pathname.slice(base.length) || '/';
    if (path === '/style.css' && request.method === 'GET')
      return answer(200, 'text/css; charset=utf-8', STYLE);
    const who = await options.authorize(request);
    if (who instanceof Response) return who;
    if (typeof who !== 'string' || who === '') return answer(403, 'text/plain; charset=utf-8', 'forbidden');
    const known = sessionOf(request);
    const session = known ?? newSession();
    const ctx: PageContext = { base, operator: who, csrf: csrfToken(secret, who, session) };
    const cookie = known ? undefined : sessionCookie(session, request, base || '/');
    if (request.method === 'POST') return post(request, path, ctx, known);
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return answer(405, 'text/plain; charset=utf-8', 'method not allowed', { allow: 'GET, HEAD, POST' });
    const view = await get(path, url.searchParams, ctx);
    if (!view) return pageAnswer(404, ctx, 'Not found', html`<h1>Not found</h1>`, cookie);
    return pageAnswer(view.status ?? 200, ctx, view.title, view.body, cookie);
  }

  async function get(
    path: string,
    q: URLSearchParams,
    ctx: PageContext,
  ): Promise<{ title: string; body: Html; status?: number } | undefined> {
    const done = notice(q);
    switch (path) {
      case '/':
        return { title: 'Overview', body: html`${done}${await overview(ctx, src)}` };
      case '/entries': {
        const filtered = filterOf(q);
        if (filtered === 'invalid')
          return badLink(ctx, 'A time in the filter is not one: use 2026-12-04T09:30.');
        const state = q.get('state') || undefined;
        const offset = Number.parseInt(q.get('offset') ?? '0', 10);
        const query = {
          state: STATES.includes(state as InboxState) ? (state as InboxState) : undefined,
          receiver: q.get('receiver') || undefined,
          q: q.get('q')?.trim().slice(0, 1_000) || undefined,
          offset: Number.isInteger(offset) && offset > 0 ? Math.min(offset, 10_000_000) : 0,
          from: STATES.find((s) => s === q.get('from')),
          after: q.get('after')?.slice(0, 200) || undefined,
          filter: filtered.filter,
          filterText: filtered.text,
        };
        try {
          return { title: 'Entries', body: await list(ctx, src, query) };
        } catch (err) {
          // A cursor the store did not make (edited or from another store's console).
          if (!(err instanceof ConfigError && err.code === 'invalid_option')) throw err;
          return badLink(ctx, "This page's link is not one the console made.");
        }
      }
      case '/entry': {
        const key = q.get('key') ?? '';
        const body = key === '' || key.length > 4_096 ? undefined : await detail(ctx, src, key);
        return body && { title: 'Entry', body: html`${done}${body}` };
      }
      case '/claims':
        return { title: 'Claims', body: await claims(src) };
      case '/requeue-dead':
        return {
          title: 'Requeue dead entries',
          body: await confirmRequeue(ctx, src.inbox, q.get('receiver') || undefined, q),
        };
      default:
        return undefined;
    }
  }

  async function post(request: Request, path: string, ctx: PageContext, session: string | undefined) {
    // The origin first: a cross-site form never reaches the token check, let alone the store.
    if (!sameOrigin(request, options.origins))
      return pageAnswer(
        403,
        ctx,
        'Refused',
        html`<h1>Refused</h1><p>Actions come only from the console's own pages.</p>`,
      );
    const length = Number(request.headers.get('content-length') ?? '0');
    if (length > FORM_MAX) return answer(413, 'text/plain; charset=utf-8', 'form too large');
    const type = request.headers.get('content-type') ?? '';
    const body = await request.text();
    if (!type.startsWith('application/x-www-form-urlencoded') || body.length > FORM_MAX)
      return answer(415, 'text/plain; charset=utf-8', 'a form is expected');
    const form = new URLSearchParams(body);
    if (!session || !csrfValid(secret, ctx.operator, session, form.get('csrf') ?? ''))
      return pageAnswer(
        403,
        ctx,
        'Refused',
        html`<h1>Refused</h1><p>The form's token is missing or stale: reload the page and try again.</p>`,
      );
    const result = await runAction(path, form, ctx, src.inbox, log);
    if ('redirect' in result) {
      const headers = securityHeaders('text/plain; charset=utf-8');
      headers.set('location', result.redirect);
      return new Response(null, { status: 303, headers });
    }
    return pageAnswer(result.status, ctx, 'Console', result.body);
  }

  return {
    record: (result) => src.history.record(result),
    async fetch(request: Request): Promise<Response> {
      try {
        return await handle(request);
      } catch (err) {
        // The store's message can name hosts or tables: the page says what failed, the log has it.
        console.error(`onceonly console: ${oneLine(err instanceof Error ? err.message : String(err))}`);
        return answer(503, 'text/plain; charset=utf-8', 'the store did not answer; see the server log');
      }
    },
  };
}

/** A list link the console did not make (an edited cursor or time): 400, and the way back. */
function badLink(ctx: PageContext, why: string) {
  return {
    status: 400,
    title: 'Entries',
    body: html`<h1>Entries</h1><p class="note error">${why} <a href="${href(ctx.base, '/entries')}">Start from the first page</a>.</p>`,
  };
}

function answer(status: number, type: string, body: string, extra: Record<string, string> = {}): Response {
  const headers = securityHeaders(type);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return new Response(body, { status, headers });
}

function pageAnswer(status: number, ctx: PageContext, title: string, body: Html, cookie?: string): Response {
  const headers = securityHeaders('text/html; charset=utf-8');
  if (cookie) headers.set('set-cookie', cookie);
  return new Response(page(ctx, title, body), { status, headers });
}

export { nodeHandler } from './node.js';
