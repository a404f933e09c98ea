/**
 * Node adapters write the outcome JSON straight to bytes instead of building a web Response and
 * reading it back (issue 12: that round trip cost more than the rest of a duplicate's answer). The
 * reply must stay exactly what the web path gives, for every outcome shape.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { responseToReply, toNodeReply } from '../src/adapters/node-io.js';
import { VerificationError } from '../src/errors.js';
import type { DeliveryResult } from '../src/index.js';
import { toResponse } from '../src/receiver/http.js';

const base = {
  degraded: undefined,
  code: undefined,
  provider: 'stripe',
  key: 'stripe:evt_1',
  id: 'evt_1',
  type: 'invoice.paid',
  attempt: 1,
  error: undefined,
  response: undefined,
  retryAfter: undefined,
  durationMs: 1,
} as const;

const results: DeliveryResult[] = [
  { ...base, outcome: 'processed', status: 200 },
  { ...base, outcome: 'processed', status: 200, attempt: 3 },
  { ...base, outcome: 'processed', status: 200, degraded: 'confirm-failed' },
  { ...base, outcome: 'duplicate', status: 200 },
  { ...base, outcome: 'in-flight', status: 409, retryAfter: 5 },
  { ...base, outcome: 'failed', status: 500, error: new Error('secret detail') },
  { ...base, outcome: 'conflict', status: 422, code: 'type_mismatch' },
  { ...base, outcome: 'store-unavailable', status: 503, code: 'store_timeout', retryAfter: 1 },
  { ...base, outcome: 'too-large', status: 413, code: 'body_too_large', key: undefined },
  { ...base, outcome: 'rejected', status: 408, code: 'body_timeout', key: undefined },
  { ...base, outcome: 'rejected', status: 405, code: 'method_not_allowed', key: undefined },
  {
    ...base,
    outcome: 'rejected',
    status: 401,
    code: 'invalid_signature',
    key: undefined,
    error: new VerificationError('invalid_signature', 'onceonly: no signature matched'),
  },
  { ...base, outcome: 'accepted', status: 202 },
] as DeliveryResult[];

describe('Node replies: the outcome written directly equals the web path', () => {
  for (const result of results) {
    it(`${result.outcome} ${result.status}${result.code ? ` ${result.code}` : ''}`, async () => {
      const direct = await toNodeReply(result);
      const viaWeb = await responseToReply(toResponse(result));
      assert.equal(direct.status, viaWeb.status);
      assert.deepEqual({ ...direct.headers }, { ...viaWeb.headers });
      const text = (body: Uint8Array | string) =>
        typeof body === 'string' ? body : new TextDecoder().decode(body);
      assert.equal(
        typeof direct.body,
        'string',
        'the outcome JSON as text: one socket write with the headers',
      );
      assert.equal(text(direct.body), text(viaWeb.body));
    });
  }
});

describe('Node replies: the plain ones are built once', () => {
  it('answers every shape again, in any order, exactly as the web path does; a plain reply is shared and frozen', async () => {
    const inFlight = (retryAfter: number) =>
      ({ ...base, outcome: 'in-flight', status: 409, retryAfter }) as DeliveryResult;
    const shapes = [...results, inFlight(7), inFlight(60), ...[...results].reverse(), inFlight(7)];
    for (const result of shapes) {
      const direct = await toNodeReply(result);
      const viaWeb = await responseToReply(toResponse(result));
      assert.equal(direct.status, viaWeb.status);
      assert.deepEqual(
        { ...direct.headers },
        { ...viaWeb.headers },
        `${result.outcome} ${result.retryAfter}`,
      );
      assert.equal(String(direct.body), new TextDecoder().decode(viaWeb.body as Uint8Array));
    }
    const plain = toNodeReply(results[0]!);
    assert.equal(plain, toNodeReply({ ...results[0]! }), 'shared');
    assert.ok(Object.isFrozen(plain) && Object.isFrozen((plain as { headers: object }).headers), 'frozen');
    // A degraded or later-attempt answer is never the shared one.
    assert.notEqual(toNodeReply(results[1]!), toNodeReply(results[1]!));
    assert.notEqual(toNodeReply(results[2]!), toNodeReply(results[2]!));
  });
});
