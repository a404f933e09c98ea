import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import twilioSdk from 'twilio';
import { ConfigError } from '../../src/index.js';
import { twilio } from '../../src/providers/index.js';
import {
  authenticateAt,
  authenticateRejects,
  type Delivery,
  NOT_JSON,
  providerCases,
  rejects,
  TRICKY_JSON,
  TRICKY_TEXT,
  verifyAt,
  withHeader,
} from './kit.js';

const URL = 'https://example.com/twilio/status?tenant=a%20b';
const token = () => randomBytes(16).toString('hex');
const params = (): Record<string, string> => ({
  MessageSid: 'SM1f0e8ae6ade43cb3c0ce4525424e404f',
  MessageStatus: 'delivered',
  Body: TRICKY_TEXT,
  To: '+15558675310',
  AccountSid: 'AC00000000000000000000000000000000',
});
const formBody = (p: Record<string, string>) => new URLSearchParams(p).toString();

function signForm(payload: string, key: string, url = URL): Delivery {
  const p = Object.fromEntries(new URLSearchParams(payload));
  return {
    body: payload,
    url,
    headers: {
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(key, url, p),
      'content-type': 'application/x-www-form-urlencoded',
      'i-twilio-idempotency-token': 'e0a2e3f4-idem',
    },
  };
}

describe('twilio provider, form callbacks (signed by twilio getExpectedTwilioSignature)', () => {
  providerCases<string>({
    name: 'twilio',
    credential: () => {
      const k = token();
      return { signer: k, config: k };
    },
    make: (config) => twilio({ secret: config }),
    body: () => formBody(params()),
    sign: (payload, key) => signForm(payload, key),
    expect: { dedup: 'body' },
    noteOf: (event) => (event as { Body: unknown }).Body,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'i-twilio-idempotency-token', 'fresh-token'),
    signatureHeader: 'x-twilio-signature',
    reserialisable: false,
    // A form callback's body is form parameters, never JSON.
    nonJson: 'both-accept',
    malformed: ['AC00000000000000000000000000000000', 'SK0123', ' '],
  });

  it('agrees with twilio validateRequest on the same request', async () => {
    const key = token();
    const d = signForm(formBody(params()), key);
    assert.equal(
      twilioSdk.validateRequest(
        key,
        d.headers['x-twilio-signature']!,
        URL,
        Object.fromEntries(new URLSearchParams(d.body as string)),
      ),
      true,
    );
    await verifyAt(twilio({ secret: key }), d);
  });

  it('sorts repeated parameters the way the SDK does', async () => {
    const key = token();
    const payload = 'To=%2B1&Media=b&Media=a&From=%2B2';
    const sig = twilioSdk.getExpectedTwilioSignature(key, URL, { To: '+1', Media: ['b', 'a'], From: '+2' });
    await verifyAt(twilio({ secret: key }), {
      body: payload,
      url: URL,
      headers: { 'x-twilio-signature': sig, 'content-type': 'application/x-www-form-urlencoded' },
    });
  });

  it('accepts the URL with the default port added or removed, as Twilio signs either', async () => {
    const key = token();
    const d = signForm(formBody(params()), key, 'https://example.com:443/twilio/status');
    await verifyAt(twilio({ secret: key }), { ...d, url: 'https://example.com/twilio/status' });
  });

  it('accepts a request whose URL reached the server with a decoded query, as the SDK does', async () => {
    const key = token();
    const d = signForm(formBody(params()), key, 'https://example.com/twilio/status?name=O%27Brien');
    await verifyAt(twilio({ secret: key }), { ...d, url: "https://example.com/twilio/status?name=O'Brien" });
  });

  it('verifies against the configured url when a proxy changed the request URL', async () => {
    const key = token();
    const d = { ...signForm(formBody(params()), key), url: 'http://127.0.0.1:3000/twilio/status' };
    await rejects(twilio({ secret: key }), d, 'invalid_signature');
    await verifyAt(twilio({ secret: key, url: URL }), d);
  });

  it('verifies HMAC-SHA256 when X-Twilio-Webhooks-Signature-Settings says so', async () => {
    const key = token();
    const payload = formBody(params());
    const sig = twilioSdk.getExpectedTwilioSignature(key, URL, params(), 'HMAC_SHA256');
    await verifyAt(twilio({ secret: key }), {
      body: payload,
      url: URL,
      headers: {
        'x-twilio-signature': sig,
        'x-twilio-webhooks-signature-settings': 'key=k1,algorithm=HMAC_SHA256',
        'content-type': 'application/x-www-form-urlencoded',
      },
    });
  });

  it('refuses to verify without any URL, as a configuration error', async () => {
    const key = token();
    await assert.rejects(
      verifyAt(twilio({ secret: key }), { ...signForm(formBody(params()), key), url: undefined }),
      ConfigError,
    );
  });
});

