/**
 * The Redis inbox's `completeMany`: the leases grouped by key space (one Cluster slot each: see
 * redis/inbox.ts), one script a space, each entry completed only if its lease's token still owns it.
 */
import type { Lease } from '../../core/types.js';

/**
 * Whether each lease's entry was completed, in order. `keysOf` gives a lease's anchor, entry,
 * delivery and steps keys; `run` runs INBOX_COMPLETE_MANY with those keys and the tokens.
 */
export async function completeBySpace(
  leases: readonly Lease[],
  keysOf: (lease: Lease) => string[],
  run: (keys: string[], tokens: string[]) => Promise<unknown>,
): Promise<boolean[]> {
  const done = leases.map(() => false);
  const spaces = new Map<string, { keys: string[]; tokens: string[]; at: number[] }>();
  for (const [i, lease] of leases.entries()) {
    if (lease.token === '') continue;
    const [anchor, ...entry] = keysOf(lease);
    const space = spaces.get(anchor!) ?? { keys: [anchor!], tokens: [], at: [] };
    spaces.set(anchor!, space);
    space.keys.push(...entry.slice(0, 3));
    space.tokens.push(lease.token);
    space.at.push(i);
  }
  await Promise.all(
    [...spaces.values()].map(async ({ keys, tokens, at }) => {
      const reply = (await run(keys, tokens)) as unknown[];
      for (const [j, i] of at.entries()) done[i] = Number(reply[j]) === 1;
    }),
  );
  return done;
}
