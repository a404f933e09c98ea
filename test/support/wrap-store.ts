import type { Store } from '../../src/core/types.js';

const METHODS = ['claim', 'confirm', 'release', 'extend', 'record', 'advance', 'inspect', 'close'] as const;

/**
 * A store that runs `before(method)` ahead of every call to `inner` (to count calls, or to throw as
 * an unreachable server would), then forwards the call.
 */
export function wrapStore(inner: Store, before: (method: (typeof METHODS)[number]) => void): Store {
  const out: Record<string, unknown> = {};
  for (const name of METHODS) {
    out[name] = async (...args: unknown[]) => {
      before(name);
      return (inner[name] as (...a: unknown[]) => Promise<unknown>).apply(inner, args);
    };
  }
  return out as unknown as Store;
}
