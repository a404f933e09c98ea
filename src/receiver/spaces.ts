import { backendOf, type Store } from '../core/types.js';
import { ConfigError } from '../errors.js';
import type { Provider } from '../providers/types.js';

/**
 * Key spaces in use per backend, in this process: two store objects over one client (one Redis
 * prefix, one SQL table) are one backend. A second receiver of the same space is refused unless it
 * is the same endpoint: over the very same provider object (an adapter given the options another
 * receiver was made from), or created again at the same place with the same secret (a module
 * reloaded, a per-request factory); or both receivers named the space explicitly to share it.
 */
const SPACES = Symbol.for('onceonly.keySpaces');
/** One registry per process, shared by the ESM and the CommonJS copies of the package. */
type SpaceRegistry = WeakMap<
  object,
  Map<
    string,
    {
      provider: string;
      identity: string | undefined;
      named: boolean;
      site: string | undefined;
      /** The provider object itself: a second receiver over the very same object is the same endpoint. */
      instance: object;
    }
  >
>;
const global = globalThis as Record<symbol, unknown>;
if (!(global[SPACES] instanceof WeakMap)) global[SPACES] = new WeakMap();
const spaces = global[SPACES] as SpaceRegistry;

/** Where a createReceiver call comes from (file:line:column of its caller), when the stack says. */
export function callSite(): string | undefined {
  const lines = new Error().stack?.split('\n') ?? [];
  // [0] Error, [1] callSite, [2] createReceiver, [3] its caller.
  return lines[3]?.trim();
}

export function takeSpace(
  store: Store,
  space: string,
  provider: Provider<any, any>,
  named: boolean,
  site: string | undefined,
): void {
  const backend = backendOf(store);
  let taken = spaces.get(backend.object);
  if (!taken) {
    taken = new Map();
    spaces.set(backend.object, taken);
  }
  const slot = `${backend.scope}\n${space}`;
  const held = taken.get(slot);
  if (held) {
    const sameEndpoint =
      held.instance === provider ||
      (held.provider === provider.name &&
        held.identity === provider.identity &&
        held.site !== undefined &&
        held.site === site);
    if (sameEndpoint || (held.named && named)) return;
    throw new ConfigError(
      'key_space_taken',
      `onceonly: another receiver on this store already keys its events under '${space}'${
        held.provider === provider.name ? ` (another ${provider.name} endpoint)` : ''
      }, so one of them would swallow the other's events as duplicates. Give each receiver its own name: createReceiver({ name: '${space}-billing', ... }); to share the space on purpose (one event delivered through two subscriptions), set the same name on both explicitly`,
    );
  }
  taken.set(slot, { provider: provider.name, identity: provider.identity, named, site, instance: provider });
}
