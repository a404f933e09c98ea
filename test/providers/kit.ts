/**
 * The behaviours every provider must show, written once and run against each provider with its
 * own signer (the official SDK where one can sign, else the documented algorithm with node:crypto).
 */
import { strict as assert } from 'node:assert';
import { it } from 'node:test';
import {
  ConfigError,
  createReceiver,
  type DeliveryResult,
  memoryStore,
  type Provider,
  type RejectionCode,
  VerificationError,
} from '../../src/index.js';
import type { Verified } from '../../src/providers/types.js';
import { toResponse } from '../../src/receiver/http.js';

/** One signed request as it would reach the receiver. */
export interface Delivery {
  body: string | Uint8Array;
  headers: Record<string, string>;
  url?: string;
}

export const NOW = new Date('2026-11-30T05:00:00.000Z');
export const MINUTE = 60_000;

/**
 * A body with multibyte UTF-8 (é, –, 😀, 中文), JSON escapes (`\u00e9`, `\"`, `\\`, `\n`, `\u2028`)
 * and irregular whitespace: re-serialising it changes its bytes, so only raw-byte verification passes.
 */
export const TRICKY_TEXT = 'café – 😀 中文 "quoted" back\\slash\nline\u2028sep';
export const TRICKY_JSON = '"caf\\u00e9 – 😀 中文 \\"quoted\\" back\\\\slash\\nline\\u2028sep"';

export interface ProviderSpec<S> {
  /** The provider's name (first segment of its keys). */
  name: string;
  /** A fresh credential: what signs (`signer`) and what the provider is configured with (`config`). */
  credential(): { signer: S; config: string };
  /** Builds the provider with one config or several (rotation). */
  make(config: string | string[]): Provider<any, any>;
  /** A JSON body (built at `at`, for providers that put the time inside the body) holding TRICKY_JSON in a `note` field. */
  body(at: Date): string;
  /** Signs `body` at `at`, as the provider would send it. */
  sign(body: string, signer: S, at: Date): Delivery;
  /**
   * What `verify` must report for `body(NOW)`. `typeSigned`: whether the signature covers the type
   * (`false` also stands for absent).
   */
  expect: { dedup: 'id' | 'body'; id?: string; type?: string; key?: string; typeSigned: boolean };
  /** Reads the tricky text back from the verified event. */
  noteOf(event: unknown): unknown;
  /** Tolerance in ms when the scheme has a timestamp; `undefined` when it has none. */
  toleranceMs: number | undefined;
  /** Builds a delivery that offers several signatures, only one of them made with `good`. */
  several?: (body: string, good: S, bad: readonly S[], at: Date) => Delivery;
  /** Changes signed bytes (default: one character of the note in the body). */
  tamper?: (d: Delivery) => Delivery;
  /** Swaps an unsigned id header for a fresh value, as a replayer would. */
  freshIdHeader?: (d: Delivery) => Delivery;
  /** Secrets (or keys) a provider must refuse at construction. */
  malformed: string[];
  /** The signature header, for the missing-header case. */
  signatureHeader?: string;
  /** False when a re-serialised JSON body is not a meaningful case (Mailgun signs no body bytes; form bodies). */
  reserialisable?: boolean;
  /**
   * How a correctly signed body that is not JSON fares:
   * - `'authenticate-only'` (default): `authenticate` passes, `verify` rejects it as `invalid_body`.
   * - `'both-reject'`: the signed material (Mailgun) or the timestamp (Linear) is inside the body,
   *   so `authenticate` must parse it too and both reject it as `invalid_body`.
   * - `'both-accept'`: the scheme's body is a form, not JSON, so both accept it.
   */
  nonJson?: 'authenticate-only' | 'both-reject' | 'both-accept';
}

/** A body that is not JSON (nor a JSON object in any framing), signed correctly by the spec's signer. */
export const NOT_JSON = 'not json {"id": "evt_1" caf\u00e9';

export async function verifyAt(
  provider: Provider<any, any>,
  d: Delivery,
  receivedAt: Date = NOW,
): Promise<Verified<any>> {
  const rawBody = typeof d.body === 'string' ? new TextEncoder().encode(d.body) : d.body;
  return await provider.verify({ rawBody, headers: new Headers(d.headers), url: d.url, receivedAt });
}

