import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { newToken } from './crypto.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

describe('newToken', () => {
  it('hands out 32 hex characters (128 bits), never the same twice, across many refills of the batch', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 256 * 40 + 7; i++) {
      const token = newToken();
      assert.match(token, /^[0-9a-f]{32}$/);
      seen.add(token);
    }
    assert.equal(seen.size, 256 * 40 + 7);
  });

  it('a token kept alive costs about its own size, not its batch (a held lease must not hold 8 KB)', () => {
    const kept: string[] = [];
    gc();
    const before = process.memoryUsage().heapUsed;
    // One token in 256 is kept (the leases still running), the rest are dropped.
    for (let i = 0; i < 256 * 2_000; i++) {
      const token = newToken();
      if (i % 256 === 0) kept.push(token);
    }
    gc();
    const perToken = (process.memoryUsage().heapUsed - before) / kept.length;
    assert.equal(kept.length, 2_000);
    assert.ok(perToken < 512, `each kept token holds ${perToken.toFixed(0)} bytes of heap`);
  });
});
