/**
 * `onceonly/testing`: the conformance suite every store passes. Run it against your own store:
 *
 * ```ts
 * import { runConformance } from 'onceonly/testing';
 * await runConformance({ name: 'my store', factory: () => myStore({ client }) });
 * ```
 *
 * Works with node:test (the default), any runner whose `describe` and `it` are globals (Jest, Mocha,
 * Vitest with `globals: true`), or any runner passed as `runner: { describe, it }` (Vitest without
 * globals: `import { describe, it } from 'vitest'`).
 */
import type { InboxStore } from '../core/inbox.js';
import type { Store } from '../core/types.js';
import { type CaseContext, type ConformanceCase, conformanceCases, runPrefix } from './cases.js';
import { type InboxCaseContext, type InboxConformanceCase, inboxConformanceCases } from './inbox-cases.js';
import { inboxStepCases } from './inbox-steps-cases.js';

export type { CaseContext, ConformanceCase } from './cases.js';
export { conformanceCases } from './cases.js';
export {
  type HandshakeRequest,
  handshakeRequest,
  type KeyTrust,
  type ProviderOptionsOf,
  providerOptions,
  SENDER_NAMES,
  type SenderName,
  type SignedDelivery,
  type SignedDeliveryOptions,
  senders,
  signedDelivery,
  type TestKeyFetch,
  type TestKeys,
  type TrustOf,
  testKeys,
  testSecret,
} from './deliveries/index.js';
export type { InboxCaseContext, InboxConformanceCase } from './inbox-cases.js';
export { inboxConformanceCases } from './inbox-cases.js';
export { inboxStepCases } from './inbox-steps-cases.js';

/** The two functions of a BDD-style test runner the suite needs. */
export interface TestRunner {
  describe(name: string, body: () => void): unknown;
  it(name: string, body: () => Promise<void>): unknown;
}

export interface ConformanceOptions {
  /** Shown as the suite's name. @default 'store conformance' */
  name?: string;
  /**
   * Makes a store. Every call must return a store over the same backing data (a new client, or a
   * new store object over the same client); each case closes the stores it made. Keys are unique
   * per case and per run, so a shared server or table is fine.
   */
  factory: () => Store | Promise<Store>;
  /** The test runner; by default Vitest/Jest/Mocha globals when present, else node:test. */
  runner?: TestRunner;
  /**
   * The short lease and retention used by the time-based cases, in ms. Raise it for a store on a
   * slow or distant server. Waits are 2.5 times this.
   * @default 250
   */
  shortMs?: number;
  /** Run only the cases whose names include this text. */
  only?: string;
  /**
   * Whether to run the durable-steps cases (`steps: ...`), which need `store.steps`. A store without
   * steps passes `false`; `ctx.step` then throws on it.
   * @default true
   */
  steps?: boolean;
}

/** Whether a case runs under these options: its name includes `only`, and steps are wanted. */
const wanted = (name: string, options: { only?: string | undefined; steps?: boolean | undefined }) =>
  (!options.only || name.includes(options.only)) && (options.steps !== false || !name.startsWith('steps:'));

/** Runs one case against stores from `factory`; throws what the case throws. Closes every store it opened. */
export async function runCase(
  testCase: ConformanceCase,
  factory: () => Store | Promise<Store>,
  options: { shortMs?: number; prefix?: string } = {},
): Promise<void> {
  const shortMs = options.shortMs ?? 250;
  const prefix = options.prefix ?? runPrefix();
  const opened: Store[] = [];
  const open = async () => {
    const store = await factory();
    opened.push(store);
    return store;
  };
  let n = 0;
  const slug = testCase.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40);
  const ctx: CaseContext = {
    key: (suffix) => `${prefix}:${slug}:${n++}${suffix ? `:${suffix}` : ''}`,
    shortMs,
    waitOut: () => new Promise((resolve) => setTimeout(resolve, Math.ceil(shortMs * 2.5))),
    store: open,
  };
  try {
    await testCase.run(await open(), ctx);
  } finally {
    await Promise.allSettled(opened.map((s) => s.close()));
  }
}

