/**
 * The Redis store's durable steps (`store.steps` and `store.inbox.steps`, see StepStore): a hash of
 * name → result beside each claim key (in its slot, named as slots.ts says) or inbox entry
 * (`<base>s:<key>`, under the entry's hash tag), written by the key's owner only, in one script
 * that checks the owner and writes; kept and dropped by the other scripts as scripts.ts and
 * inbox-scripts.ts say.
 */
import type { StepStore } from '../../core/steps.js';
import type { Lease } from '../../core/types.js';
import { text } from './inbox-values.js';
import type { Script } from './scripts.js';

/**
 * Leases that saved a step (through any store object): the only ones of a life's first attempt
 * whose key can have steps, so the only ones whose confirm, release or extend must name them. A
 * later attempt's always may (an earlier owner's).
 */
const stepped = new WeakSet<Lease>();

/** Whether the lease's key may hold steps: its confirm must then delete them in the same script. */
export const mayHaveSteps = (lease: Lease): boolean => lease.attempt > 1 || stepped.has(lease);

/** The key prefix an ioredis client (or Cluster) puts before every key it sends, if any. */
export function clientPrefixOf(client: object): string {
  const prefix = (client as { options?: { keyPrefix?: unknown } }).options?.keyPrefix;
  return typeof prefix === 'string' || Buffer.isBuffer(prefix) ? prefix.toString() : '';
}

export interface StepScripts {
  /** ARGV: owner, name, result. 1 saved, 0 not the owner's. */
  save: Script;
  /** The steps as {name, result, ...}. */
  load: Script;
  /** What the save script compares: the lease's owner, or undefined when no owner can have it. */
  owner(lease: Lease): string | undefined;
  /** Runs a script over the lease's key and its steps, mapping failures. */
  run(what: string, s: Script, lease: Lease, args: string[]): Promise<unknown>;
}

/** The steps of a claim key or an inbox entry, by their scripts. */
export function redisSteps({ save, load, owner, run }: StepScripts): StepStore {
  return {
    async load(lease) {
      const reply = (await run('steps', load, lease, [])) as unknown[] | null;
      const steps = new Map<string, string>();
      // Bulk strings as strings (ioredis, node-redis) or Buffers (the inbox's replies): UTF-8.
      for (let i = 0; reply && i + 1 < reply.length; i += 2) steps.set(text(reply[i]), text(reply[i + 1]));
      return steps;
    },
    async save(lease, name, value) {
      const id = owner(lease);
      if (id === undefined) return false;
      // Before it is sent: a save that lands unanswered must still be deleted by the confirm.
      stepped.add(lease);
      return Number(await run('step', save, lease, [id, name, value])) === 1;
    },
  };
}