/** Runs `authenticate` on a delivery; fails when the provider has none (every built-in one has). */
export async function authenticateAt(
  provider: Provider<any, any>,
  d: Delivery,
  receivedAt: Date = NOW,
): Promise<void> {
  assert.equal(typeof provider.authenticate, 'function', `${provider.name} has no authenticate()`);
  const rawBody = typeof d.body === 'string' ? new TextEncoder().encode(d.body) : d.body;
  const result = await provider.authenticate?.({
    rawBody,
    headers: new Headers(d.headers),
    url: d.url,
    receivedAt,
  });
  assert.equal(result, undefined, 'authenticate returns nothing');
}

export async function rejects(
  provider: Provider<any, any>,
  d: Delivery,
  code: RejectionCode,
  receivedAt: Date = NOW,
): Promise<void> {
  await rejectsWith(verifyAt(provider, d, receivedAt), code);
}

/** `authenticate` rejects the delivery with `code`. */
export async function authenticateRejects(
  provider: Provider<any, any>,
  d: Delivery,
  code: RejectionCode,
  receivedAt: Date = NOW,
): Promise<void> {
  await rejectsWith(authenticateAt(provider, d, receivedAt), code);
}

/** `verify` and `authenticate` both accept the delivery; returns what `verify` gave. */
export async function acceptsBoth(
  provider: Provider<any, any>,
  d: Delivery,
  receivedAt: Date = NOW,
): Promise<Verified<any>> {
  const verified = await verifyAt(provider, d, receivedAt);
  await authenticateAt(provider, d, receivedAt);
  return verified;
}

/** `verify` and `authenticate` both reject the delivery with the same `code`. */
export async function rejectsBoth(
  provider: Provider<any, any>,
  d: Delivery,
  code: RejectionCode,
  receivedAt: Date = NOW,
): Promise<void> {
  await rejects(provider, d, code, receivedAt);
  await authenticateRejects(provider, d, code, receivedAt);
}

async function rejectsWith(pending: Promise<unknown>, code: RejectionCode): Promise<void> {
  await assert.rejects(pending, (error: unknown) => {
    assert.ok(error instanceof VerificationError, `expected a VerificationError, got ${String(error)}`);
    assert.equal(error.code, code);
    assert.match(error.message, /^onceonly: /);
    return true;
  });
}

/** Runs deliveries through a real receiver over a memory store; counts handler runs. */
export async function receiveAll(
  provider: Provider<any, any>,
  deliveries: readonly Delivery[],
  receivedAt: Date = NOW,
): Promise<{ results: DeliveryResult[]; runs: number }> {
  let runs = 0;
  const receiver = createReceiver({
    provider,
    store: memoryStore(),
    handler: () => {
      runs += 1;
    },
  });
  const results: DeliveryResult[] = [];
  for (const d of deliveries) {
    results.push(await receiver.receive({ rawBody: d.body, headers: d.headers, url: d.url, receivedAt }));
  }
  return { results, runs };
}

export function withHeader(d: Delivery, name: string, value: string | undefined): Delivery {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(d.headers)) if (k.toLowerCase() !== name.toLowerCase()) headers[k] = v;
  if (value !== undefined) headers[name] = value;
  return { ...d, headers };
}

function defaultTamper(d: Delivery): Delivery {
  const text = typeof d.body === 'string' ? d.body : new TextDecoder().decode(d.body);
  const changed = text.replace('caf', 'cof');
  assert.notEqual(changed, text, 'the tamper must change the body');
  return { ...d, body: changed };
}

/** A credential whose signer and configured secret are one string, fresh from `make` each time. */
export function oneSecret(make: () => string): () => { signer: string; config: string } {
  return () => {
    const k = make();
    return { signer: k, config: k };
  };
}

