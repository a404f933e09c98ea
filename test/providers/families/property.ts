/**
 * The property every scheme family must have, checked with fast-check over a declaration of that
 * family: a delivery signed over random bytes verifies, and any single-byte change to the body, the
 * signature or a signed header does not.
 *
 * "Change" means a change of what is signed: hex digits are one digit in either case (`a` and `A`),
 * so flipping the case of a hex letter inside a hex signature is not counted as a change; nothing
 * else is excused. The mutations lean towards the end of each value and towards characters next to
 * the original (`x ^ 1`, `x ^ 2`...), where pad bits and near-miss encodings live.
 */
import { strict as assert } from 'node:assert';
import fc from 'fast-check';
import { VerificationError } from '../../../src/index.js';
import type { Provider } from '../../../src/providers/types.js';

export interface Signed {
  readonly headers: Record<string, string>;
  readonly url?: string;
}

export interface PropertySpec {
  /** The provider built from a declaration of the family under test. */
  readonly provider: Provider<any, any>;
  /** Signs `body` at `at` as the sender would. */
  sign(body: Uint8Array, at: Date): Signed | Promise<Signed>;
  /** The header holding the signature (or token). */
  readonly signatureHeader: string;
  /** Hex signature in that header: case flips of `a-f` are no change. */
  readonly hexSignature?: boolean;
  /** Other headers whose values are signed (a timestamp header, `webhook-id`). */
  readonly signedHeaders?: readonly string[];
  /**
   * Whether a change to the body must be refused. `false` for schemes that do not sign the body
   * (a shared token); `'canonical'` when only a change of the canonical form counts (URL + form:
   * the decoded parameters are signed, not their encoding), judged by `canonical`.
   * @default true
   */
  readonly bodySigned?: boolean | 'canonical';
  /** The canonical signed form of a body, for `bodySigned: 'canonical'`. */
  canonical?(body: Uint8Array): string;
  /**
   * Header values that are the same credential written another way, by the scheme's own rules (the
   * case of an auth scheme name, RFC 9110 §11.1): such a change is no change.
   */
  equivalent?(header: string, before: string, after: string): boolean;
  /** The random bodies. @default up to 600 random bytes */
  readonly body?: fc.Arbitrary<Uint8Array>;
  /** @default 300 */
  readonly runs?: number;
}

const AT = new Date('2026-11-30T05:00:00.000Z');

/** Runs `authenticate` (what every family shares), resolving to the rejection code or 'ok'. */
export async function outcome(provider: Provider<any, any>, body: Uint8Array, d: Signed): Promise<string> {
  try {
    await provider.authenticate!({
      rawBody: body,
      headers: new Headers(d.headers),
      url: d.url,
      receivedAt: AT,
    });
    return 'ok';
  } catch (error) {
    if (error instanceof VerificationError) return error.code;
    throw error;
  }
}

/** A position: from the start (any), or one of the last three (where pad bits live). */
const positions = fc.oneof(fc.nat(4096), fc.constantFrom(-1, -2, -3));
/** A replacement: a neighbour of the original character (`x ^ mask`) or any printable one. */
const replacements = fc.oneof(
  fc.record({ xor: fc.constantFrom(1, 2, 3, 4, 8, 16, 32) }),
  fc.record({ code: fc.integer({ min: 0x20, max: 0x7e }) }),
);

function caseFlipOfHex(a: string, b: string): boolean {
  return /^[a-fA-F]$/.test(a) && a !== b && a.toLowerCase() === b.toLowerCase();
}

type Mutation = { kind: 'body'; index: number; xor: number };

/**
 * Registers the property as one `fc.assert` (call inside `it`). Each run signs a random body, checks
 * it verifies, then applies one mutation and checks the verdict.
 */
export async function assertFamilyProperty(spec: PropertySpec): Promise<void> {
  const bodies = spec.body ?? fc.uint8Array({ minLength: 0, maxLength: 600 });
  const headersToMutate = [spec.signatureHeader, ...(spec.signedHeaders ?? [])];
  const bodySigned = spec.bodySigned ?? true;

  const scenario = bodies.chain((body) =>
    fc.tuple(
      fc.constant(body),
      fc.oneof(
        body.length === 0
          ? fc.constant<Mutation>({ kind: 'body', index: -1, xor: 0 })
          : fc.record({
              kind: fc.constant('body' as const),
              index: positions.map((at) => (at < 0 ? Math.max(0, body.length + at) : at % body.length)),
              xor: fc.integer({ min: 1, max: 255 }),
            }),
        fc.record({ name: fc.constantFrom(...headersToMutate), at: positions, by: replacements }),
      ),
    ),
  );

  await fc.assert(
    fc.asyncProperty(scenario, async ([body, pick]) => {
      const signed = await spec.sign(body, AT);
      assert.equal(await outcome(spec.provider, body, signed), 'ok', 'a valid delivery verifies');

      if ('kind' in pick) {
        if (pick.index < 0) return; // an empty body has no byte to change
        const changed = Uint8Array.from(body);
        changed[pick.index] = changed[pick.index]! ^ pick.xor;
        const verdict = await outcome(spec.provider, changed, signed);
        if (bodySigned === false) {
          assert.equal(verdict, 'ok', 'the body is not signed by this scheme');
        } else if (bodySigned === 'canonical' && spec.canonical!(changed) === spec.canonical!(body)) {
          assert.equal(verdict, 'ok', 'a re-encoding of the same signed parameters verifies');
        } else {
          assert.notEqual(verdict, 'ok', `a body with byte ${pick.index} changed verifies`);
        }
        return;
      }
      const value = signed.headers[pick.name];
      assert.ok(value !== undefined && value.length > 0, `the delivery has ${pick.name}`);
      const index = pick.at < 0 ? Math.max(0, value.length + pick.at) : pick.at % value.length;
      const original = value[index]!;
      const code = 'xor' in pick.by ? original.charCodeAt(0) ^ pick.by.xor : pick.by.code;
      // Header values are printable ASCII; a draw outside it, or of the same character, is no change.
      if (code < 0x20 || code > 0x7e || code === original.charCodeAt(0)) return;
      const char = String.fromCharCode(code);
      if (pick.name === spec.signatureHeader && spec.hexSignature && caseFlipOfHex(original, char)) return;
      const mutated = value.slice(0, index) + char + value.slice(index + 1);
      if (spec.equivalent?.(pick.name, value, mutated)) return;
      const verdict = await outcome(spec.provider, body, {
        ...signed,
        headers: { ...signed.headers, [pick.name]: mutated },
      });
      assert.notEqual(
        verdict,
        'ok',
        `${pick.name} ${JSON.stringify(value)} changed to ${JSON.stringify(mutated)} verifies`,
      );
    }),
    { numRuns: spec.runs ?? 300 },
  );
}
