import { strict as assert } from 'node:assert';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { afterEach, describe, it, mock } from 'node:test';
import type { HmacAlgorithm } from '../shared.js';
import { macOf, macPath } from './mac.js';

// The CommonJS face of node:crypto: a method replaced on it reaches every ESM import of it once
// syncBuiltinESMExports() runs, so the spies below see the calls mac.ts makes.
const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
const { createHmac, createSecretKey, randomBytes } = crypto;
const ALGORITHMS: HmacAlgorithm[] = ['sha1', 'sha256', 'sha512'];

function reference(algorithm: HmacAlgorithm, key: Buffer, parts: readonly (Uint8Array | string)[]): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

// A small deterministic generator, so a failure names a case that can be run again.
function generator(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s % n;
  };
}

describe('macOf (HMAC on the one-shot hash)', () => {
  afterEach(() => {
    mock.restoreAll();
    syncBuiltinESMExports();
  });

  it('runs on the one-shot hash on this Node (its load-time check against createHmac passed)', () => {
    assert.equal(macPath, 'one-shot');
  });

  it('equals createHmac for every algorithm, key length (0 to 300 bytes, past every block) and mix of parts', () => {
    const next = generator(12);
    const texts = ['', 't=1764000000.', 'é', '€uro', '😀', '\ud800 lone', 'x'.repeat(1_000), '\u0000|.'];
    let cases = 0;
    for (const algorithm of ALGORITHMS) {
      for (let keyLength = 1; keyLength <= 300; keyLength += 1 + next(9)) {
        const keyBytes = randomBytes(keyLength);
        const key = createSecretKey(keyBytes);
        const parts: (Uint8Array | string)[] = [];
        for (let p = next(4); p >= 0; p--) {
          if (next(2) === 0) parts.push(texts[next(texts.length)]!);
          else {
            // A view into a larger buffer: its offset must be honoured.
            const backing = randomBytes(next(5_000) + 8);
            const from = next(8);
            parts.push(new Uint8Array(backing.buffer, backing.byteOffset + from, backing.length - from));
          }
        }
        assert.deepEqual(
          Buffer.from(macOf(algorithm, key, parts)),
          reference(algorithm, keyBytes, parts),
          `${algorithm}, key of ${keyLength} bytes, parts ${parts.map((p) => (typeof p === 'string' ? JSON.stringify(p.slice(0, 20)) : `${p.byteLength} bytes`)).join(' + ')}`,
        );
        cases++;
      }
    }
    assert.ok(cases > 150, `${cases} cases`);
  });

  it('equals createHmac on both sides of the 64 KiB copy limit, and on an empty message', () => {
    const keyBytes = Buffer.from('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');
    const key = createSecretKey(keyBytes);
    for (const algorithm of ALGORITHMS) {
      for (const size of [0, 1, 65_535, 65_536, 65_537, 70_000, 1_048_576]) {
        const body = randomBytes(size);
        assert.deepEqual(
          Buffer.from(macOf(algorithm, key, ['1764000000.', body])),
          reference(algorithm, keyBytes, ['1764000000.', body]),
          `${algorithm}, ${size} bytes`,
        );
      }
    }
  });

  it('takes the one-shot path for a webhook-sized body and createHmac past the copy limit', () => {
    const spy = mock.method(crypto, 'createHmac');
    syncBuiltinESMExports();
    const key = createSecretKey(Buffer.from('a secret'));
    macOf('sha256', key, ['t.', Buffer.alloc(2_048, 1)]);
    assert.equal(spy.mock.callCount(), 0, 'no createHmac for 2 KiB');
    macOf('sha256', key, ['t.', Buffer.alloc(70_000, 1)]);
    assert.equal(spy.mock.callCount(), 1, 'createHmac for 70,000 bytes');
  });

  it('derives each key and algorithm apart: two keys, and one key under two algorithms, never share pads', () => {
    const a = Buffer.from('first secret');
    const b = Buffer.from('second secret');
    const ka = createSecretKey(a);
    const kb = createSecretKey(b);
    const body = Buffer.from('{"id":"evt_1"}');
    for (let round = 0; round < 3; round++) {
      assert.deepEqual(Buffer.from(macOf('sha256', ka, [body])), reference('sha256', a, [body]));
      assert.deepEqual(Buffer.from(macOf('sha256', kb, [body])), reference('sha256', b, [body]));
      assert.deepEqual(Buffer.from(macOf('sha1', ka, [body])), reference('sha1', a, [body]));
      assert.deepEqual(Buffer.from(macOf('sha512', ka, [body])), reference('sha512', a, [body]));
    }
  });

  it('a part that is no byte array (DataView, wider typed array, ArrayBuffer) is hashed or refused as createHmac does, never read from the last message', () => {
    const keyBytes = Buffer.from('whsec_dv');
    const key = createSecretKey(keyBytes);
    const legit = Buffer.from('{"id":"evt_1","amount":100}');
    const forged = Buffer.from('{"id":"evt_1","amount":999}');
    const views: unknown[] = [
      new DataView(forged.buffer, forged.byteOffset, forged.byteLength),
      new Uint16Array(forged.buffer.slice(forged.byteOffset, forged.byteOffset + 26)),
      new Float64Array(2),
    ];
    for (const view of views) {
      macOf('sha256', key, ['1.', legit]); // the last message, left in the shared buffer
      const part = view as Uint8Array;
      assert.deepEqual(
        Buffer.from(macOf('sha256', key, ['1.', part])),
        reference('sha256', keyBytes, ['1.', part]),
      );
    }
    const arrayBuffer = forged.buffer.slice(forged.byteOffset, forged.byteOffset + forged.byteLength);
    macOf('sha256', key, ['1.', legit]);
    assert.throws(() => createHmac('sha256', keyBytes).update(arrayBuffer as unknown as Uint8Array));
    assert.throws(() => macOf('sha256', key, ['1.', arrayBuffer as unknown as Uint8Array]));
  });

  it('refuses a key that is not a secret key as createHmac does', () => {
    const { publicKey } = crypto.generateKeyPairSync('ed25519');
    assert.throws(() => macOf('sha256', publicKey, ['x']), /key/i);
  });
});