/**
 * Registers the conformance suite with the test runner. Await it at the top level of a test file.
 */
export async function runConformance(options: ConformanceOptions): Promise<void> {
  const runner = options.runner ?? (await detectRunner());
  const prefix = runPrefix();
  const cases = conformanceCases.filter((c) => wanted(c.name, options));
  runner.describe(options.name ?? 'store conformance', () => {
    for (const testCase of cases) {
      runner.it(testCase.name, () =>
        runCase(testCase, options.factory, { shortMs: options.shortMs, prefix }),
      );
    }
  });
}

async function detectRunner(): Promise<TestRunner> {
  const g = globalThis as { describe?: TestRunner['describe']; it?: TestRunner['it'] };
  if (typeof g.describe === 'function' && typeof g.it === 'function')
    return { describe: g.describe, it: g.it };
  const nodeTest = await import('node:test');
  return {
    describe: (name, body) => nodeTest.describe(name, body),
    it: (name, body) => nodeTest.it(name, body),
  };
}

export interface InboxConformanceOptions {
  /** Shown as the suite's name. @default 'inbox conformance' */
  name?: string;
  /**
   * Makes an inbox (e.g. `() => postgresStore({ client }).inbox!`). Every call must return an inbox
   * over the same backing data. Keys and receivers are unique per case and run, so a shared table is
   * fine.
   */
  factory: () => InboxStore | Promise<InboxStore>;
  /** The test runner; by default Vitest/Jest/Mocha globals when present, else node:test. */
  runner?: TestRunner;
  /** The short lease and delay of the time-based cases, in ms. Waits are 2.5 times this. @default 250 */
  shortMs?: number;
  /** Run only the cases whose names include this text. */
  only?: string;
  /** Whether to run the durable-steps cases (`steps: ...`), which need `inbox.steps`. @default true */
  steps?: boolean;
  /**
   * The largest delivery your inbox keeps, in bytes, when it keeps less than the 2 MB the hostile
   * inputs case sends (DynamoDB's 400 KB items): that case then sends 40% of it as body and as header.
   */
  maxDeliveryBytes?: number;
}

/** Runs one inbox case against inboxes from `factory`; throws what the case throws. */
export async function runInboxCase(
  testCase: InboxConformanceCase,
  factory: () => InboxStore | Promise<InboxStore>,
  options: { shortMs?: number; prefix?: string; maxDeliveryBytes?: number | undefined } = {},
): Promise<void> {
  const shortMs = options.shortMs ?? 250;
  const prefix = options.prefix ?? runPrefix();
  let n = 0;
  const slug = testCase.name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40);
  const ctx: InboxCaseContext = {
    key: (suffix) => `${prefix}:${slug}:${n++}${suffix ? `:${suffix}` : ''}`,
    receiver: `${prefix}-${slug}`.slice(0, 64),
    shortMs,
    waitOut: () => new Promise((resolve) => setTimeout(resolve, Math.ceil(shortMs * 2.5))),
    inbox: async () => factory(),
    maxDeliveryBytes: options.maxDeliveryBytes,
  };
  await testCase.run(await factory(), ctx);
}

/**
 * Registers the inbox conformance suite with the test runner. Await it at the top level of a test
 * file.
 *
 * ```ts
 * import { runInboxConformance } from 'onceonly/testing';
 * await runInboxConformance({ name: 'my inbox', factory: () => myStore({ client }).inbox! });
 * ```
 */
export async function runInboxConformance(options: InboxConformanceOptions): Promise<void> {
  const runner = options.runner ?? (await detectRunner());
  const prefix = runPrefix();
  const cases = [...inboxConformanceCases, ...inboxStepCases].filter((c) => wanted(c.name, options));
  runner.describe(options.name ?? 'inbox conformance', () => {
    for (const testCase of cases) {
      runner.it(testCase.name, () =>
        runInboxCase(testCase, options.factory, {
          shortMs: options.shortMs,
          prefix,
          maxDeliveryBytes: options.maxDeliveryBytes,
        }),
      );
    }
  });
}
