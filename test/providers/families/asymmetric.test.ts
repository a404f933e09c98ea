import { strict as assert } from 'node:assert';
import { constants, createHash, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../../src/index.js';
import { type AsymmetricAlgorithm, asymmetric } from '../../../src/providers/families/asymmetric.js';
import { acceptsBoth, NOW, rejectsBoth, verifyAt } from '../kit.js';
import { assertFamilyProperty } from './property.js';

const spki = (key: KeyObject) => (key.export({ format: 'der', type: 'spki' }) as Buffer).toString('base64');
const ts = (at: Date) => String(Math.floor(at.getTime() / 1000));
const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/** A detached-signature sender of each algorithm, declared as a new provider would be. */
function detachedSender(
  algorithm: AsymmetricAlgorithm,
  encoding: 'hex' | 'base64' | 'base64url',
  dsa?: 'der' | 'ieee-p1363',
) {
  return asymmetric({
    name: `asym-${algorithm}`,
    retention: '1d',
    algorithm,
    publicKey: { format: 'spki', expected: 'the public key from the dashboard' },
    signature: { header: 'x-asym-signature', encoding, dsaEncoding: dsa },
    timestamp: { header: 'x-asym-timestamp' },
    event: { id: 'id', idRequired: false, type: 'type', typeSigned: true },
  });
}

const cases: {
  algorithm: AsymmetricAlgorithm;
  pair: () => { publicKey: KeyObject; privateKey: KeyObject };
  encoding: 'hex' | 'base64' | 'base64url';
  dsa?: 'der' | 'ieee-p1363';
  signWith: (data: Buffer, key: KeyObject) => Buffer;
}[] = [
  {
    algorithm: 'ed25519',
    pair: () => generateKeyPairSync('ed25519'),
    encoding: 'hex',
    signWith: (data, key) => sign(null, data, key),
  },
  {
    algorithm: 'ecdsa-p256-sha256',
    pair: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    encoding: 'base64',
    dsa: 'der',
    signWith: (data, key) => sign('sha256', data, { key, dsaEncoding: 'der' }),
  },
  {
    algorithm: 'ecdsa-p256-sha256',
    pair: () => generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    encoding: 'base64url',
    dsa: 'ieee-p1363',
    signWith: (data, key) => sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' }),
  },
  {
    algorithm: 'rsa-sha256',
    pair: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    encoding: 'base64',
    signWith: (data, key) => sign('sha256', data, key),
  },
  {
    algorithm: 'rsa-pss-sha256',
    pair: () => generateKeyPairSync('rsa', { modulusLength: 2048 }),
    encoding: 'base64',
    signWith: (data, key) =>
      sign('sha256', data, {
        key,
        padding: constants.RSA_PKCS1_PSS_PADDING,
        saltLength: constants.RSA_PSS_SALTLEN_DIGEST,
      }),
  },
];

describe('asymmetric family, detached signatures', () => {
  for (const c of cases) {
    const label = `${c.algorithm}${c.dsa ? ` (${c.dsa})` : ''}, ${c.encoding}`;
    const factory = detachedSender(c.algorithm, c.encoding, c.dsa);
    const { publicKey, privateKey } = c.pair();
    const signed = (body: Uint8Array | string, at: Date, key = privateKey) => {
      const t = ts(at);
      const signature = c.signWith(Buffer.concat([Buffer.from(t), Buffer.from(body)]), key);
      return { headers: { 'x-asym-signature': signature.toString(c.encoding), 'x-asym-timestamp': t } };
    };

    it(`property (${label}): a signature over random bytes verifies; any single-byte change to body, signature or timestamp does not`, async () => {
      await assertFamilyProperty({
        provider: factory({ publicKey: spki(publicKey) }),
        sign: (body, at) => signed(body, at),
        signatureHeader: 'x-asym-signature',
        hexSignature: c.encoding === 'hex',
        signedHeaders: ['x-asym-timestamp'],
        runs: c.algorithm.startsWith('rsa') ? 60 : 150,
      });
    });

    it(`${label}: any configured key may match (rotation), another key does not, the tolerance applies both ways`, async () => {
      const other = c.pair();
      const body = '{"id":"e1","type":"t"}';
      const d = { body, ...signed(body, NOW) };
      const verified = await acceptsBoth(factory({ publicKey: [spki(other.publicKey), spki(publicKey)] }), d);
      assert.equal(verified.id, 'e1');
      await rejectsBoth(factory({ publicKey: spki(other.publicKey) }), d, 'invalid_signature');
      const late = new Date(NOW.getTime() - 10 * 60_000);
      await rejectsBoth(
        factory({ publicKey: spki(publicKey) }),
        { body, ...signed(body, late) },
        'timestamp_too_old',
      );
      const early = new Date(NOW.getTime() + 10 * 60_000);
      await rejectsBoth(
        factory({ publicKey: spki(publicKey) }),
        { body, ...signed(body, early) },
        'timestamp_too_new',
      );
    });
  }

  it('refuses, at construction, a key of another kind than the algorithm signs with', () => {
    const ed = generateKeyPairSync('ed25519').publicKey;
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).publicKey;
    for (const [algorithm, key] of [
      ['ecdsa-p256-sha256', ed],
      ['ecdsa-p256-sha256', p384],
      ['rsa-sha256', ed],
      ['ed25519', p384],
    ] as const) {
      assert.throws(
        () => detachedSender(algorithm, 'base64')({ publicKey: spki(key) }),
        (e: unknown) => e instanceof ConfigError && e.code === 'invalid_secret',
        algorithm,
      );
    }
    assert.throws(
      () => detachedSender('ed25519', 'hex')({ publicKey: 'not a key' }),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_secret',
    );
  });
});

