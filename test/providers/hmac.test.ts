import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { hmac } from '../../src/providers/index.js';
import {
  acceptsBoth,
  authenticateAt,
  authenticateRejects,
  type Delivery,
  NOT_JSON,
  NOW,
  oneSecret,
  providerCases,
  rejects,
  TRICKY_JSON,
  verifyAt,
} from './kit.js';

// A sender configured through the generic provider: x-acme-signature: sha256=hex(HMAC-SHA256(secret,
// timestamp + "." + raw body)), x-acme-timestamp in seconds, the event id inside the signed body.
const secret = () => randomBytes(24).toString('base64url');
const body = () => `{"id": "ev_42", "type": "order.paid", "note": ${TRICKY_JSON}}`;

function sign(payload: string, key: string, at: Date): Delivery {
  const ts = String(Math.floor(at.getTime() / 1000));
  const sig = createHmac('sha256', key).update(`${ts}.${payload}`, 'utf8').digest('hex');
  return { body: payload, headers: { 'x-acme-signature': `sha256=${sig}`, 'x-acme-timestamp': ts } };
}

const acme = (config: string | string[]) =>
  hmac({
    name: 'acme',
    secret: config,
    signatureHeader: 'x-acme-signature',
    signaturePrefix: 'sha256=',
    signatureSeparator: ',',
    timestampHeader: 'x-acme-timestamp',
    id: (event) => (typeof event.id === 'string' ? event.id : undefined),
    type: (event) => String(event.type),
  });

describe('generic hmac provider (signed with node:crypto as the configured scheme says)', () => {
  providerCases<string>({
    name: 'acme',
    credential: oneSecret(secret),
    make: acme,
    body,
    sign,
    expect: { dedup: 'id', id: 'ev_42', type: 'order.paid', typeSigned: false },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: 5 * 60_000,
    several: (payload, good, bad, at) => {
      const sigs = [bad[0]!, good, bad[1]!].map((k) => sign(payload, k, at).headers['x-acme-signature']);
      const d = sign(payload, good, at);
      return { ...d, headers: { ...d.headers, 'x-acme-signature': sigs.join(',') } };
    },
    signatureHeader: 'x-acme-signature',
    malformed: ['', '  '],
  });

  it('with json: false, verify and authenticate both accept a signed body that is not JSON', async () => {
    const key = secret();
    const d: Delivery = {
      body: NOT_JSON,
      headers: { 'x-sig': createHmac('sha256', key).update(NOT_JSON, 'utf8').digest('hex') },
    };
    const parsing = hmac({ name: 'raw', secret: key, signatureHeader: 'x-sig' });
    const raw = hmac({ name: 'raw', secret: key, signatureHeader: 'x-sig', json: false });
    await acceptsBoth(raw, d);
    await authenticateAt(parsing, d);
    await rejects(parsing, d, 'invalid_body');
  });

  it('authenticate does not require the event id that verify reads from the body', async () => {
    const key = secret();
    const d = sign('{"type": "order.paid"}', key, NOW);
    await authenticateAt(acme(key), d);
    await rejects(acme(key), d, 'missing_event_id');
    await authenticateRejects(acme(secret()), d, 'invalid_signature');
  });

  it('says the type is unsigned by default, even from a type callback (it may read a header)', async () => {
    const key = secret();
    const verified = await verifyAt(acme(key), sign(body(), key, NOW));
    assert.equal(verified.type, 'order.paid');
    assert.equal(verified.typeSigned ?? false, false);
  });

  it('says the type is signed when told so for a type callback reading the signed body', async () => {
    const key = secret();
    const provider = hmac({
      name: 'acme',
      secret: key,
      signatureHeader: 'x-acme-signature',
      signaturePrefix: 'sha256=',
      timestampHeader: 'x-acme-timestamp',
      type: (event) => String(event.type),
      typeSigned: true,
    });
    const verified = await verifyAt(provider, sign(body(), key, NOW));
    assert.equal(verified.type, 'order.paid');
    assert.equal(verified.typeSigned, true);
  });

  it('reads a typeHeader as unsigned unless signedContent covers it and typeSigned says so', async () => {
    const key = secret();
    const payload = body();
    const base = {
      name: 'acme',
      secret: key,
      signatureHeader: 'x-acme-signature',
      typeHeader: 'x-acme-event',
    };
    // Signed over event + "." + body: the header is covered.
    const covered = createHmac('sha256', key).update(`order.paid.${payload}`, 'utf8').digest('hex');
    const signedType = hmac({
      ...base,
      signedContent: ({ headers, body }) => [headers.get('x-acme-event') ?? '', '.', body],
      typeSigned: true,
    });
    const d = { body: payload, headers: { 'x-acme-signature': covered, 'x-acme-event': 'order.paid' } };
    const verified = await verifyAt(signedType, d);
    assert.equal(verified.type, 'order.paid');
    assert.equal(verified.typeSigned, true);
    await rejects(
      signedType,
      { ...d, headers: { ...d.headers, 'x-acme-event': 'order.refunded' } },
      'invalid_signature',
    );
    // Signed over the body alone: the header is not covered.
    const bodyOnly = createHmac('sha256', key).update(payload, 'utf8').digest('hex');
    const unsigned = await verifyAt(hmac(base), {
      body: payload,
      headers: { 'x-acme-signature': bodyOnly, 'x-acme-event': 'order.paid' },
    });
    assert.equal(unsigned.type, 'order.paid');
    assert.equal(unsigned.typeSigned ?? false, false);
  });

  it('refuses typeSigned for a typeHeader when the default signed content (body, timestamp) cannot cover it', () => {
    assert.throws(
      () =>
        hmac({
          name: 'acme',
          secret: secret(),
          signatureHeader: 'x-acme-signature',
          typeHeader: 'x-acme-event',
          typeSigned: true,
        }),
      (error: unknown) => error instanceof ConfigError && error.code === 'invalid_option',
    );
  });

  it('defaults retention to 3 days (the provider is unknown) and takes an override', () => {
    assert.equal(acme(secret()).retentionMs, 3 * 86_400_000);
    const longer = hmac({
      name: 'acme',
      secret: secret(),
      signatureHeader: 'x-acme-signature',
      retention: '30d',
    });
    assert.equal(longer.retentionMs, 30 * 86_400_000);
  });
});
