/**
 * An inbox's watch ({@link InboxStore.watch}) over one connection per store: a PostgreSQL LISTEN or
 * a Redis subscription, opened when the first worker watches, shared by every watcher of the store,
 * closed when the last one stops or the store closes. A store supplies only how to open it
 * ({@link WatchChannel}); the sharing, the dispatch by receiver and the re-opening with backoff are
 * here, once.
 *
 * What is heard is a hint (see the contract): it only ends a worker's idle wait. So the watch never
 * needs to be exact: a notification that arrives while the connection is down is lost, and made up
 * for by one `due()` to every watcher each time the connection is (re)opened.
 */
import type { InboxStore, InboxWatcher } from '../core/inbox.js';
import { later } from '../core/timers.js';

/** How a store opens its watch connection. */
export interface WatchChannel {
  /**
   * Opens the connection and listens: `heard(receiver)` for each notification (the receiver it
   * names; `undefined`: every watcher, as after a re-LISTEN the driver made by itself), `lost(error)`
   * when the open connection drops. Resolves, once listening, with the
   * function that closes it (never throwing).
   */
  open(
    heard: (receiver: string | undefined) => void,
    lost: (error: unknown) => void,
  ): Promise<() => Promise<void>>;
}

/** The first wait before a watch is opened again, and the longest. */
const BACKOFF_MS = { first: 100, max: 30_000 };

/** The watch of one store: `watch` is its {@link InboxStore.watch}, `close` ends every watch. */
export interface WatchHub {
  watch(receiver: string | undefined, watcher: InboxWatcher): () => void;
  close(): Promise<void>;
}

/** One shared watch connection over `channel`; see the module comment. */
export function watchHub(channel: WatchChannel): WatchHub {
  const watchers = new Map<InboxWatcher, string | undefined>();
  let closeCurrent: (() => Promise<void>) | undefined;
  let opening = false;
  let retry: { cancel(): void } | undefined;
  let failures = 0;
  let closed = false;
  // Each open connection's number: a callback of a connection already given up is ignored.
  let generation = 0;

  const each = (fn: (watcher: InboxWatcher) => void) => {
    for (const watcher of [...watchers.keys()]) {
      try {
        fn(watcher);
      } catch {
        // A watcher must not throw; one that does is not the others' concern.
      }
    }
  };
  const heard = (receiver: string | undefined) => {
    for (const [watcher, watched] of [...watchers]) {
      if (receiver !== undefined && watched !== undefined && watched !== receiver) continue;
      try {
        watcher.due();
      } catch {
        // as above
      }
    }
  };
  const shut = (close: (() => Promise<void>) | undefined) => close?.().catch(() => undefined);

  function fail(error: unknown): void {
    each((watcher) => watcher.failed?.(error));
    failures++;
    const full = Math.min(BACKOFF_MS.max, BACKOFF_MS.first * 2 ** Math.min(20, failures - 1));
    retry = later(
      () => {
        retry = undefined;
        ensure();
      },
      full / 2 + Math.random() * (full / 2),
      { unref: true },
    );
  }

  function lost(error: unknown): void {
    const close = closeCurrent;
    closeCurrent = undefined;
    generation++;
    void shut(close);
    fail(error);
  }

  function ensure(): void {
    if (closed || watchers.size === 0 || closeCurrent || opening || retry) return;
    opening = true;
    const mine = ++generation;
    let opened: Promise<() => Promise<void>>;
    try {
      opened = channel.open(
        (receiver) => mine === generation && heard(receiver),
        (error) => mine === generation && lost(error),
      );
    } catch (error) {
      opened = Promise.reject(error);
    }
    opened.then(
      (close) => {
        opening = false;
        if (mine !== generation || closed || watchers.size === 0) {
          void shut(close);
          ensure();
          return;
        }
        closeCurrent = close;
        failures = 0;
        // What was accepted while nobody listened (before the first open, during a drop).
        each((watcher) => watcher.due());
      },
      (error: unknown) => {
        opening = false;
        if (mine !== generation) return ensure();
        fail(error);
      },
    );
  }

  function stop(): Promise<void> {
    generation++;
    retry?.cancel();
    retry = undefined;
    failures = 0;
    const close = closeCurrent;
    closeCurrent = undefined;
    return shut(close) ?? Promise.resolve();
  }

  return {
    watch(receiver, watcher) {
      if (closed) return () => {};
      // Its own entry, even for a watcher passed twice: each watch ends on its own.
      const own: InboxWatcher = { due: () => watcher.due(), failed: (error) => watcher.failed?.(error) };
      watchers.set(own, receiver);
      ensure();
      return () => {
        if (!watchers.delete(own)) return;
        if (watchers.size === 0) void stop();
      };
    },
    async close() {
      closed = true;
      watchers.clear();
      await stop();
    },
  };
}

/** `inbox` with `hub`'s watch: for a store whose inbox is a class instance, kept as it is. */
export function withWatch<T extends InboxStore>(inbox: T, hub: WatchHub | undefined): T {
  if (hub) Object.defineProperty(inbox, 'watch', { value: hub.watch, enumerable: true });
  return inbox;
}

/**
 * `send(receiver)` after each accept, off the accept's path and never more than one at a time per
 * receiver: an accept while one is in flight asks for one more after it, so the last accept of any
 * burst is followed by a notification sent after it was written, and a burst costs two at most. A
 * notification that fails is dropped (the workers poll).
 */
export function coalesced(send: (receiver: string) => Promise<unknown>): (receiver: string) => void {
  // Receiver → whether another notification is owed once the one in flight returns.
  const inFlight = new Map<string, boolean>();
  const run = (receiver: string) => {
    inFlight.set(receiver, false);
    let sent: Promise<unknown>;
    try {
      sent = send(receiver);
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent
      .catch(() => undefined)
      .then(() => {
        if (inFlight.get(receiver) === true) run(receiver);
        else inFlight.delete(receiver);
      });
  };
  return (receiver) => {
    if (inFlight.has(receiver)) inFlight.set(receiver, true);
    else run(receiver);
  };
}
