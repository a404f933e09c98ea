/**
 * PayPal webhooks. PayPal's SDKs on npm verify through its API (verify-webhook-signature) and sign
 * nothing; the deliveries follow the documented self-verification:
 * https://developer.paypal.com/api/rest/webhooks/rest/#link-selfverificationmethod
 * (SHA256withRSA over `transmission id|transmission time|webhook id|crc32(raw body)`, the
 * certificate at PAYPAL-CERT-URL). Certificates are real X.509 certificates (openssl) served from
 * loopback through an injected fetch.
 */
import { strict as assert } from 'node:assert';
import { sign as rsaSign } from 'node:crypto';
import { describe, it } from 'node:test';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { ConfigError } from '../../src/index.js';
import { paypal } from '../../src/providers/index.js';
import { crc32 } from '../../src/providers/paypal.js';
import { certServer } from './certServer.js';
import {
  authenticateAt,
  type Delivery,
  NOW,
  providerCases,
  TRICKY_JSON,
  verifyAt,
  withHeader,
} from './kit.js';

const WEBHOOK_ID = '1JE4291016473214C';
const certs = certServer('/v1/notifications/certs/CERT-360caa42-fca2a594-', {
  subject: 'messageverificationcerts.paypal.com',
  served: 'chain',
});
const certUrl = (name: string) =>
  `https://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-${name}.pem`;
const make = (config: string | string[], webhookId = WEBHOOK_ID) =>
  paypal({
    webhookId,
    keyTimeout: '30s',
    fetch: certs.loopback(typeof config === 'string' ? [config] : config),
    certificateRoots: certs.roots(),
  });

const body = () =>
  `{"id":"WH-2WR32451HC0233532-67976317FL4543714","create_time":"2026-11-30T05:00:00.000Z","resource_type":"capture","event_type":"PAYMENT.CAPTURE.COMPLETED","summary":${TRICKY_JSON},"resource":{"id":"42311647XV020574X","status":"COMPLETED","amount":{"currency_code":"USD","value":"10.00"}}}`;

function sign(
  payload: string,
  name: string,
  at: Date,
  webhookId = WEBHOOK_ID,
  url = certUrl(name),
): Delivery {
  const id = 'e3c29b30-cead-11f0-8d5b-4f4f4b6b3b6d';
  const time = at.toISOString();
  const signed = `${id}|${time}|${webhookId}|${crc32(Buffer.from(payload, 'utf8'))}`;
  return {
    body: payload,
    headers: {
      'paypal-auth-algo': 'SHA256withRSA',
      'paypal-auth-version': 'v2',
      'paypal-cert-url': url,
      'paypal-transmission-id': id,
      'paypal-transmission-sig': rsaSign('sha256', Buffer.from(signed), certs.keys.get(name)!).toString(
        'base64',
      ),
      'paypal-transmission-time': time,
    },
  };
}

