/**
 * The test kit's Notion deliveries against Notion's own verifier (@notionhq/client's
 * `verifyWebhookSignature`, async, so beside test/sdks/kit.test.ts's synchronous checks), and its
 * signer agreeing with the kit byte for byte.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { signWebhookPayload, verifyWebhookSignature } from '@notionhq/client';
import { senders, signedDelivery, testSecret } from '../../src/testing/index.js';

const { types } = senders.find((s) => s.name === 'notion')!;

describe("signedDelivery('notion') against @notionhq/client verifyWebhookSignature", () => {
  for (const type of types) {
    it(`${type}: verifies; one byte off does not`, async () => {
      const secret = testSecret('notion');
      const d = signedDelivery('notion', { secret, type });
      const signature = d.headers['x-notion-signature'];
      assert.equal(
        await verifyWebhookSignature({ body: d.text, signature, verificationToken: secret }),
        true,
      );
      const off = d.text.replace(/"attempt_number":1/, '"attempt_number":2');
      assert.notEqual(off, d.text);
      assert.equal(await verifyWebhookSignature({ body: off, signature, verificationToken: secret }), false);
      assert.equal(
        await verifyWebhookSignature({ body: d.text, signature, verificationToken: testSecret('notion') }),
        false,
      );
    });
  }

  it("signs as @notionhq/client's signWebhookPayload does", async () => {
    const secret = testSecret('notion');
    const d = signedDelivery('notion', { secret });
    assert.equal(
      await signWebhookPayload({ body: d.text, verificationToken: secret }),
      d.headers['x-notion-signature'],
    );
  });
});
