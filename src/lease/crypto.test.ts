import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { newToken } from './crypto.js';

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
});
