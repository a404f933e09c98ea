import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../../src/index.js';
import { timestampedHmac } from '../../../src/providers/families/timestampedHmac.js';
import { acceptsBoth, NOW, rejectsBoth, verifyAt } from '../kit.js';
import { assertFamilyProperty } from './property.js';

// A `t=..,v1=..` list (as Stripe), a signature header beside a timestamp header (as Slack), and a
// timestamp inside the signed body (as Linear), each as a new provider would declare it.
const listed = timestampedHmac({
  name: 'listed',
  retention: '4d',
  signature: { header: 'x-listed-signature', separator: ',', timestamp: 't', signature: 'v1' },
  signedPrefix: (t) => `${t}.`,
  event: { id: 'id', type: 'type', typeSigned: true },
});
const separate = timestampedHmac({
  name: 'separate',
  retention: '1d',
  algorithm: 'sha512',
  signature: { header: 'x-separate-signature', encoding: 'base64', prefix: 'v0=' },
  timestamp: { header: 'x-separate-timestamp', unit: 'ms' },
  signedPrefix: (t) => `v0:${t}:`,
  event: { type: 'kind', typeSigned: true },
});
const inBody = timestampedHmac({
  name: 'inbody',
  retention: '1d',
  signature: { header: 'x-inbody-signature' },
  timestamp: { bodyField: ['meta', 'sent_at'] },
  signedPrefix: () => '',
  event: { type: 'type', typeSigned: true },
});

const key = () => randomBytes(24).toString('base64url');
const ts = (at: Date) => String(Math.floor(at.getTime() / 1000));

function signListed(secret: string, body: string | Uint8Array, at: Date, extra: string[] = []) {
  const t = ts(at);
  const v1 = createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  return { body, headers: { 'x-listed-signature': [`t=${t}`, `v1=${v1}`, ...extra].join(',') } };
}
function signSeparate(secret: string, body: string | Uint8Array, at: Date) {
  const t = String(at.getTime());
  const sig = createHmac('sha512', secret).update(`v0:${t}:`).update(body).digest('base64');
  return { body, headers: { 'x-separate-signature': `v0=${sig}`, 'x-separate-timestamp': t } };
}

describe('timestamped-HMAC family', () => {
  it('property (t=..,v1=.. list): a signature over random bytes verifies; any single-byte change to body or header does not', async () => {
    const secret = key();
    await assertFamilyProperty({
      provider: listed({ secret }),
      sign: (body, at) => signListed(secret, body, at),
      signatureHeader: 'x-listed-signature',
      hexSignature: true,
    });
  });

  it('property (signature and timestamp headers): any single-byte change to body, signature or timestamp does not verify', async () => {
    const secret = key();
    await assertFamilyProperty({
      provider: separate({ secret }),
      sign: (body, at) => signSeparate(secret, body, at),
      signatureHeader: 'x-separate-signature',
      signedHeaders: ['x-separate-timestamp'],
    });
  });

  it('refuses two timestamps in one list, and a list without a signature of its key', async () => {
    const secret = key();
    const d = signListed(secret, '{"id":"a","type":"t"}', NOW);
    const header = d.headers['x-listed-signature'];
    await rejectsBoth(
      listed({ secret }),
      { ...d, headers: { 'x-listed-signature': `${header},t=${ts(NOW)}` } },
      'malformed_header',
    );
    await rejectsBoth(
      listed({ secret }),
      { ...d, headers: { 'x-listed-signature': header.replace('v1=', 'v0=') } },
      'malformed_header',
    );
    // Unknown keys and one good signature among bad ones pass.
    await acceptsBoth(listed({ secret }), signListed(secret, '{"id":"a","type":"t"}', NOW, ['v1=00', 'x=1']));
  });

  it('applies the tolerance in both directions, in the declared unit', async () => {
    const secret = key();
    const body = '{"kind":"k"}';
    for (const [shift, code] of [
      [-6 * 60_000, 'timestamp_too_old'],
      [6 * 60_000, 'timestamp_too_new'],
    ] as const) {
      await rejectsBoth(
        separate({ secret }),
        signSeparate(secret, body, new Date(NOW.getTime() + shift)),
        code,
      );
    }
    await acceptsBoth(
      separate({ secret, tolerance: '10m' }),
      signSeparate(secret, body, new Date(NOW.getTime() - 6 * 60_000)),
    );
    const verified = await verifyAt(separate({ secret }), signSeparate(secret, body, NOW));
    assert.equal(verified.type, 'k');
    assert.equal(verified.dedup, 'body');
  });

  it('reads a timestamp field of the signed body, after the signature checks out', async () => {
    const secret = key();
    const sign = (body: string) => ({
      body,
      headers: { 'x-inbody-signature': createHmac('sha256', secret).update(body).digest('hex') },
    });
    const fresh = `{"type":"t","meta":{"sent_at":${ts(NOW)}}}`;
    const verified = await acceptsBoth(inBody({ secret }), sign(fresh));
    assert.equal(verified.type, 't');
    const stale = `{"type":"t","meta":{"sent_at":${ts(new Date(NOW.getTime() - 3_600_000))}}}`;
    await rejectsBoth(inBody({ secret }), sign(stale), 'timestamp_too_old');
    await rejectsBoth(inBody({ secret }), sign('{"type":"t","meta":{}}'), 'invalid_body');
    // A forged body is refused on its signature before its timestamp is read.
    await rejectsBoth(inBody({ secret }), { ...sign(fresh), body: stale }, 'invalid_signature');
  });

  it('refuses a declaration with a signature header and no timestamp', () => {
    assert.throws(
      () => timestampedHmac({ name: 'x', retention: '1d', signature: { header: 'x-sig' } }),
      (e: unknown) => e instanceof ConfigError && e.code === 'invalid_option',
    );
  });
});
