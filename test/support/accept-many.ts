/**
 * What the SQL stores' suites of accepts that share their INSERT (`acceptMany`) have in common: a
 * plain accept's input, the statuses of settled accepts, and the case of a key given twice in one
 * statement, the same on every store.
 */
import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import type { InboxAccepted, InboxAcceptInput, InboxStore } from '../../src/core/inbox.js';

/** A plain accept of `key` for the receiver `acme`. */
export const acceptInput = (key: string, fingerprint = `fp-${key}`): InboxAcceptInput => ({
  key,
  fingerprint,
  receiver: 'acme',
  type: 'thing.happened',
  id: key,
  headers: [['x-sig', 'v1']],
  body: Buffer.from(JSON.stringify({ id: key })),
  receivedAt: new Date(),
});

/** Each accept's status, or `rejected`. */
export const statuses = (results: PromiseSettledResult<InboxAccepted>[]): string[] =>
  results.map((r) => (r.status === 'fulfilled' ? r.value.status : 'rejected'));

/**
 * A key given twice in one statement: a lone accept goes first, and the four asked for while it is
 * out go together. Its first accept writes each key; the second reads it back as a duplicate (same
 * fingerprint) or a conflict (another). `stored` reads the two rows back (key, fingerprint).
 */
export async function keyTwiceInOneStatement(
  inbox: InboxStore,
  stored: (a: string, b: string) => Promise<[string, string][]>,
): Promise<void> {
  const run = randomBytes(3).toString('hex');
  const [a, b] = [`twice-a-${run}`, `twice-b-${run}`];
  const results = await Promise.allSettled([
    inbox.accept(acceptInput(`alone-${run}`)),
    inbox.accept(acceptInput(a, 'fp-1')),
    inbox.accept(acceptInput(a, 'fp-1')),
    inbox.accept(acceptInput(b, 'fp-1')),
    inbox.accept(acceptInput(b, 'fp-2')),
  ]);
  assert.deepEqual(statuses(results), ['accepted', 'accepted', 'duplicate', 'accepted', 'conflict']);
  assert.deepEqual(await stored(a, b), [
    [a, 'fp-1'],
    [b, 'fp-1'],
  ]);
}
