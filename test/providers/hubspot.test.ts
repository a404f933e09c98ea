import { strict as assert } from 'node:assert';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/index.js';
import { hubspotUri } from '../../src/providers/hubspot.js';
import { hubspot } from '../../src/providers/index.js';
import { signedDelivery } from '../../src/testing/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  receiveAll,
  rejectsBoth,
  TRICKY_JSON,
  verifyAt,
} from './kit.js';

// HubSpot's documented v3 algorithm
// (https://developers.hubspot.com/docs/guides/apps/authentication/validating-requests):
// X-HubSpot-Signature-v3 = base64(HMAC-SHA256(client secret, method + URI + body + timestamp)),
// X-HubSpot-Request-Timestamp in ms, requests older than 5 minutes refused; the URI with
// %3A %2F %3F %40 %21 %24 %27 %28 %29 %2A %2C %3B decoded. Signed by the test kit.
const URL = 'https://example.com/webhooks/hubspot?portal=62515';
const secret = () => randomUUID();
const body = () =>
  `[{"eventId": 100, "subscriptionId": 1234, "portalId": 62515, "appId": 54321, "occurredAt": 1764478800000, "subscriptionType": "contact.creation", "attemptNumber": 0, "objectId": 123, "changeSource": ${TRICKY_JSON}}]`;
const batch = () =>
  `${body().slice(0, -1)}, {"eventId": 101, "subscriptionType": "contact.deletion", "objectId": 124, "attemptNumber": 0}]`;

function sign(payload: string, key: string, at: Date, url = URL): Delivery {
  const d = signedDelivery('hubspot', { payload, secret: key, at, url });
  return { body: d.text, url: d.url, headers: { ...d.headers } };
}

describe('hubspot provider (signature v3, signed by the test kit, signedDelivery)', () => {
  providerCases<string>({
    name: 'hubspot',
    credential: oneSecret(secret),
    make: (config) => hubspot({ secret: config }),
    body,
    sign: (payload, key, at) => sign(payload, key, at),
    expect: { dedup: 'id', id: '100', type: 'contact.creation', typeSigned: true },
    noteOf: (event) => (event as { changeSource: unknown }).changeSource,
    toleranceMs: 5 * 60_000,
    signatureHeader: 'x-hubspot-signature-v3',
    malformed: ['pat-na1-11111111-2222-3333-4444-555555555555', ' '],
  });

  it('claims and runs each event of a batch on its own eventId', async () => {
    const key = secret();
    const { results, runs } = await receiveAll(hubspot({ secret: key }), [sign(batch(), key, NOW)]);
    assert.deepEqual(
      results[0]?.batch?.map((b) => b.key),
      ['hubspot:100', 'hubspot:101'],
    );
    assert.equal(runs, 2);
  });

  it('signs the configured target URL: behind a proxy the URL the server sees does not matter', async () => {
    const key = secret();
    const d = sign(body(), key, NOW);
    await verifyAt(hubspot({ secret: key, url: URL }), { ...d, url: 'http://10.0.0.7:8080/hooks' });
    await rejectsBoth(
      hubspot({ secret: key }),
      { ...d, url: 'http://10.0.0.7:8080/hooks' },
      'invalid_signature',
    );
  });

  it('decodes exactly the listed escapes of the URI, as HubSpot does', async () => {
    assert.equal(
      hubspotUri('https://a.example/p%3Ax%2Fy?q=%40%21%24%27%28%29%2a%2C%3B%20%25'),
      "https://a.example/p:x/y?q=@!$'()*,;%20%25",
    );
    const key = secret();
    const url = 'https://example.com/hook?email=a%40b.example&x=%20';
    await verifyAt(hubspot({ secret: key }), sign(body(), key, NOW, url));
  });

  it('refuses a non-array body as invalid_body and an event without eventId as missing_event_id', async () => {
    const key = secret();
    await assert.rejects(verifyAt(hubspot({ secret: key }), sign('{"eventId": 1}', key, NOW)), /JSON array/);
    await assert.rejects(
      verifyAt(hubspot({ secret: key }), sign('[{"subscriptionType": "contact.creation"}]', key, NOW)),
      /no eventId/,
    );
  });

  it('needs the target URL from the option or the delivery, and refuses a relative one', async () => {
    const key = secret();
    const { url: _url, ...noUrl } = sign(body(), key, NOW);
    await assert.rejects(verifyAt(hubspot({ secret: key }), noUrl), ConfigError);
    assert.throws(() => hubspot({ secret: key, url: '/webhooks/hubspot' }), ConfigError);
  });

  it('defaults retention to 2 days (10 retries over 24 hours)', () => {
    assert.equal(hubspot({ secret: secret() }).retentionMs, 2 * 86_400_000);
  });
});
