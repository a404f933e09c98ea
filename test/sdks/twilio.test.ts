import { strict as assert } from 'node:assert';
import { createHash, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import twilioSdk from 'twilio';
import { ConfigError } from '../../src/index.js';
import { twilio } from '../../src/providers/index.js';
import {
  authenticateAt,
  authenticateRejects,
  type Delivery,
  NOT_JSON,
  oneSecret,
  providerCases,
  rejects,
  TRICKY_JSON,
  TRICKY_TEXT,
  verifyAt,
  withHeader,
} from '../providers/kit.js';

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
    credential: oneSecret(token),
    make: (config) => twilio({ secret: config }),
    body: () => formBody(params()),
    sign: (payload, key) => signForm(payload, key),
    expect: { dedup: 'body', typeSigned: false },
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

/** A seeded generator (mulberry32), so a failing re-encoding can be reproduced. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UNRESERVED = /^[A-Za-z0-9\-._~]$/;

/** One form component re-encoded: unreserved characters literal or %XX, space `+` or `%20`, hex in either case. */
function reencode(text: string, random: () => number): string {
  const pct = (bytes: Uint8Array) =>
    [...bytes]
      .map((b) => {
        const h = b.toString(16).padStart(2, '0');
        return `%${random() < 0.5 ? h.toUpperCase() : h.toLowerCase()}`;
      })
      .join('');
  let out = '';
  for (const ch of text) {
    if (ch === ' ') out += random() < 0.5 ? '+' : pct(Buffer.from(' '));
    else if (UNRESERVED.test(ch)) out += random() < 0.5 ? ch : pct(Buffer.from(ch));
    else if ('&=+%'.includes(ch)) out += pct(Buffer.from(ch));
    else out += random() < 0.5 ? ch : pct(Buffer.from(ch, 'utf8'));
  }
  return out;
}

/** A form body carrying the same parameters: re-encoded, reordered, with some pairs repeated. */
function reencodedForm(p: Record<string, string>, random: () => number): string {
  const pairs = Object.entries(p);
  for (let i = 0, n = Math.floor(random() * 3); i < n; i++) {
    pairs.push(pairs[Math.floor(random() * pairs.length)]!);
  }
  for (let i = pairs.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [pairs[i], pairs[j]] = [pairs[j]!, pairs[i]!];
  }
  return pairs.map(([k, v]) => `${reencode(k, random)}=${reencode(v, random)}`).join('&');
}

/** Spellings of URL that Twilio's SDK accepts for it: default port, host case. */
function respelledUrl(random: () => number): string {
  const host = random() < 0.5 ? 'example.com' : 'EXAMPLE.com';
  const port = random() < 0.5 ? '' : ':443';
  return `https://${host}${port}/twilio/status?tenant=a%20b`;
}

/** What the twilio SDK HMACs: the URL, then each sorted key followed by its value. */
function sdkSignedString(url: string, p: Record<string, string>): string {
  return Object.keys(p)
    .sort()
    .reduce((acc, k) => acc + k + p[k], url);
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('twilio signedDigest: a replay re-encoded cannot mint a fresh key', () => {
  const key = token();
  const p = { ...params(), MessageSid: 'SM123' };
  const original = signForm(formBody(p), key);
  const expected = sha256(sdkSignedString(URL, p));

  it('1,000 re-encodings of one signed callback (percent-encoding, order, repeated pairs, + or %20, URL spelling) all verify and give one signedDigest', async () => {
    const provider = twilio({ secret: key });
    const first = await verifyAt(provider, original);
    assert.equal(first.dedup, 'body');
    assert.equal(first.signedDigest, expected, 'the digest of exactly what Twilio signed');
    const random = seeded(0x7a11);
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const body = reencodedForm(p, random);
      seen.add(body);
      const d = { ...original, body, url: i % 2 === 0 ? URL : respelledUrl(random) };
      const verified = await verifyAt(provider, d);
      assert.equal(verified.signedDigest, expected, `re-encoding #${i}: ${body}`);
      assert.equal((verified.event as { MessageSid: string }).MessageSid, 'SM123');
    }
    assert.ok(seen.size > 990, `the re-encodings differ (${seen.size} distinct bodies)`);
  });

  it('keys SM%31%323 as SM123, and agrees with the SDK that the re-encoded request is valid', async () => {
    const body = formBody(p).replace('SM123', 'SM%31%323');
    const sig = original.headers['x-twilio-signature']!;
    assert.equal(
      twilioSdk.validateRequest(key, sig, URL, Object.fromEntries(new URLSearchParams(body))),
      true,
    );
    const verified = await verifyAt(twilio({ secret: key }), { ...original, body });
    assert.equal(verified.signedDigest, expected);
    // The raw bytes differ, so the receiver sees one key with two fingerprints: a conflict, by design.
    assert.notEqual(sha256(body), verified.signedDigest);
    assert.notEqual(sha256(body), sha256(original.body as string));
  });

  it('gives genuinely different callbacks different digests', async () => {
    const provider = twilio({ secret: key });
    const sent = { ...p, MessageStatus: 'sent' };
    const a = await verifyAt(provider, original);
    const b = await verifyAt(provider, signForm(formBody(sent), key));
    assert.notEqual(a.signedDigest, b.signedDigest);
    assert.equal(b.signedDigest, sha256(sdkSignedString(URL, sent)));
    // The same parameters sent to another URL are another callback too.
    const other = 'https://example.com/twilio/other';
    const c = await verifyAt(provider, signForm(formBody(p), key, other));
    assert.notEqual(a.signedDigest, c.signedDigest);
  });

  it('digests the URL that was signed, whichever spelling of it the request arrived with', async () => {
    const provider = twilio({ secret: key });
    const signedAt = 'https://example.com:443/twilio/status';
    const d = signForm(formBody(p), key, signedAt);
    const asSigned = await verifyAt(provider, d);
    const withoutPort = await verifyAt(provider, { ...d, url: 'https://example.com/twilio/status' });
    assert.equal(asSigned.signedDigest, sha256(sdkSignedString(signedAt, p)));
    assert.equal(withoutPort.signedDigest, asSigned.signedDigest);
    // A query that reached the server decoded: the legacy-encoded variant is what matched.
    const quoted = 'https://example.com/twilio/status?name=O%27Brien';
    const q = signForm(formBody(p), key, quoted);
    const decoded = await verifyAt(provider, { ...q, url: "https://example.com/twilio/status?name=O'Brien" });
    assert.equal(decoded.signedDigest, sha256(sdkSignedString(quoted, p)));
    assert.equal((await verifyAt(provider, q)).signedDigest, decoded.signedDigest);
  });

  it('digests the same signed string under HMAC-SHA1 and HMAC-SHA256 (the algorithm header is not signed)', async () => {
    const sig = twilioSdk.getExpectedTwilioSignature(key, URL, p, 'HMAC_SHA256');
    const verified = await verifyAt(twilio({ secret: key }), {
      ...original,
      headers: {
        ...original.headers,
        'x-twilio-signature': sig,
        'x-twilio-webhooks-signature-settings': 'algorithm=HMAC_SHA256',
      },
    });
    assert.equal(verified.signedDigest, expected);
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
    credential: oneSecret(token),
    make: (config) => twilio({ secret: config }),
    body: () => `{"event": "call.completed", "note": ${TRICKY_JSON}}`,
    sign: (payload, key) => signJson(payload, key),
    expect: { dedup: 'body', typeSigned: false },
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

  it("gives a JSON callback a stable signedDigest: the signed URL's, which carries bodySHA256", async () => {
    const key = token();
    const d = signJson(JSON_BODY, key);
    const provider = twilio({ secret: key });
    const first = await verifyAt(provider, d);
    assert.equal(first.signedDigest, sha256(d.url!));
    assert.equal((await verifyAt(provider, d)).signedDigest, first.signedDigest);
    // Behind a proxy, the configured public URL takes the query: the same signed URL, the same digest.
    const arrived = `http://127.0.0.1:3000/twilio/json${d.url!.slice(d.url!.indexOf('?'))}`;
    const proxied = twilio({ secret: key, url: 'https://example.com/twilio/json' });
    assert.equal((await verifyAt(proxied, { ...d, url: arrived })).signedDigest, first.signedDigest);
    // Another body is another signed URL.
    const other = signJson(JSON_BODY.replace('completed', 'failed'), key);
    assert.notEqual((await verifyAt(provider, other)).signedDigest, first.signedDigest);
  });

  it('defaults retention to 1 day and takes an override', () => {
    assert.equal(twilio({ secret: token() }).retentionMs, 86_400_000);
    assert.equal(twilio({ secret: token(), retention: '3d' }).retentionMs, 3 * 86_400_000);
  });
});
