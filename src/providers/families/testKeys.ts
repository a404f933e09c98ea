/**
 * The mark of `onceonly/testing`'s test keys. The kit signs AWS SNS, PayPal, Plaid, Discord and
 * SendGrid deliveries with key pairs it makes in the process, and hands out `trust`: what a provider
 * is built with in tests to accept them (a public key, or a `fetch` answering the sender's key URLs
 * with a test certificate, and the test root). Every such value is marked here as the kit makes it;
 * a provider whose options carry one says so (`testKeys: true`, and one warning), so a test
 * credential that reached production is seen at start-up.
 *
 * The mark only reports: what a provider trusts is still only what its options name, so nothing
 * (no environment variable, no global switch) makes a provider accept the kit's keys but passing
 * the kit's values to it. The marks are the values the kit made in this process: the functions and
 * arrays themselves, and the public keys and root certificates by their text (a string carries no
 * property). The registry hangs off a `Symbol.for` key, so an ESM and a CommonJS copy of onceonly
 * loaded side by side share it.
 */
const REGISTRY = Symbol.for('onceonly.testKeys');

interface Registry {
  /** The `fetch` functions and arrays the kit handed out. */
  readonly objects: WeakSet<object>;
  /** The public keys and root certificates the kit made, as `normal` writes them. */
  readonly values: Set<string>;
  /** The providers that warned already. */
  readonly warned: Set<string>;
}

const holder = globalThis as { [REGISTRY]?: Registry };

/** The registry, made by the kit's first mark: a process that never made test keys has none. */
function registry(): Registry {
  holder[REGISTRY] ??= { objects: new WeakSet(), values: new Set(), warned: new Set() };
  return holder[REGISTRY];
}

/** A key's text as compared: without whitespace, and hex (Discord's key) in one case. */
const normal = (text: string) => {
  const bare = text.replace(/\s+/g, '');
  return /^[0-9A-Fa-f]+$/.test(bare) ? bare.toLowerCase() : bare;
};

/**
 * Marks a value the kit hands out in a `trust`: a `fetch`, an array of roots, a public key or a
 * root certificate (PEM). Returns it. @internal
 */
export function markTestKeys<T>(value: T): T {
  if (typeof value === 'string') registry().values.add(normal(value));
  else if (typeof value === 'function' || (typeof value === 'object' && value !== null)) {
    registry().objects.add(value);
  }
  return value;
}

/** Whether `value` is one the kit marked (an array: or any of its items). @internal */
export function isTestKeys(value: unknown): boolean {
  const marks = holder[REGISTRY];
  if (marks === undefined) return false;
  if (typeof value === 'string') return marks.values.has(normal(value));
  if (typeof value !== 'function' && (typeof value !== 'object' || value === null)) return false;
  if (marks.objects.has(value)) return true;
  return Array.isArray(value) && value.some((item) => typeof item === 'string' && isTestKeys(item));
}

/** Whether a provider's options carry the kit's test keys (`publicKey`, `fetch`, `certificateRoots`). */
export function trustsTestKeys(options: unknown): boolean {
  if (typeof options !== 'object' || options === null) return false;
  const { publicKey, fetch, certificateRoots } = options as Record<string, unknown>;
  return isTestKeys(publicKey) || isTestKeys(fetch) || isTestKeys(certificateRoots);
}

/**
 * The provider, marked `testKeys: true` when its options carry the kit's test keys; the first such
 * provider of each name warns once (`console.warn`), so a suite that builds many stays readable.
 * @internal
 */
export function flagTestKeys<P extends object>(label: string, provider: P, options: unknown): P {
  if (!trustsTestKeys(options)) return provider;
  const { warned } = registry();
  if (!warned.has(label)) {
    warned.add(label);
    console.warn(
      `onceonly: ${label} trusts onceonly/testing's test keys: for tests only, never in production`,
    );
  }
  return Object.assign(provider, { testKeys: true as const });
}
