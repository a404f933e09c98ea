import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeSignature, decodeStrict } from '../../../src/providers/shared.js';

// The rules, the slow and obvious way: a value decodes when the lenient decoder takes it and
// encoding the bytes again gives the value back (padding included for base64, none for
// base64url): one spelling per signature.
function reference(value: string, encoding: 'base64' | 'base64url'): Buffer | undefined {
  if (encoding === 'base64') {
    const bytes = decodeSignature(value, 'base64');
    if (!bytes) return undefined;
    return bytes.toString('base64') === value ? bytes : undefined;
  }
  if (value.length === 0 || value.length > 16_384 || !/^[A-Za-z0-9_-]+$/.test(value)) return undefined;
  const bytes = Buffer.from(value, 'base64url');
  return bytes.toString('base64url') === value ? bytes : undefined;
}

const chars = fc.constantFrom(...'ABCXYZabcxyz0129+/=-_ .:\u00e9'.split(''));
const values = fc.oneof(
  fc.string({ unit: chars, maxLength: 90 }),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
  fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b).toString('base64url')),
  // A canonical encoding with one character changed: the pad-bit twins among them.
  fc
    .tuple(fc.uint8Array({ minLength: 1, maxLength: 64 }), fc.nat(), fc.constantFrom(1, 2, 3, 4, 8))
    .map(([b, at, xor]) => {
      const s = Buffer.from(b).toString('base64');
      const i = at % s.length;
      return s.slice(0, i) + String.fromCharCode(s.charCodeAt(i) ^ xor) + s.slice(i + 1);
    }),
);

describe('decodeStrict', () => {
  for (const encoding of ['base64', 'base64url'] as const) {
    it(`decodes exactly the canonical ${encoding} spellings`, () => {
      fc.assert(
        fc.property(values, (value) => {
          assert.deepEqual(decodeStrict(value, encoding), reference(value, encoding), JSON.stringify(value));
        }),
        { numRuns: 20_000 },
      );
    });
  }

  it('refuses a pad-bit twin and keeps hex case-insensitive', () => {
    assert.deepEqual(decodeStrict('QQ==', 'base64'), Buffer.from('A'));
    assert.equal(decodeStrict('QQ', 'base64'), undefined);
    assert.equal(decodeStrict('QR==', 'base64'), undefined);
    assert.deepEqual(Buffer.from('QR==', 'base64'), Buffer.from('A'));
    assert.equal(decodeStrict('QUJ', 'base64url'), undefined);
    assert.deepEqual(decodeStrict('QUI', 'base64url'), Buffer.from('AB'));
    assert.deepEqual(decodeStrict('0aFF', 'hex'), decodeStrict('0Aff', 'hex'));
  });
});
