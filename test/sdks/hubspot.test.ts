import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { Signature } from '@hubspot/api-client';
import { hubspot } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  acceptsBoth,
  type Delivery,
  NOW,
  receiveAll,
  rejectsBoth,
  TRICKY_JSON,
  TRICKY_TEXT,
  withHeader,
} from '../providers/kit.js';

// The v3 signatures here are computed by @hubspot/api-client's own code (Signature.getSignature,
// what Signature.isValid compares against), and the SDK verifies what onceonly accepts.
const URL = 'https://example.com/webhooks/hubspot?portal=62515';
const secret = () => randomUUID();
const TOLERANCE = 5 * 60_000;
const body = () =>
  `[{"eventId": 100, "subscriptionId": 1234, "portalId": 62515, "appId": 54321, "occurredAt": 1764478800000, "subscriptionType": "contact.creation", "attemptNumber": 0, "objectId": 123, "changeSource": ${TRICKY_JSON}}]`;

/**
 * A delivery whose X-HubSpot-Signature-v3 the SDK computed. `signedUri` is the URI HubSpot signs
 * (its listed percent-escapes decoded: the SDK takes it as given), `url` the one the request carries.
 */
function sdkSign(
  payload: string,
  clientSecret: string,
  at: Date,
  { url = URL, signedUri = url, method = 'POST' }: { url?: string; signedUri?: string; method?: string } = {},
): Delivery {
  const timestamp = at.getTime();
  const v3 = Signature.getSignature(method, 'v3', {
    signature: '',
    clientSecret,
    requestBody: payload,
    url: signedUri,
    timestamp,
  });
  return {
    body: payload,
    url,
    headers: {
      'x-hubspot-signature-v3': v3,
      'x-hubspot-request-timestamp': String(timestamp),
      'content-type': 'application/json',
    },
  };
}

/** The SDK's verdict, against the real clock (it throws on a stale timestamp). */
function sdkValid(d: Delivery, clientSecret: string, url = d.url!): boolean {
  return Signature.isValid({
    signatureVersion: 'v3',
    method: 'POST',
    signature: d.headers['x-hubspot-signature-v3']!,
    clientSecret,
    requestBody: d.body as string,
    url,
    timestamp: Number(d.headers['x-hubspot-request-timestamp']),
  });
}

/** onceonly's test kit (signedDelivery), as test/providers/hubspot.test.ts signs. */
function testSign(payload: string, key: string, at: Date, url = URL): Delivery {
  const d = signedDelivery('hubspot', { payload, secret: key, at, url });
  return { body: d.text, url: d.url, headers: { ...d.headers } };
}

