/**
 * Runs in a process whose clock is shifted (support/skew.mjs): claims a key and extends its lease on
 * a shared store, prints what it saw as JSON, and exits without releasing (as a crash would).
 */
import { openStore } from '../../../src/cli/stores.js';

const { url, name, key, leaseMs, liveKey, lapsedKey } = JSON.parse(process.env.ONCEONLY_SKEW_CHILD!) as {
  url: string;
  name: string;
  key: string;
  leaseMs: number;
  /** Held by a clean process under a long lease: a clock an hour fast must still see it in flight. */
  liveKey: string;
  /** Its lease ran out on the store's clock: a clock an hour slow must still take it over. */
  lapsedKey: string;
};
const opened = await openStore(url, name);
// The extend's end may be later than the claim's by at most the time between them, measured here
// on the monotonic clock (the preload shifts only Date).
const started = performance.now();
const claim = await opened.store.claim(key, { leaseMs });
if (claim.status !== 'acquired')
  throw new Error(`skew child: expected to acquire ${key}, got ${claim.status}`);
const extended = await opened.store.extend(claim.lease, { leaseMs });
const between = performance.now() - started;
const view = await opened.store.inspect(key);
const live = await opened.store.claim(liveKey, { leaseMs });
const lapsed = await opened.store.claim(lapsedKey, { leaseMs });
process.stdout.write(
  `${JSON.stringify({
    localNow: Date.now(),
    extended,
    claimedUntil: claim.lease.expiresAt.getTime(),
    viewUntil: view?.expiresAt.getTime(),
    between,
    live: live.status,
    lapsed: lapsed.status === 'acquired' ? `acquired ${lapsed.lease.attempt}` : lapsed.status,
  })}\n`,
);
await opened.close();
process.exit(0);
