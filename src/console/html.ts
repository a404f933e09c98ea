/**
 * The console's HTML: every value from the store (keys, types, errors, headers, payloads: text a
 * sender or a handler chose) goes through {@link text}, which escapes what HTML acts on, so a
 * `<script>` or a `javascript:` link in an event shows as the characters it is. Links and form
 * targets are only ever built here from the console's own paths and encoded query values.
 */
import { inertLines, oneLine } from '../core/text.js';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** A string escaped for HTML text and quoted attribute values. */
export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** HTML that is already safe: built here from escaped parts. */
export interface Html {
  readonly html: string;
}

/** Marks built HTML as safe (only for markup written in this folder). */
export const raw = (html: string): Html => ({ html });

/** Stored text shown on one line: escaped for HTML, control and bidi characters made visible, cut at `max`. */
export function text(value: unknown, max = 2_000): Html {
  const s = value === undefined || value === null ? '' : String(value);
  const cut = s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s;
  return raw(escapeHtml(oneLine(cut)));
}

/** Stored text kept on its lines (a pretty-printed payload): escaped, controls visible, cut at `max`. */
export function lines(value: string, max: number): Html {
  const cut = value.length > max ? value.slice(0, max) : value;
  return raw(escapeHtml(inertLines(cut)));
}

/** A tagged template whose interpolations are escaped unless they are {@link Html} (or arrays of it). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1]!;
  return raw(out);
}

function part(v: unknown): string {
  if (v === undefined || v === null || v === false) return '';
  if (Array.isArray(v)) return v.map(part).join('');
  if (typeof v === 'object' && 'html' in (v as object)) return (v as Html).html;
  return escapeHtml(String(v));
}

/** A console path with its query: the values encoded, the empty ones left out. */
export function href(
  base: string,
  path: string,
  query: Record<string, string | number | undefined> = {},
): string {
  const q = Object.entries(query)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  return `${base}${path}${q ? `?${q}` : ''}`;
}

/** What every page needs: where the console lives, who is looking, and the form token. */
export interface PageContext {
  readonly base: string;
  readonly operator: string;
  readonly csrf: string;
}

/** The page around a view: the stylesheet, the navigation, the operator. No script anywhere. */
export function page(ctx: PageContext, title: string, body: Html): string {
  return `<!doctype html>${
    html`<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin"><title>${title} · onceonly console</title>
<link rel="stylesheet" href="${href(ctx.base, '/style.css')}"></head>
<body><header><strong>onceonly</strong><nav>
<a href="${href(ctx.base, '/')}">Overview</a><a href="${href(ctx.base, '/entries', { state: 'dead' })}">Dead</a><a href="${href(ctx.base, '/entries')}">Entries</a><a href="${href(ctx.base, '/claims')}">Claims</a>
</nav><span class="who">signed in as ${text(ctx.operator, 200)}</span></header>
<main>${body}</main></body></html>`.html
  }`;
}

/** A POST form to a console action, carrying the CSRF token and the given fields. */
export function actionForm(
  ctx: PageContext,
  path: string,
  fields: Record<string, string | number | undefined>,
  label: string,
  danger = false,
): Html {
  const hidden = Object.entries(fields)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => html`<input type="hidden" name="${k}" value="${String(v)}">`);
  return html`<form class="inline" method="post" action="${href(ctx.base, path)}"><input type="hidden" name="csrf" value="${ctx.csrf}">${hidden}<button type="submit"${raw(danger ? ' class="danger"' : '')}>${label}</button></form>`;
}
