/**
 * The overview's chart: accepted, processed, failed and dead deliveries per minute over the last
 * hour, counted in this process from the results the receiver reports (`onOutcome: ops.record`),
 * drawn as an inline SVG on the server (no script, nothing the CSP has to allow). The store keeps
 * no history of its own; a console in another process than the receivers shows none.
 */
import { type Html, html, raw } from './html.js';

/** What the console reads of a receiver's result (a `DeliveryResult`). */
export interface OutcomeLike {
  readonly outcome: string;
  readonly provider?: string | undefined;
  readonly receiver?: string | undefined;
  readonly key?: string | undefined;
  readonly id?: string | undefined;
  readonly type?: string | undefined;
}

/** A conflict or lost lease the receivers reported in this process, for the claims view. */
export interface Incident {
  readonly at: Date;
  readonly outcome: 'conflict' | 'lease-lost';
  readonly receiver: string | undefined;
  readonly key: string | undefined;
  readonly id: string | undefined;
  readonly type: string | undefined;
}

/** Incidents kept, newest first. */
const INCIDENTS = 50;

const SERIES = [
  ['accepted', '#1f5fbf'],
  ['processed', '#1e7a3a'],
  ['failed', '#c77700'],
  ['dead', '#b3261e'],
] as const;
type Series = (typeof SERIES)[number][0];
const MINUTES = 60;

export class History {
  readonly #buckets = new Map<number, Record<Series, number>>();
  readonly #incidents: Incident[] = [];

  /** The last conflicts and lost leases (a key held with another fingerprint; a run past its lease), newest first. */
  get incidents(): readonly Incident[] {
    return this.#incidents;
  }

  record(result: OutcomeLike, at = Date.now()): void {
    if (result.outcome === 'conflict' || result.outcome === 'lease-lost') {
      const { outcome, receiver, provider, key, id, type } = result;
      // Only strings are kept (a result is the receiver's, but record() is public): the view shows them as text.
      const str = (v: unknown) => (typeof v === 'string' ? v.slice(0, 2_000) : undefined);
      this.#incidents.unshift({
        at: new Date(at),
        outcome,
        receiver: str(receiver) ?? str(provider),
        key: str(key),
        id: str(id),
        type: str(type),
      });
      this.#incidents.length = Math.min(this.#incidents.length, INCIDENTS);
    }
    const name = SERIES.find(([s]) => s === result.outcome)?.[0];
    if (name === undefined) return;
    const minute = Math.floor(at / 60_000);
    let bucket = this.#buckets.get(minute);
    if (!bucket) {
      bucket = { accepted: 0, processed: 0, failed: 0, dead: 0 };
      this.#buckets.set(minute, bucket);
      for (const m of this.#buckets.keys()) if (m <= minute - MINUTES) this.#buckets.delete(m);
    }
    bucket[name]++;
  }

  /** The last hour as an SVG line chart, or a note on how to feed it. */
  chart(now = Date.now()): Html {
    const last = Math.floor(now / 60_000);
    const rows = Array.from({ length: MINUTES }, (_, i) => this.#buckets.get(last - MINUTES + 1 + i));
    if (rows.every((r) => r === undefined))
      return html`<p class="muted">No deliveries counted in this process in the last hour (pass <code>onOutcome: ops.record</code> to the receiver to chart them).</p>`;
    const max = Math.max(1, ...rows.flatMap((r) => (r ? SERIES.map(([s]) => r[s]) : [0])));
    const [w, h, pad] = [600, 120, 20];
    const x = (i: number) => (pad + (i * (w - 2 * pad)) / (MINUTES - 1)).toFixed(1);
    const y = (n: number) => (h - pad - (n * (h - 2 * pad)) / max).toFixed(1);
    const lines = SERIES.map(
      ([s, color]) =>
        `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${rows.map((r, i) => `${x(i)},${y(r?.[s] ?? 0)}`).join(' ')}"/>`,
    ).join('');
    const legend = SERIES.map(
      ([s, color], i) =>
        `<text x="${pad + i * 90}" y="12" fill="${color}">${s}: ${rows.reduce((n, r) => n + (r?.[s] ?? 0), 0)}</text>`,
    ).join('');
    return raw(
      `<svg class="chart" viewBox="0 0 ${w} ${h}" role="img" aria-label="deliveries per minute, last hour">${legend}<text x="${w - pad}" y="12" text-anchor="end">max ${max}/min</text>${lines}<text x="${pad}" y="${h - 4}">-60 min</text><text x="${w - pad}" y="${h - 4}" text-anchor="end">now</text></svg>`,
    );
  }
}
