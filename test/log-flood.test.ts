/**
 * Failures anyone can cause without credentials cost a bounded number of log lines: 50 unsigned
 * requests naming a PayPal certificate that cannot be fetched wrote 50 error lines; now the first
 * is written and the rest counted in one line at the end of the minute. Every outcome still reaches
 * onOutcome (and metrics) one by one.
 */
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { logThrottle } from '../src/core/logger.js';
import { createReceiver, type DeliveryResult, type Logger, memoryStore } from '../src/index.js';
import { paypal } from '../src/providers/index.js';

describe('log lines for unauthenticated failures', () => {
  it('50 requests naming missing PayPal certificates write one line, and every outcome is still reported', async () => {
    // Prepare: PayPal's certificate host answers 404; a logger and onOutcome that keep what they get.
    const lines: string[] = [];
    const logger: Logger = {
      warn: (m) => void lines.push(m),
      error: (m) => void lines.push(m),
    };
    const outcomes: DeliveryResult[] = [];
    let fetches = 0;
    const receiver = createReceiver({
      provider: paypal({
        webhookId: '1JE4291016473214C',
        fetch: async () => {
          fetches++;
          return new Response('not found', { status: 404 }) as never;
        },
      }),
      store: memoryStore(),
      handler: () => {},
      logger,
      onOutcome: (r) => void outcomes.push(r),
    });
    const request = (i: number) =>
      new Request('https://example.test/paypal', {
        method: 'POST',
        body: '{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED","resource":{}}',
        headers: {
          'paypal-auth-algo': 'SHA256withRSA',
          'paypal-transmission-id': `t-${i}`,
          'paypal-transmission-time': new Date().toISOString(),
          'paypal-transmission-sig': Buffer.alloc(256).toString('base64'),
          'paypal-cert-url': `https://api-m.paypal.com/v1/notifications/certs/CERT-missing-${i}`,
        },
      });
    // Act
    for (let i = 0; i < 50; i++) {
      const res = await receiver.fetch(request(i));
      assert.equal(res.status, 503);
    }
    // Assess: the fault happened (fetches failed, 50 refusals reported), and one line was written.
    assert.ok(fetches >= 1);
    assert.equal(outcomes.length, 50);
    assert.ok(outcomes.every((o) => o.code === 'key_unavailable'));
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0]!, /paypal signing key could not be fetched/);
  });

  it('logThrottle writes the first line of a kind, counts the rest, and sums them up once the interval ends', async () => {
    const written: string[] = [];
    const throttle = logThrottle(100);
    for (let i = 0; i < 50; i++) {
      throttle(
        'key_unavailable',
        () => written.push(`line ${i}`),
        (held) => written.push(`${held} more`),
      );
    }
    throttle(
      'other',
      () => written.push('other kind'),
      () => {},
    );
    assert.deepEqual(written, ['line 0', 'other kind']);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(written, ['line 0', 'other kind', '49 more']);
    // A new interval writes again at once.
    throttle(
      'key_unavailable',
      () => written.push('again'),
      () => {},
    );
    assert.equal(written.at(-1), 'again');
  });
});
