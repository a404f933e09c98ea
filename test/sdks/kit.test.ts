/**
 * What the senders' own SDKs verify, the kit must produce: for every sender with an official
 * verifier installed in this workspace, each of the kit's sample deliveries passes that verifier,
 * and the same delivery one byte off fails it. (Against onceonly's providers:
 * test/testing/deliveries.test.ts.)
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import {
  type SenderName,
  type SignedDelivery,
  senders,
  signedDelivery,
  testSecret,
} from '../../src/testing/index.js';
import { checks as bodyHmacA } from './kit-checks/body-hmac-a.js';
import { checks as bodyHmacB } from './kit-checks/body-hmac-b.js';
import { checks as keyed } from './kit-checks/keyed.js';
import { checks as standard } from './kit-checks/standard.js';
import { checks as timestamped } from './kit-checks/timestamped.js';
import type { Checks, SdkCheck } from './kit-checks/types.js';

const checks: Checks = { ...bodyHmacA, ...bodyHmacB, ...timestamped, ...standard, ...keyed };

/** The delivery with one byte of its body changed. */
function oneByteOff(d: SignedDelivery): SignedDelivery {
  const body = new Uint8Array(d.body);
  const at = Math.floor(body.length / 2);
  body[at] = body[at] === 0x31 ? 0x32 : 0x31;
  return { ...d, body, text: new TextDecoder().decode(body) };
}

/** Runs an SDK check (awaited: some SDKs verify asynchronously), counting `false` as a refusal. */
async function passes(check: SdkCheck, d: SignedDelivery, secret: string): Promise<boolean> {
  try {
    return (await check(d, secret)) !== false;
  } catch {
    return false;
  }
}

for (const [name, { sdk, verify }] of Object.entries(checks) as [
  SenderName,
  { sdk: string; verify: SdkCheck },
][]) {
  describe(`signedDelivery('${name}') against ${sdk}`, () => {
    const { types } = senders.find((s) => s.name === name)!;
    for (const type of types) {
      it(`${type}: verifies; one byte off does not`, async () => {
        const secret = testSecret(name);
        const d = signedDelivery(name, { secret, type });
        assert.notEqual(await verify(d, secret), false);
        assert.equal(await passes(verify, oneByteOff(d), secret), false);
      });
    }
  });
}