describe('hubspot provider (signature v3 signed by @hubspot/api-client Signature.getSignature, checked against Signature.isValid)', () => {
  it("verifies and authenticates a delivery the SDK signed, keyed on each event's eventId", async () => {
    const key = secret();
    const verified = await acceptsBoth(hubspot({ secret: key }), sdkSign(body(), key, NOW));
    assert.equal(verified.dedup, 'id');
    assert.equal(verified.id, '100');
    assert.equal(verified.type, 'contact.creation');
    assert.equal(verified.typeSigned, true);
    assert.equal((verified.event as { changeSource: string }).changeSource, TRICKY_TEXT);
    const { results, runs } = await receiveAll(hubspot({ secret: key }), [sdkSign(body(), key, NOW)]);
    assert.equal(results[0]?.outcome, 'processed');
    assert.equal(runs, 1);
  });

  it("agrees with Signature.isValid both ways: on what the SDK signed and on what onceonly's test kit signed", async () => {
    const key = secret();
    const now = new Date();
    const signed = sdkSign(body(), key, now);
    assert.equal(sdkValid(signed, key), true);
    await acceptsBoth(hubspot({ secret: key }), signed, now);
    const ours = testSign(body(), key, now);
    assert.equal(sdkValid(ours, key), true);
    assert.equal(ours.headers['x-hubspot-signature-v3'], signed.headers['x-hubspot-signature-v3']);
  });

  it('refuses a tampered body as invalid_signature, as the SDK does', async () => {
    const key = secret();
    const now = new Date();
    const d = sdkSign(body(), key, now);
    const tampered = { ...d, body: (d.body as string).replace('caf', 'cof') };
    assert.equal(sdkValid(tampered, key), false);
    await rejectsBoth(hubspot({ secret: key }), tampered, 'invalid_signature', now);
  });

  it('refuses a delivery signed with another client secret as invalid_signature, as the SDK does', async () => {
    const [key, other] = [secret(), secret()];
    const now = new Date();
    const d = sdkSign(body(), other, now);
    assert.equal(sdkValid(d, key), false);
    await rejectsBoth(hubspot({ secret: key }), d, 'invalid_signature', now);
    await acceptsBoth(hubspot({ secret: [key, other] }), d, now);
  });

  it('refuses a changed request timestamp (it is signed) as invalid_signature', async () => {
    const key = secret();
    const now = new Date();
    const d = sdkSign(body(), key, now);
    const moved = withHeader(d, 'x-hubspot-request-timestamp', String(now.getTime() - 1000));
    assert.equal(sdkValid(moved, key), false);
    await rejectsBoth(hubspot({ secret: key }), moved, 'invalid_signature', now);
  });

  it('refuses a delivery older than 5 minutes as timestamp_too_old, as the SDK does', async () => {
    const key = secret();
    const stale = sdkSign(body(), key, new Date(NOW.getTime() - TOLERANCE - 10_000));
    await rejectsBoth(hubspot({ secret: key }), stale, 'timestamp_too_old');
    await acceptsBoth(
      hubspot({ secret: key }),
      sdkSign(body(), key, new Date(NOW.getTime() - TOLERANCE + 10_000)),
    );
    // The SDK against the real clock: it throws past its MAX_ALLOWED_TIMESTAMP (300,000 ms).
    const now = Date.now();
    assert.throws(() => sdkValid(sdkSign(body(), key, new Date(now - TOLERANCE - 10_000)), key), /Timestamp/);
    assert.equal(sdkValid(sdkSign(body(), key, new Date(now - TOLERANCE + 10_000)), key), true);
  });

  it('refuses a delivery dated more than 5 minutes ahead as timestamp_too_new (the SDK checks only age)', async () => {
    const key = secret();
    const ahead = sdkSign(body(), key, new Date(NOW.getTime() + TOLERANCE + 10_000));
    await rejectsBoth(hubspot({ secret: key }), ahead, 'timestamp_too_new');
    await acceptsBoth(
      hubspot({ secret: key }),
      sdkSign(body(), key, new Date(NOW.getTime() + TOLERANCE - 10_000)),
    );
    assert.equal(sdkValid(sdkSign(body(), key, new Date(Date.now() + TOLERANCE + 10_000)), key), true);
  });

  it('verifies the method as signed: POST, never a signature the SDK made for GET', async () => {
    const key = secret();
    const get = sdkSign(body(), key, NOW, { method: 'GET' });
    await rejectsBoth(hubspot({ secret: key }), get, 'invalid_signature');
    assert.notEqual(
      get.headers['x-hubspot-signature-v3'],
      sdkSign(body(), key, NOW).headers['x-hubspot-signature-v3'],
    );
  });

  it('verifies the URL as signed: another path or query is refused, the configured URL is used behind a proxy', async () => {
    const key = secret();
    const d = sdkSign(body(), key, NOW);
    for (const url of [
      'https://example.com/webhooks/hubspot?portal=62516',
      'https://example.com/webhooks/other?portal=62515',
      'https://evil.example/webhooks/hubspot?portal=62515',
      'http://example.com/webhooks/hubspot?portal=62515',
    ]) {
      await rejectsBoth(hubspot({ secret: key }), { ...d, url }, 'invalid_signature');
    }
    const proxied = { ...d, url: 'http://10.0.0.7:8080/hooks' };
    await rejectsBoth(hubspot({ secret: key }), proxied, 'invalid_signature');
    await acceptsBoth(hubspot({ secret: key, url: URL }), proxied);
    await rejectsBoth(
      hubspot({ secret: key, url: 'https://example.com/webhooks/hubspot' }),
      proxied,
      'invalid_signature',
    );
  });

  it('verifies a URL with percent-escapes against the URI HubSpot signs (the listed escapes decoded)', async () => {
    const key = secret();
    // HubSpot decodes %3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B before signing; %20 stays.
    const url = 'https://example.com/hook?email=a%40b.example&path=%2Fx%3Ay&note=%20%28%21%29';
    const signedUri = 'https://example.com/hook?email=a@b.example&path=/x:y&note=%20(!)';
    const d = sdkSign(body(), key, NOW, { url, signedUri });
    await acceptsBoth(hubspot({ secret: key }), d);
    await acceptsBoth(hubspot({ secret: key, url }), { ...d, url: 'http://10.0.0.7/hook' });
    // Signed over the URL as sent, escapes kept: not what HubSpot signs, so refused.
    await rejectsBoth(hubspot({ secret: key }), sdkSign(body(), key, NOW, { url }), 'invalid_signature');
    const now = new Date();
    assert.equal(sdkValid(sdkSign(body(), key, now, { url, signedUri }), key, signedUri), true);
  });

  it('refuses a delivery without X-HubSpot-Signature-v3 or its timestamp as missing_header', async () => {
    const key = secret();
    await rejectsBoth(
      hubspot({ secret: key }),
      withHeader(sdkSign(body(), key, NOW), 'x-hubspot-signature-v3', undefined),
      'missing_header',
    );
    await rejectsBoth(
      hubspot({ secret: key }),
      withHeader(sdkSign(body(), key, NOW), 'x-hubspot-request-timestamp', undefined),
      'missing_header',
    );
  });
});