describe('paypal provider (self-verification as documented, certificates fetched from loopback)', () => {
  providerCases<string>({
    name: 'paypal',
    credential: () => {
      const name = certs.credential();
      return { signer: name, config: name };
    },
    make: (config) => make(config),
    body,
    sign: (payload, name, at) => sign(payload, name, at),
    expect: {
      dedup: 'id',
      id: 'WH-2WR32451HC0233532-67976317FL4543714',
      type: 'PAYMENT.CAPTURE.COMPLETED',
      typeSigned: true,
    },
    noteOf: (event) => (event as { summary: unknown }).summary,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'paypal-transmission-sig',
    malformed: [],
  });

  it('computes CRC-32 as zlib does (the check value of "123456789" is 0xcbf43926)', () => {
    assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
    for (const text of ['', 'a', body(), '😀 中文']) {
      const bytes = Buffer.from(text);
      assert.equal(crc32(bytes), zlibCrc32(bytes), text);
    }
  });

  it('signs the webhook id: a delivery made for another webhook does not verify', async () => {
    const k = certs.credential();
    const other = sign(body(), k, NOW, '8PT597110X687430LKGECATA');
    await assert.rejects(verifyAt(make(k), other), { code: 'invalid_signature' });
    await verifyAt(make(k, '8PT597110X687430LKGECATA'), other);
  });

  it('fetches the certificate only from PayPal API hosts under /v1/notifications/certs/, without any request otherwise', async () => {
    const k = certs.credential();
    for (const url of [
      'https://evil.example/v1/notifications/certs/CERT-360caa42-fca2a594-k1.pem',
      'https://api.paypal.com.evil.example/v1/notifications/certs/CERT-360caa42-fca2a594-k1.pem',
      'http://api.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-k1.pem',
      'https://api.paypal.com/v1/other/CERT-360caa42-fca2a594-k1.pem',
      'https://www.paypal.com/v1/notifications/certs/CERT-360caa42-fca2a594-k1.pem',
      `${certs.base()}/v1/notifications/certs/CERT-360caa42-fca2a594-${k}.pem`,
      'not a url',
    ]) {
      await assert.rejects(
        verifyAt(make(k), sign(body(), k, NOW, WEBHOOK_ID, url)),
        { code: 'untrusted_key_url' },
        url,
      );
    }
    assert.deepEqual(certs.requested, []);
    // The sandbox host is PayPal's too.
    const sandbox = certUrl(k).replace('api.paypal.com', 'api-m.sandbox.paypal.com');
    await verifyAt(make(k), sign(body(), k, NOW, WEBHOOK_ID, sandbox));
  });

  it('trusts a certificate only when it chains to a trusted root and is issued to messageverificationcerts.paypal.com', async () => {
    // A self-signed certificate in PayPal's name: no chain.
    const forged = certs.credential({ selfSigned: true });
    await assert.rejects(verifyAt(make(forged), sign(body(), forged, NOW)), {
      code: 'invalid_signature',
      message: /does not chain to a trusted root/,
    });
    // From the trusted CA, issued to another PayPal-looking name.
    const other = certs.credential({ subject: 'api.paypal.com' });
    await assert.rejects(verifyAt(make(other), sign(body(), other, NOW)), {
      code: 'invalid_signature',
      message: /not issued to messageverificationcerts\.paypal\.com/,
    });
    // The sandbox name is PayPal's too; the served chain needs no fetch of its intermediate.
    const sandbox = certs.credential({ subject: 'messageverificationcerts.sandbox.paypal.com' });
    await verifyAt(make(sandbox), sign(body(), sandbox, NOW));
    assert.ok(certs.requested.every((u) => !u.endsWith('.cer')));
  });

  it('takes only SHA256withRSA, whatever the unsigned paypal-auth-algo header names', async () => {
    const k = certs.credential();
    for (const algo of ['SHA1withRSA', 'none', 'sha256withrsa']) {
      await assert.rejects(verifyAt(make(k), withHeader(sign(body(), k, NOW), 'paypal-auth-algo', algo)), {
        code: 'malformed_header',
      });
    }
  });

  it('refuses an event id or anything but a webhook id as webhookId, at construction', () => {
    for (const webhookId of ['WH-2WR32451HC0233532-67976317FL4543714', '', 'has spaces', undefined]) {
      assert.throws(
        () => paypal({ webhookId: webhookId as never }),
        (error: unknown) => error instanceof ConfigError && error.code === 'invalid_secret',
      );
    }
  });

  it('defaults retention to 4 days (PayPal retries over 3)', () => {
    assert.equal(make('k1').retentionMs, 4 * 86_400_000);
  });
});

describe('paypal: what a CRC-32 does not protect (documented, so users know)', () => {
  it('other bytes with the same CRC-32 pass authenticate under captured headers: the scheme covers the body only through its checksum', async () => {
    const k = certs.credential();
    const original = body();
    const captured = sign(original, k, NOW);
    const forged = forgeSameCrc(
      Buffer.from(original.replace('"10.00"', '"99.00"')),
      crc32(Buffer.from(original)),
    );
    assert.equal(crc32(forged), crc32(Buffer.from(original)));
    await authenticateAt(make(k), { ...captured, body: forged });
    // A body whose CRC-32 differs is refused, as any changed body is under a hash.
    await assert.rejects(authenticateAt(make(k), { ...captured, body: forged.subarray(0, -1) }), {
      code: 'invalid_signature',
    });
  });
});

/** `data` and 4 bytes more whose CRC-32 is `target` (CRC-32 is linear, so the 4 bytes can be solved). */
function forgeSameCrc(data: Buffer, target: number): Buffer {
  const table = new Uint32Array(256);
  const inverse = new Uint8Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
    inverse[table[n]! >>> 24] = n;
  }
  let register = 0xffffffff;
  for (const b of data) register = (table[(register ^ b) & 0xff]! ^ (register >>> 8)) >>> 0;
  // Run the register back from the wanted final state over 4 unknown bytes.
  let want = (target ^ 0xffffffff) >>> 0;
  for (let i = 0; i < 4; i++) {
    const n = inverse[want >>> 24]!;
    want = ((((want ^ table[n]!) >>> 0) << 8) | n) >>> 0;
  }
  const free = Buffer.alloc(4);
  free.writeUInt32LE((want ^ register) >>> 0);
  return Buffer.concat([data, free]);
}
