import { strict as assert } from 'node:assert';
import { createHmac, randomBytes } from 'node:crypto';
import { parse, stringify } from 'node:querystring';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { urlFormHmac } from '../../../src/providers/families/urlFormHmac.js';
import { twilioSignature } from '../../support/twilio-signature.js';
import { acceptsBoth, receiveAll, rejectsBoth } from '../kit.js';
import { assertFamilyProperty, outcome } from './property.js';

// A sender that signs as Twilio does, under its own header (as SignalWire does), declared as a new
// provider would be.
const wireish = urlFormHmac({
  name: 'wireish',
  retention: '1d',
  signature: { header: 'x-wireish-signature', encoding: 'base64' },
  urlWhat: 'the dashboard calls',
});

const URL = 'https://example.com/hooks/wire?tenant=a%20b';
const token = () => randomBytes(16).toString('hex');

/** What is signed, written out independently: URL, then each name (sorted) and its values (de-duplicated, sorted). */
function canonical(url: string, body: Uint8Array): string {
  const text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  const grouped = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(text)) grouped.set(k, [...(grouped.get(k) ?? []), v]);
  let out = url;
  for (const k of [...grouped.keys()].sort())
    for (const v of [...new Set(grouped.get(k))].sort()) out += k + v;
  return out;
}
const sign = (secret: string, url: string, body: Uint8Array) =>
  createHmac('sha1', secret).update(canonical(url, body)).digest('base64');

/** A URL as the URL parser and Node's legacy querystring write it: one spelling per URL. */
function spelling(url: string): string {
  try {
    const u = new globalThis.URL(url);
    return `${u.origin}${u.pathname}?${stringify(parse(u.search.slice(1)))}`.toLowerCase();
  } catch {
    return url;
  }
}

const forms = fc
  .array(fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 40 })), { minLength: 1, maxLength: 8 })
  .map((pairs) => new TextEncoder().encode(new URLSearchParams(pairs).toString()));

describe('URL + form HMAC family', () => {
  it('property: a signature over random parameters verifies; a single-byte change verifies only when it leaves the signed parameters as they were', async () => {
    const secret = token();
    await assertFamilyProperty({
      provider: wireish({ secret, url: URL }),
      sign: (body) => ({
        url: URL,
        headers: {
          'x-wireish-signature': sign(secret, URL, body),
          'content-type': 'application/x-www-form-urlencoded',
        },
      }),
      signatureHeader: 'x-wireish-signature',
      body: forms,
      bodySigned: 'canonical',
      canonical: (body) => {
        try {
          return canonical(URL, body);
        } catch {
          return '(not UTF-8)';
        }
      },
    });
  });

  it('property: any single-byte change to the signed URL does not verify', async () => {
    const secret = token();
    const body = new TextEncoder().encode('CallSid=CA1&CallStatus=completed');
    const signature = sign(secret, URL, body);
    await fc.assert(
      fc.asyncProperty(fc.nat(URL.length - 1), fc.integer({ min: 0x21, max: 0x7e }), async (at, code) => {
        fc.pre(URL.charCodeAt(at) !== code);
        const url = URL.slice(0, at) + String.fromCharCode(code) + URL.slice(at + 1);
        // The same URL in another spelling the sender's SDK accepts (scheme or host case, a default
        // port, the legacy query encoding) is no change.
        fc.pre(spelling(url) !== spelling(URL));
        const verdict = await outcome(wireish({ secret }), body, {
          url,
          headers: { 'x-wireish-signature': signature, 'content-type': 'application/x-www-form-urlencoded' },
        });
        assert.notEqual(verdict, 'ok', url);
      }),
      { numRuns: 300 },
    );
  });

  it("accepts Twilio's signature (test/sdks/twilio.test.ts: the SDK's) and keys every re-encoding on one digest", async () => {
    const secret = token();
    const params = { CallSid: 'CA123', CallStatus: 'completed', Caller: '+1 555' };
    const body = new URLSearchParams(params).toString();
    const headers = {
      'x-wireish-signature': twilioSignature(secret, URL, params),
      'content-type': 'application/x-www-form-urlencoded',
    };
    await acceptsBoth(wireish({ secret }), { body, url: URL, headers });
    const reencoded = 'Caller=%2B1%20555&CallStatus=complet%65d&CallSid=CA123';
    const { results } = await receiveAll(wireish({ secret }), [
      { body, url: URL, headers },
      { body: reencoded, url: URL, headers },
    ]);
    assert.equal(results[0]?.key, results[1]?.key);
    assert.deepEqual(
      results.map((r) => r.outcome),
      ['processed', 'conflict'],
    );
    await rejectsBoth(
      wireish({ secret }),
      { body, url: URL, headers: { ...headers, 'x-wireish-signature': 'AAAA' } },
      'invalid_signature',
    );
  });
});
