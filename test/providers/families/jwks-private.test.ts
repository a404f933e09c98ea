/**
 * A key set (JWKS) that publishes a private key by mistake: the key is never taken as a public one.
 * A sender whose private key leaked must rotate it; a receiver that trusted it would accept anything
 * signed with a key now known to everyone who read the key set.
 */
import { strict as assert } from 'node:assert';
import { generateKeyPairSync } from 'node:crypto';
import { describe, it } from 'node:test';
import { parseKeys } from '../../../src/providers/families/fetchedKeys.js';

const jwk = (kid: string, part: 'public' | 'private') => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const key = (part === 'public' ? pair.publicKey : pair.privateKey).export({ format: 'jwk' });
  return { ...key, kid, use: 'sig', alg: 'ES256' };
};

describe('a fetched key set with a private part', () => {
  it('skips a key that carries its private part (d), keeping the public keys beside it', () => {
    // Prepare: a set with a private key under one kid and a public one under another.
    const leaked = jwk('leaked', 'private');
    assert.ok('d' in leaked, 'the fault: the published key carries its private part');
    const good = jwk('good', 'public');
    // Act
    const set = parseKeys(JSON.stringify({ keys: [leaked, good] }), 'jwks', Date.now());
    // Assess: only the public key is there, by id and in the list.
    assert.deepEqual([...set.byId.keys()], ['good']);
    assert.equal(set.all.length, 1);
    assert.equal(set.all[0]!.type, 'public');
  });

  it('refuses a set whose only key is a private one: no usable public key', () => {
    assert.throws(
      () => parseKeys(JSON.stringify({ keys: [jwk('only', 'private')] }), 'jwks', Date.now()),
      /no usable public key/,
    );
  });
});
