import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { decodeSignature } from './shared.js';

// The rules decodeSignature keeps, written the slow and obvious way.
function reference(value: string, encoding: 'hex' | 'base64'): Buffer | undefined {
  if (value.length === 0 || value.length > 1024) return undefined;
  if (encoding === 'hex') return /^(?:[0-9a-fA-F]{2})+$/.test(value) ? Buffer.from(value, 'hex') : undefined;
  const match = /^([A-Za-z0-9+/]*)(={0,2})$/.exec(value);
  if (!match) return undefined;
  const tail = match[1]!.length % 4;
  const ok = match[2] === '' ? tail !== 1 : match[2] === '=' ? tail === 3 : tail === 2;
  return ok ? Buffer.from(value, 'base64') : undefined;
}

const hexChars = fc.constantFrom(...'0123456789abcdefABCDEFgxz -=+/_\u00e9\u0000'.split(''));
const base64Chars = fc.constantFrom(...'ABCXYZabcxyz0129+/=-_ .:\n\u00e9\u0100\u0000'.split(''));
const near = (chars: fc.Arbitrary<string>) =>
  fc.oneof(
    fc.string({ unit: chars, maxLength: 90 }),
    fc.string({ maxLength: 90 }),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')),
    fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => Buffer.from(b).toString('hex')),
  );

describe('decodeSignature', () => {
  for (const encoding of ['hex', 'base64'] as const) {
    it(`accepts and decodes exactly what the strict ${encoding} rules accept`, () => {
      fc.assert(
        fc.property(near(encoding === 'hex' ? hexChars : base64Chars), (value) => {
          assert.deepEqual(
            decodeSignature(value, encoding),
            reference(value, encoding),
            JSON.stringify(value),
          );
        }),
        { numRuns: 20_000 },
      );
    });
  }

  it('refuses the near misses by name', () => {
    for (const bad of ['abc', 'zz', '0g', 'ab cd', ' ab'])
      assert.equal(decodeSignature(bad, 'hex'), undefined, bad);
    for (const bad of ['a', 'ab-c', 'ab_c', 'ab c', 'a===', 'ab=c', '=', 'QQ==QQ==', 'QUJD\n'])
      assert.equal(decodeSignature(bad, 'base64'), undefined, bad);
    assert.deepEqual(decodeSignature('QUI=', 'base64'), Buffer.from('AB'));
    assert.deepEqual(decodeSignature('QUI', 'base64'), Buffer.from('AB'));
    assert.deepEqual(decodeSignature('0aFF', 'hex'), Buffer.from([0x0a, 0xff]));
  });
});
