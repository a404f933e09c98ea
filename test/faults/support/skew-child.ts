/**
 * Runs in a process whose clock is shifted (support/skew.mjs): claims a key and extends its lease on
 * a shared store, prints what it saw as JSON, and exits without releasing (as a crash would).
 */
import { openStore } from '../../../src/cli/stores.js';

const { url, name, key, leaseMs } = JSON.parse(process.env.ONCEONLY_SKEW_CHILD!) as {
  url: string;
  name: string;
  key: string;
  leaseMs: number;
};
const opened = await openStore(url, name);
const claim = await opened.store.claim(key, { leaseMs });
if (claim.status !== 'acquired')
  throw new Error(`skew child: expected to acquire ${key}, got ${claim.status}`);
const extended = await opened.store.extend(claim.lease, { leaseMs });
const view = await opened.store.inspect(key);
process.stdout.write(
  `${JSON.stringify({ localNow: Date.now(), extended, claimedUntil: claim.lease.expiresAt.getTime(), viewUntil: view?.expiresAt.getTime() })}\n`,
);
await opened.close();
process.exit(0);