/** The shared cases, registered with node:test under the caller's `describe`. */
export function providerCases<S>(spec: ProviderSpec<S>): void {
  const a = spec.credential();
  const b = spec.credential();
  const body = spec.body(NOW);
  const signed = spec.sign(body, a.signer, NOW);

  it('verifies and authenticates a delivery signed the way the provider signs it', async () => {
    const provider = spec.make(a.config);
    const verified = await acceptsBoth(provider, signed);
    assert.equal(verified.dedup, spec.expect.dedup);
    if ('id' in spec.expect) assert.equal(verified.id, spec.expect.id);
    if ('type' in spec.expect) assert.equal(verified.type, spec.expect.type);
    if ('key' in spec.expect) assert.equal(verified.key, spec.expect.key);
    assert.equal(verified.typeSigned ?? false, spec.expect.typeSigned, 'typeSigned');
  });

  it('reads multibyte UTF-8 and JSON escapes back exactly from the raw bytes', async () => {
    const verified = await verifyAt(spec.make(a.config), signed);
    assert.equal(spec.noteOf(verified.event), TRICKY_TEXT);
  });

  if (spec.reserialisable !== false) {
    it('rejects the same event re-serialised (as a body-parsing framework would) as invalid_signature', async () => {
      const reserialised = JSON.stringify(JSON.parse(body));
      assert.notEqual(reserialised, body);
      const original = spec.sign(body, a.signer, NOW);
      await rejectsBoth(spec.make(a.config), { ...original, body: reserialised }, 'invalid_signature');
    });
  }

  it('rejects a tampered body as invalid_signature', async () => {
    await rejectsBoth(spec.make(a.config), (spec.tamper ?? defaultTamper)(signed), 'invalid_signature');
  });

  it('rejects a delivery signed with another secret as invalid_signature', async () => {
    await rejectsBoth(spec.make(b.config), signed, 'invalid_signature');
  });

  it('accepts deliveries signed with either secret while rotating', async () => {
    const provider = spec.make([b.config, a.config]);
    await acceptsBoth(provider, signed);
    await acceptsBoth(provider, spec.sign(body, b.signer, NOW));
  });

  const nonJson = spec.nonJson ?? 'authenticate-only';
  it(
    nonJson === 'authenticate-only'
      ? 'authenticates a correctly signed body that is not JSON, which verify rejects as invalid_body'
      : nonJson === 'both-reject'
        ? 'rejects a correctly signed body that is not JSON as invalid_body in authenticate too (signed material inside the body)'
        : 'accepts a correctly signed body that is not JSON in both (the scheme signs a form)',
    async () => {
      const provider = spec.make(a.config);
      const d = spec.sign(NOT_JSON, a.signer, NOW);
      if (nonJson === 'authenticate-only') {
        await authenticateAt(provider, d);
        await rejects(provider, d, 'invalid_body');
        await authenticateRejects(provider, (spec.tamper ?? defaultTamper)(d), 'invalid_signature');
      } else if (nonJson === 'both-reject') {
        await rejectsBoth(provider, d, 'invalid_body');
      } else {
        await acceptsBoth(provider, d);
      }
    },
  );

  if (spec.several) {
    const several = spec.several;
    it('accepts one good signature among several bad ones in one header', async () => {
      const c = spec.credential();
      const d = several(body, a.signer, [b.signer, c.signer], NOW);
      await acceptsBoth(spec.make(a.config), d);
      await rejectsBoth(spec.make(spec.credential().config), d, 'invalid_signature');
    });
  }

  if (spec.signatureHeader) {
    const name = spec.signatureHeader;
    it(`rejects a delivery without ${name} as missing_header`, async () => {
      await rejectsBoth(spec.make(a.config), withHeader(signed, name, undefined), 'missing_header');
    });
    it(`rejects a ${name} that holds no signature as malformed_header`, async () => {
      await rejectsBoth(
        spec.make(a.config),
        withHeader(signed, name, '%%%not-a-signature%%%'),
        'malformed_header',
      );
    });
  }

  if (spec.toleranceMs !== undefined) {
    const tolerance = spec.toleranceMs;
    it('rejects a delivery signed longer ago than the tolerance as timestamp_too_old', async () => {
      const at = new Date(NOW.getTime() - tolerance - 10_000);
      await rejectsBoth(spec.make(a.config), spec.sign(spec.body(at), a.signer, at), 'timestamp_too_old');
    });
    it('rejects a delivery signed further in the future than the tolerance as timestamp_too_new', async () => {
      const at = new Date(NOW.getTime() + tolerance + 10_000);
      await rejectsBoth(spec.make(a.config), spec.sign(spec.body(at), a.signer, at), 'timestamp_too_new');
    });
    it('accepts an old delivery measured against the receivedAt the caller supplies (queued processing)', async () => {
      const at = new Date(NOW.getTime() - 3 * tolerance);
      await acceptsBoth(
        spec.make(a.config),
        spec.sign(spec.body(at), a.signer, at),
        new Date(at.getTime() + 1000),
      );
    });
    it('refuses an invalid receivedAt instead of letting a stale delivery through', async () => {
      const at = new Date(NOW.getTime() - 30 * 86_400_000);
      const stale = spec.sign(spec.body(at), a.signer, at);
      const invalid = new Date('not a date');
      for (const pending of [
        verifyAt(spec.make(a.config), stale, invalid),
        authenticateAt(spec.make(a.config), stale, invalid),
      ]) {
        await assert.rejects(
          pending,
          (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
        );
      }
      const receiver = createReceiver({
        provider: spec.make(a.config),
        store: memoryStore(),
        handler: () => {},
      });
      await assert.rejects(
        receiver.receive({
          rawBody: stale.body,
          headers: stale.headers,
          url: stale.url,
          receivedAt: invalid,
        }),
        (error: unknown) => error instanceof ConfigError && /receivedAt/.test(error.message),
      );
    });
    it('accepts a delivery just inside the tolerance on either side', async () => {
      for (const shift of [-tolerance + 5_000, tolerance - 5_000]) {
        const at = new Date(NOW.getTime() + shift);
        await acceptsBoth(spec.make(a.config), spec.sign(spec.body(at), a.signer, at));
      }
    });
  }

  it('refuses a malformed secret at construction with a ConfigError', () => {
    for (const bad of spec.malformed) {
      assert.throws(
        () => spec.make(bad),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_secret',
        `secret ${JSON.stringify(bad.slice(0, 12))} should be refused`,
      );
    }
  });

  it('never echoes the secret or the expected signature in a rejection message or response', async () => {
    const tampered = (spec.tamper ?? defaultTamper)(signed);
    // What the verifier computed for the tampered bytes: the same bytes signed with the right key.
    const tamperedText =
      typeof tampered.body === 'string' ? tampered.body : new TextDecoder().decode(tampered.body);
    const expected = spec.sign(tamperedText, a.signer, NOW);
    // The header values that change with the body are the signatures (offered and expected).
    const signatures = Object.entries(expected.headers)
      .filter(([name, value]) => signed.headers[name] !== value)
      .flatMap(([name, value]) => [value, signed.headers[name] ?? '']);
    // Whole values and their parts (`t=..,v1=<hex>` holds the signature as one part).
    const secrets = [
      a.config,
      ...signatures,
      ...signatures.flatMap((value) => value.split(/[\s,;=]+/)),
    ].filter((value) => value.length >= 16);
    const leaks = (text: string) => secrets.filter((value) => text.includes(value));
    let message = '';
    try {
      await verifyAt(spec.make(a.config), tampered);
      assert.fail('expected a rejection');
    } catch (error) {
      message = String((error as Error).message);
    }
    assert.deepEqual(leaks(message), [], 'the message contains the secret or a signature');
    const receiver = createReceiver({
      provider: spec.make(a.config),
      store: memoryStore(),
      handler: () => {},
    });
    const response = toResponse(
      await receiver.receive({
        rawBody: tampered.body,
        headers: tampered.headers,
        url: tampered.url,
        receivedAt: NOW,
      }),
    );
    assert.equal(response.status, 401);
    const text = `${await response.text()} ${JSON.stringify([...response.headers])}`;
    assert.deepEqual(leaks(text), [], 'the response contains the secret or a signature');
  });

  it('processes a delivery once: the same delivery again is a duplicate and the handler ran once', async () => {
    const { results, runs } = await receiveAll(spec.make(a.config), [signed, signed]);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'duplicate'],
    );
    assert.equal(runs, 1);
    // A batch (SendGrid) is keyed per event: its one event's key is the delivery's.
    const keyOf = (r: DeliveryResult | undefined) => r?.batch?.[0]?.key ?? r?.key;
    assert.equal(keyOf(results[0]), keyOf(results[1]));
    assert.ok(keyOf(results[0])?.startsWith(`${spec.name}:`));
  });

  it('rejects a tampered delivery through the receiver without running the handler', async () => {
    const { results, runs } = await receiveAll(spec.make(a.config), [(spec.tamper ?? defaultTamper)(signed)]);
    assert.equal(results[0]?.outcome, 'rejected');
    assert.equal(results[0]?.status, 401);
    assert.equal(results[0]?.code, 'invalid_signature');
    assert.equal(runs, 0);
  });

  if (spec.freshIdHeader) {
    const fresh = spec.freshIdHeader;
    it('catches a replay with a freshly minted unsigned id header as a duplicate', async () => {
      const replay = fresh(signed);
      const { results, runs } = await receiveAll(spec.make(a.config), [signed, replay]);
      assert.deepEqual(
        results.map((r) => r.outcome),
        ['processed', 'duplicate'],
      );
      assert.equal(runs, 1);
    });
  }
}

/** How a verification ended: `ok`, or the code of the `VerificationError` it was refused with (any other error fails). */
export async function code(pending: Promise<unknown>): Promise<string> {
  try {
    await pending;
    return 'ok';
  } catch (error) {
    assert.ok(error instanceof VerificationError, String(error));
    return error.code;
  }
}
