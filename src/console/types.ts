/** The console's public types: its options and the handler it returns. */
import type { InboxStore } from '../core/inbox.js';
import type { Store } from '../core/types.js';
import type { ConsoleAction } from './actions.js';
import type { OutcomeLike } from './history.js';

export interface ConsoleOptions {
  /** The store: its inbox (`store.inbox`) is shown, and its claims where it has an overview. */
  readonly store?: Store | undefined;
  /** Or an inbox alone (no claims view). */
  readonly inbox?: InboxStore | undefined;
  /** The receivers (their names) to break counts down by and to search event ids under. */
  readonly receivers?: readonly string[] | undefined;
  /**
   * Who is asking: the operator's name to let them in (it is logged with every action), `undefined`
   * to refuse (403), or a `Response` to answer instead (a 401 with `WWW-Authenticate`, a redirect
   * to your login). Required: the console shows signed deliveries and requeues them.
   */
  readonly authorize: (
    request: Request,
  ) => string | Response | undefined | null | Promise<string | Response | undefined | null>;
  /** The path the console is mounted under, e.g. `/admin/webhooks` (no trailing slash). Default: none. */
  readonly basePath?: string | undefined;
  /** The key of the CSRF tokens (32+ bytes); random per console by default (a restart voids open forms). */
  readonly secret?: string | Uint8Array | undefined;
  /** Origins allowed to post actions (behind a proxy that rewrites the host); the request's own by default. */
  readonly origins?: readonly string[] | undefined;
  /** Where actions are logged; a JSON line on stdout by default. */
  readonly log?: ((action: ConsoleAction) => void) | undefined;
  /** The store's clock (ms since the epoch) for the claims view; this host's clock otherwise. */
  readonly now?: (() => number | Promise<number>) | undefined;
  /** Entries per list page (50). */
  readonly pageSize?: number | undefined;
}

export interface Console {
  fetch(request: Request): Promise<Response>;
  /**
   * Counts a receiver's result for the overview's chart (accepted, processed, failed, dead per
   * minute, last hour, this process): `createReceiver({ ..., onOutcome: ops.record })`.
   */
  record(result: OutcomeLike): void;
}