// A sender that puts a compact JWS in a header, its claims binding the body by its SHA-256 (as
// Plaid's Plaid-Verification does), with its key configured as a JWK.
const jwsSender = asymmetric({
  name: 'jwsish',
  retention: '1d',
  publicKey: { format: 'jwk', expected: 'the JWK from the dashboard' },
  jws: { header: 'x-jws', algorithms: ['ES256', 'EdDSA'], bodyHashClaim: 'request_body_sha256' },
  event: { id: 'id', type: 'type', typeSigned: true },
});

function jws(
  body: Uint8Array | string,
  at: Date,
  key: KeyObject,
  head: Record<string, unknown> = { alg: 'ES256', kid: 'k1' },
  claims: Record<string, unknown> = {},
): string {
  const h = b64url(JSON.stringify(head));
  const p = b64url(
    JSON.stringify({
      iat: Math.floor(at.getTime() / 1000),
      request_body_sha256: createHash('sha256').update(body).digest('hex'),
      ...claims,
    }),
  );
  const data = Buffer.from(`${h}.${p}`);
  const signature =
    head.alg === 'EdDSA' ? sign(null, data, key) : sign('sha256', data, { key, dsaEncoding: 'ieee-p1363' });
  return `${h}.${p}.${b64url(signature)}`;
}

describe('asymmetric family, compact JWS', () => {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = publicKey.export({ format: 'jwk' });

  it('property: a JWS over random bytes verifies; any single-byte change to body or JWS does not', async () => {
    await assertFamilyProperty({
      provider: jwsSender({ publicKey: jwk }),
      sign: (body, at) => ({ headers: { 'x-jws': jws(body, at, privateKey) } }),
      signatureHeader: 'x-jws',
    });
  });

  it('verifies ES256 and EdDSA, reads the event from the body', async () => {
    const ed = generateKeyPairSync('ed25519');
    const body = '{"id":"w1","type":"TRANSACTIONS"}';
    const provider = jwsSender({ publicKey: [jwk, ed.publicKey.export({ format: 'jwk' })] });
    const verified = await acceptsBoth(provider, { body, headers: { 'x-jws': jws(body, NOW, privateKey) } });
    assert.equal(verified.id, 'w1');
    await acceptsBoth(provider, {
      body,
      headers: { 'x-jws': jws(body, NOW, ed.privateKey, { alg: 'EdDSA' }) },
    });
  });

  it("refuses alg none, an HMAC alg keyed with the public key, an alg the sender does not use, and 'crit'", async () => {
    const body = '{"id":"w1"}';
    const provider = jwsSender({ publicKey: jwk });
    const good = jws(body, NOW, privateKey);
    const [, p] = good.split('.');
    const none = `${b64url('{"alg":"none"}')}.${p}.`;
    await rejectsBoth(provider, { body, headers: { 'x-jws': none } }, 'malformed_header');
    const { createHmac } = await import('node:crypto');
    const hs = b64url('{"alg":"HS256"}');
    const forged = `${hs}.${p}.${b64url(createHmac('sha256', JSON.stringify(jwk)).update(`${hs}.${p}`).digest())}`;
    await rejectsBoth(provider, { body, headers: { 'x-jws': forged } }, 'malformed_header');
    const rs = jws(body, NOW, privateKey, { alg: 'RS256' });
    await rejectsBoth(provider, { body, headers: { 'x-jws': rs } }, 'malformed_header');
    const crit = jws(body, NOW, privateKey, { alg: 'ES256', crit: ['b64'], b64: false });
    await rejectsBoth(provider, { body, headers: { 'x-jws': crit } }, 'malformed_header');
  });

  it('binds the body by its hash claim, and checks iat against the tolerance and exp', async () => {
    const body = '{"id":"w1"}';
    const provider = jwsSender({ publicKey: jwk });
    await rejectsBoth(
      provider,
      { body: '{"id":"w2"}', headers: { 'x-jws': jws(body, NOW, privateKey) } },
      'invalid_signature',
    );
    const old = new Date(NOW.getTime() - 6 * 60_000);
    await rejectsBoth(
      provider,
      { body, headers: { 'x-jws': jws(body, old, privateKey) } },
      'timestamp_too_old',
    );
    const expired = jws(body, NOW, privateKey, undefined, { exp: Math.floor(NOW.getTime() / 1000) - 3600 });
    await rejectsBoth(provider, { body, headers: { 'x-jws': expired } }, 'timestamp_too_old');
    const noHash = jws(body, NOW, privateKey, undefined, { request_body_sha256: undefined });
    await rejectsBoth(provider, { body, headers: { 'x-jws': noHash } }, 'invalid_signature');
    const verified = await verifyAt(provider, { body, headers: { 'x-jws': jws(body, NOW, privateKey) } });
    assert.equal(verified.dedup, 'id');
  });

  it('refuses a private JWK as a configured key', () => {
    const priv = privateKey.export({ format: 'jwk' });
    assert.throws(
      () => jwsSender({ publicKey: priv }),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_secret',
    );
  });
});
