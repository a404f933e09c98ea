import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { VerificationError } from '../errors.js';
import { decodeSignature, parseIsoTimestamp, requireMatchIndex } from './shared.js';

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

describe('requireMatchIndex', () => {
  const b = (s: string) => Buffer.from(s);
  it('returns the first group holding a match, and refuses when none does', () => {
    const groups = [[b('x')], [b('y'), b('z')], [b('z')]];
    assert.equal(requireMatchIndex('p', groups, [b('z')]), 1);
    assert.equal(requireMatchIndex('p', groups, [b('q'), b('x')]), 0);
    assert.throws(
      () => requireMatchIndex('p', groups, [b('q')]),
      (error: unknown) => error instanceof VerificationError && error.code === 'invalid_signature',
    );
  });
});

describe('parseIsoTimestamp', () => {
  const pad = (n: number, width: number) => String(n).padStart(width, '0');
  it('reads every RFC 3339 date-time as Date.UTC does (days past a short month roll over)', () => {
    fc.assert(
      fc.property(
        fc.record({
          year: fc.integer({ min: 1000, max: 9999 }),
          month: fc.integer({ min: 1, max: 12 }),
          day: fc.integer({ min: 1, max: 31 }),
          hour: fc.integer({ min: 0, max: 23 }),
          minute: fc.integer({ min: 0, max: 59 }),
          second: fc.integer({ min: 0, max: 60 }),
          digits: fc.option(fc.stringMatching(/^[0-9]{1,9}$/)),
          offset: fc.option(
            fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 })),
          ),
        }),
        ({ year, month, day, hour, minute, second, digits, offset }) => {
          const fraction = digits === null ? '' : `.${digits}`;
          const zone =
            offset === null ? 'Z' : `${offset[0] ? '+' : '-'}${pad(offset[1], 2)}:${pad(offset[2], 2)}`;
          const value = `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(hour, 2)}:${pad(minute, 2)}:${pad(second, 2)}${fraction}${zone}`;
          const ms = digits === null ? 0 : Number(`${digits}00`.slice(0, 3));
          const shift = offset === null ? 0 : (offset[0] ? 1 : -1) * (offset[1] * 60 + offset[2]) * 60_000;
          assert.equal(
            parseIsoTimestamp('t', value),
            Date.UTC(year, month - 1, day, hour, minute, second, ms) - shift,
            value,
          );
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('refuses what is not an RFC 3339 date-time', () => {
    for (const value of [
      '2026-11-30 05:00:00Z',
      '2026-11-30T05:00:00',
      '2026-11-30T05:00:00.Z',
      '2026-11-30T05:00:00.1234567890Z',
      '2026-13-30T05:00:00Z',
      '2026-11-30T24:00:00Z',
      '2026-11-30T05:00:00+0100',
      '2026-11-30T05:00:00+01:00Z',
      '2026-11-30T05:00:00z',
      '2026-11-30T05:00:0aZ',
    ]) {
      assert.throws(() => parseIsoTimestamp('t', value), VerificationError, value);
    }
  });
});
