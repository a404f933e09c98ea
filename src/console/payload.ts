/**
 * A stored delivery as the console shows it: the body pretty-printed when it is JSON, cut at a
 * bound (a 1 MB payload shows its first part and its size), every header value that is not on
 * core/shown-headers.ts's allow-list replaced by its length (signatures, tokens, cookies,
 * `Authorization`), and the URL without credentials or query values.
 */
import type { InboxDelivery } from '../core/inbox.js';
import { shownHeaderValue, shownUrl } from '../core/shown-headers.js';
import { type Html, html, lines, text } from './html.js';

/** The most characters of a payload a page shows. */
export const PAYLOAD_SHOWN = 64 * 1024;
/** Bodies up to this size are parsed to be pretty-printed; larger ones are shown as they are. */
const PRETTY_MAX = 2 * 1024 * 1024;

/** The body as text: pretty JSON, else UTF-8 text, else a note that it is binary. */
export function bodyText(body: Uint8Array): { text: string; kind: 'json' | 'text' | 'binary' } {
  let decoded: string;
  try {
    decoded = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    return { text: new TextDecoder().decode(body.subarray(0, PAYLOAD_SHOWN)), kind: 'binary' };
  }
  if (body.byteLength <= PRETTY_MAX) {
    try {
      return { text: JSON.stringify(JSON.parse(decoded), null, 2), kind: 'json' };
    } catch {
      // not JSON: shown as text
    }
  }
  return { text: decoded, kind: 'text' };
}

export function deliveryView(delivery: InboxDelivery): Html {
  const body = bodyText(delivery.body);
  const cut = body.text.length > PAYLOAD_SHOWN;
  const headers = delivery.headers.filter(([name]) => !name.startsWith(':'));
  return html`<h2>Delivery</h2>
<dl><dt>received</dt><dd>${delivery.receivedAt.toISOString()}</dd>
<dt>url</dt><dd class="mono">${text(shownUrl(delivery.url) ?? '(not kept)')}</dd>
<dt>body</dt><dd>${delivery.body.byteLength.toLocaleString('en-US')} bytes, ${body.kind}${
    cut ? `, the first ${PAYLOAD_SHOWN.toLocaleString('en-US')} characters shown` : ''
  }</dd></dl>
<h2>Headers <span class="muted">(values off the allow-list shown as their length)</span></h2>
<table><tbody>${headers.map(
    ([name, value]) =>
      html`<tr><th class="mono">${text(name, 200)}</th><td class="mono wrap">${text(shownHeaderValue(name, value), 1_000)}</td></tr>`,
  )}</tbody></table>
<h2>Payload</h2>
<pre>${lines(body.text, PAYLOAD_SHOWN)}${cut ? '\n… (cut)' : ''}</pre>`;
}