const JSON_BODY = `{"event": "call.completed", "note": "caf\\u00e9 – 😀"}`;

function signJson(payload: string, key: string): Delivery {
  const url = `https://example.com/twilio/json?bodySHA256=${twilioSdk.getExpectedBodyHash(payload)}`;
  return {
    body: payload,
    url,
    headers: {
      'x-twilio-signature': twilioSdk.getExpectedTwilioSignature(key, url, {}),
      'content-type': 'application/json',
    },
  };
}

describe('twilio provider, JSON bodies (bodySHA256, signed by twilio getExpectedTwilioSignature + getExpectedBodyHash)', () => {
  providerCases<string>({
    name: 'twilio',
    credential: () => {
      const k = token();
      return { signer: k, config: k };
    },
    make: (config) => twilio({ secret: config }),
    body: () => `{"event": "call.completed", "note": ${TRICKY_JSON}}`,
    sign: (payload, key) => signJson(payload, key),
    expect: { dedup: 'body' },
    noteOf: (event) => (event as { note: unknown }).note,
    toleranceMs: undefined,
    freshIdHeader: (d) => withHeader(d, 'i-twilio-idempotency-token', 'fresh-token'),
    signatureHeader: 'x-twilio-signature',
    malformed: ['AC00000000000000000000000000000000', 'SK0123', ' '],
  });

  it('verifies behind a proxy: the configured public URL takes the bodySHA256 query the request arrived with', async () => {
    const key = token();
    const d = signJson(JSON_BODY, key);
    const arrived = `http://127.0.0.1:3000/twilio/json${d.url!.slice(d.url!.indexOf('?'))}`;
    const provider = twilio({ secret: key, url: 'https://example.com/twilio/json' });
    const verified = await verifyAt(provider, { ...d, url: arrived });
    assert.equal((verified.event as { note: string }).note, 'café – 😀');
    // The same with the path-and-query form a node:http request gives.
    await verifyAt(provider, { ...d, url: arrived.slice('http://127.0.0.1:3000'.length) });
    // A configured URL that already has its query is used as it is.
    await verifyAt(twilio({ secret: key, url: d.url! }), { ...d, url: '/somewhere/else' });
  });

  it('verifies the URL signature and the body hash, and parses the raw JSON', async () => {
    const key = token();
    const d = signJson(JSON_BODY, key);
    assert.equal(
      twilioSdk.validateRequestWithBody(key, d.headers['x-twilio-signature']!, d.url!, JSON_BODY),
      true,
    );
    const verified = await verifyAt(twilio({ secret: key }), d);
    assert.equal((verified.event as { note: string }).note, 'café – 😀');
    assert.equal(verified.dedup, 'body');
  });

  it('rejects a changed body (hash mismatch) as invalid_signature', async () => {
    const key = token();
    await rejects(
      twilio({ secret: key }),
      { ...signJson(JSON_BODY, key), body: JSON_BODY.replace('caf', 'cof') },
      'invalid_signature',
    );
  });

  it('rejects a body re-serialised by a framework as invalid_signature', async () => {
    const key = token();
    const d = signJson(JSON_BODY, key);
    await rejects(
      twilio({ secret: key }),
      { ...d, body: JSON.stringify(JSON.parse(JSON_BODY)) },
      'invalid_signature',
    );
  });

  it('rejects a URL with a swapped bodySHA256 as invalid_signature', async () => {
    const key = token();
    const other = '{"event":"other"}';
    const d = signJson(JSON_BODY, key);
    const url = d.url!.replace(/bodySHA256=[0-9a-f]+/, `bodySHA256=${twilioSdk.getExpectedBodyHash(other)}`);
    await rejects(twilio({ secret: key }), { ...d, url, body: other }, 'invalid_signature');
  });

  it('authenticates a signed, hash-matching body that is not JSON, which verify rejects as invalid_body', async () => {
    const key = token();
    const d = signJson(NOT_JSON, key);
    await authenticateAt(twilio({ secret: key }), d);
    await rejects(twilio({ secret: key }), d, 'invalid_body');
    await authenticateRejects(twilio({ secret: key }), { ...d, body: `${NOT_JSON} ` }, 'invalid_signature');
  });

  it('defaults retention to 1 day and takes an override', () => {
    assert.equal(twilio({ secret: token() }).retentionMs, 86_400_000);
    assert.equal(twilio({ secret: token(), retention: '3d' }).retentionMs, 3 * 86_400_000);
  });
});
