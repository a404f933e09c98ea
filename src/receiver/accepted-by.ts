/**
 * Which receiver accepted an inbox entry. Two apps on one store under one receiver name (the
 * provider's, by default) share one queue; each app's workers take the other's entries and cannot
 * verify them with their own secrets. So the accepting receiver stamps its entries with its
 * provider's `identity` (a one-way digest of its first secret or public key, never the secret)
 * under a header name no request can carry (a colon is not a header-name character), kept with the
 * entry in every store without a schema change. A worker that cannot verify an entry stamped by
 * another identity leaves it for its own receiver instead of burying it, and reports the clash.
 */
import type { HealthCheck } from '../core/health.js';

export const ACCEPTED_BY = ':onceonly-accepted-by';

/** The headers to keep, stamped with the accepting receiver's identity when it has one. */
export function stamped(
  headers: readonly (readonly [string, string])[],
  identity: string | undefined,
): readonly (readonly [string, string])[] {
  return identity === undefined ? headers : [...headers, [ACCEPTED_BY, identity]];
}

/** The stamp (if any) and the request's own headers, the stamp taken out. */
export function unstamped(headers: readonly (readonly [string, string])[]): {
  identity: string | undefined;
  headers: readonly (readonly [string, string])[];
} {
  const at = headers.findIndex(([name]) => name === ACCEPTED_BY);
  if (at === -1) return { identity: undefined, headers };
  return { identity: headers[at]![1], headers: headers.filter((_, i) => i !== at) };
}

/** How long after the last clash `health()` still reports it. */
const REPORTED_MS = 15 * 60_000;

/** The clashes a receiver's workers met: counted, the last remembered for `health()`. */
export class Clashes {
  count = 0;
  #lastAt = 0;
  #other = '';

  seen(other: string): void {
    this.count++;
    this.#lastAt = Date.now();
    this.#other = other;
  }

  /** A failing health check while a clash is recent, else nothing. */
  check(space: string): HealthCheck | undefined {
    if (this.count === 0 || Date.now() - this.#lastAt > REPORTED_MS) return undefined;
    return {
      name: 'inbox-receivers',
      ok: false,
      detail: `${this.count} entries of receiver ${space} were accepted by another app with other secrets (identity ${this.#other}), last ${Math.round((Date.now() - this.#lastAt) / 1000)} s ago: they are left for it, never run or buried here; give each app its own receiver name`,
    };
  }
}
