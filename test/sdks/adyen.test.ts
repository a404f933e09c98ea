import { strict as assert } from 'node:assert';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { hmacValidator as HmacValidator } from '@adyen/api-library';
import { adyenSignedString } from '../../src/providers/adyen.js';
import { adyen } from '../../src/providers/index.js';
import {
  type Delivery,
  NOW,
  oneSecret,
  providerCases,
  receiveAll,
  rejectsBoth,
  TRICKY_JSON,
  verifyAt,
} from '../providers/kit.js';

// Signed by @adyen/api-library's own HmacValidator.calculateHmac (base64 HMAC-SHA256, hex key, over
// pspReference:originalReference:merchantAccountCode:merchantReference:value:currency:eventCode:success),
// plus the vector of its test suite (src/__tests__/hmacValidator.spec.ts).
const validator = new HmacValidator();
const key = () => randomBytes(32).toString('hex').toUpperCase();

const item = (psp: string, eventCode = 'AUTHORISATION') =>
  `{"NotificationRequestItem": {"additionalData": {"authCode": "58747"}, "amount": {"currency": "EUR", "value": 1000}, "eventCode": "${eventCode}", "eventDate": "2026-11-30T05:00:00+01:00", "merchantAccountCode": "TestMerchant", "merchantReference": "order-1", "paymentMethod": "visa", "pspReference": "${psp}", "reason": ${TRICKY_JSON}, "success": "true"}}`;
const body = () => `{"live": "false", "notificationItems": [${item('QFQTPCQ8HXSKGK82')}]}`;

/** Signs every item with the SDK's calculateHmac, as Adyen does; a body that is not JSON is sent as is. */
function sign(payload: string, hmacKey: string): Delivery {
  let parsed: { notificationItems?: { NotificationRequestItem: Record<string, any> }[] };
  try {
    parsed = JSON.parse(payload);
  } catch {
    return { body: payload, headers: { 'content-type': 'application/json' } };
  }
  for (const { NotificationRequestItem: it } of parsed.notificationItems ?? []) {
    it.additionalData = { ...it.additionalData, hmacSignature: validator.calculateHmac(it as any, hmacKey) };
  }
  return { body: JSON.stringify(parsed), headers: { 'content-type': 'application/json' } };
}

describe("adyen provider (signed by @adyen/api-library's HmacValidator)", () => {
  providerCases<string>({
    name: 'adyen',
    credential: oneSecret(key),
    make: (config) => adyen({ secret: config }),
    body,
    sign,
    expect: {
      dedup: 'id',
      id: 'QFQTPCQ8HXSKGK82:AUTHORISATION:true',
      type: 'AUTHORISATION',
      typeSigned: true,
    },
    noteOf: (event) => (event as { reason: unknown }).reason,
    toleranceMs: undefined,
    // A signed field changed: the reason (the tricky text) is not among the signed fields.
    tamper: (d) => ({ ...d, body: (d.body as string).replace('"order-1"', '"order-2"') }),
    // The signature covers fields, not bytes: a re-serialised body still verifies.
    reserialisable: false,
    nonJson: 'both-reject',
    malformed: [
      'AQEyhmfxK4zJbBZDw0m/n3Q5qf3VaY9UCJ14XWZE03G6k2lbkHUfyXhrZ4bMR+wQwV1bDb7kfNy1WIxIIkxgBw==',
      'not hex',
      ' ',
    ],
  });

  it("agrees with the SDK test suite's vector", async () => {
    const vectorKey = 'DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00';
    const vectorItem = {
      pspReference: 'pspReference',
      originalReference: 'originalReference',
      merchantAccountCode: 'merchantAccount',
      merchantReference: 'reference',
      amount: { currency: 'EUR', value: 1000 },
      eventCode: 'CAPTURE',
      eventDate: '1970-01-01T00:00:00.000Z',
      paymentMethod: 'VISA',
      reason: 'reason',
      success: 'true',
      additionalData: { hmacSignature: 'xhpHvYq2u2Np0rstbZ6QjLGu7JWhvf7Iwaa6EviJSX0=' },
    };
    assert.equal(
      adyenSignedString(vectorItem),
      'pspReference:originalReference:merchantAccount:reference:1000:EUR:CAPTURE:true',
    );
    const d = {
      body: JSON.stringify({ live: 'false', notificationItems: [{ NotificationRequestItem: vectorItem }] }),
      headers: {},
    };
    const verified = await verifyAt(adyen({ secret: vectorKey }), d);
    assert.equal(verified.id, 'pspReference:CAPTURE:true');
    await rejectsBoth(adyen({ secret: key() }), d, 'invalid_signature');
  });

  it('refuses the whole delivery when one item is not signed right', async () => {
    const k = key();
    const two = sign(`{"live": "false", "notificationItems": [${item('A1')}, ${item('B2', 'CAPTURE')}]}`, k);
    await verifyAt(adyen({ secret: k }), two);
    const forged = (two.body as string).replace('"pspReference":"B2"', '"pspReference":"B3"');
    assert.notEqual(forged, two.body);
    await rejectsBoth(adyen({ secret: k }), { ...two, body: forged }, 'invalid_signature');
    const unsigned = JSON.parse(two.body as string);
    delete unsigned.notificationItems[1].NotificationRequestItem.additionalData.hmacSignature;
    await rejectsBoth(adyen({ secret: k }), { ...two, body: JSON.stringify(unsigned) }, 'malformed_header');
  });

  it('settles each item on its own key, and a redelivered batch runs only what did not complete', async () => {
    const k = key();
    const two = sign(`{"live": "false", "notificationItems": [${item('A1')}, ${item('B2', 'CAPTURE')}]}`, k);
    const { results, runs } = await receiveAll(adyen({ secret: k }), [two, two], NOW);
    assert.deepEqual(
      results[0]?.batch?.map((b) => b.key),
      ['adyen:A1:AUTHORISATION:true', 'adyen:B2:CAPTURE:true'],
    );
    assert.equal(runs, 2);
  });

  it('does not protect unsigned item fields: a changed reason still verifies (documented)', async () => {
    const k = key();
    const d = sign(body(), k);
    const changed = (d.body as string).replace('caf', 'cof');
    assert.notEqual(changed, d.body);
    await verifyAt(adyen({ secret: k }), { ...d, body: changed });
  });

  it('defaults retention to 31 days (retries for up to 30)', () => {
    assert.equal(adyen({ secret: key() }).retentionMs, 31 * 86_400_000);
  });
});
