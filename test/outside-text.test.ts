/**
 * Text from outside never acts on an operator's terminal or log, and stored credentials are never
 * shown: a handler error quoting a signed event (ESC sequences, CR, BEL, U+2028) reaches the logger
 * as one inert line, and so does the error handed along with it; `once()` the same; the headers shown
 * of a stored delivery are an allow-list that holds no sender's credential header.
 */
import { strict as assert } from 'node:assert';
import { createHmac } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isShownHeader, shownHeaderValue } from '../src/core/shown-headers.js';
import { hasUnsafe } from '../src/core/text.js';
import { createReceiver, hmac, type Logger, memoryStore, once } from '../src/index.js';

// ESC[2J clears the screen, ESC]0;...BEL retitles the terminal, CR and U+2028 start a fake line.
const HOSTILE = 'declined\x1b[2J\x1b]0;owned\x07\r\nonceonly: processed acme:evt_fake\u2028x\u202e\x9b';

function recorder() {
  const lines: { message: string; detail: unknown[] }[] = [];
  const logger: Logger = {
    warn: (message, ...detail) => void lines.push({ message, detail }),
    error: (message, ...detail) => void lines.push({ message, detail }),
  };
  return { lines, logger };
}

describe('log lines quoting text from outside', () => {
  it('a handler error with ESC, OSC, BEL, CR, LF, U+2028, a bidi override and C1 is logged as one inert line, and the error passed with it too', async () => {
    // Prepare: a receiver whose handler throws an error quoting the event.
    const { lines, logger } = recorder();
    const secret = 'acme-secret';
    const receiver = createReceiver({
      provider: hmac<{ id: string; type: string }>({
        name: 'acme',
        secret,
        signatureHeader: 'x-acme-signature',
        id: (e) => e.id,
        type: (e) => e.type,
      }),
      store: memoryStore(),
      handler: () => {
        throw new Error(HOSTILE);
      },
      logger,
    });
    const body = JSON.stringify({ id: 'evt_1', type: 't' });
    // Act
    const res = await receiver.fetch(
      new Request('http://localhost/hooks', {
        method: 'POST',
        body,
        headers: { 'x-acme-signature': createHmac('sha256', secret).update(body).digest('hex') },
      }),
    );
    // Assess: the fault happened (a failed run, logged), then nothing in the log acts on a terminal.
    assert.equal(res.status, 500);
    assert.equal(lines.length, 1);
    const [{ message, detail }] = lines as [(typeof lines)[0]];
    assert.match(message, /^onceonly: failed for acme:evt_1/);
    assert.match(
      message,
      /declined\\x1b\[2J\\x1b\]0;owned\\x07 onceonly/,
      'escaped (the line break folded), still readable',
    );
    assert.match(message, /\\u2028x\\u202e\\x9b/);
    assert.equal(hasUnsafe(message), false, message);
    const error = detail[0] as Error;
    assert.ok(error instanceof Error, 'the error is still handed to the logger, as an Error');
    assert.equal(hasUnsafe(error.message), false);
    assert.equal(hasUnsafe(error.stack!.replaceAll('\n', '')), false);
    assert.match(error.stack!, /\n\s+at /, 'the stack keeps its lines');
  });

  it("what a handler throws is inert all the way down: a thrown string, an error's causes, an AggregateError's errors, and no fake line in a stack", async () => {
    const thrown: unknown[] = [
      HOSTILE,
      new Error('payment failed', { cause: new Error('gateway', { cause: new TypeError(HOSTILE) }) }),
      new AggregateError([new Error('ok'), new RangeError(HOSTILE)], 'several failed'),
      new Error(HOSTILE, { cause: HOSTILE }),
    ];
    for (const [i, fault] of thrown.entries()) {
      const { lines, logger } = recorder();
      const result = await once(
        memoryStore(),
        `order:${i}`,
        () => {
          throw fault;
        },
        { logger },
      );
      // The fault happened: a failed run, logged once with what was thrown.
      assert.equal(result.outcome, 'failed');
      assert.equal(lines.length, 1);
      const seen: string[] = [lines[0]!.message];
      const walk = (value: unknown, depth: number): void => {
        assert.ok(depth < 10, 'a bounded chain');
        if (typeof value === 'string') seen.push(value);
        if (!(value instanceof Error)) return;
        seen.push(value.message);
        const [head, ...frames] = (value.stack ?? '').split('\n');
        seen.push(head!);
        for (const frame of frames)
          assert.match(frame, /^\s+(at |\.\.\.)|^\s*$|^\s+\[|^\s+\{|^\s+\}/, `a fake stack line: ${frame}`);
        walk((value as { cause?: unknown }).cause, depth + 1);
        if (value instanceof AggregateError) for (const e of value.errors) walk(e, depth + 1);
      };
      for (const d of lines[0]!.detail) walk(d, 0);
      assert.ok(
        seen.slice(1).some((text) => text.includes('declined\\x1b')),
        `the hostile text reached the logger, escaped (case ${i})`,
      );
      for (const text of seen) assert.equal(hasUnsafe(text), false, `case ${i}: ${JSON.stringify(text)}`);
    }
    // The originals are untouched: the copies are for the log.
    assert.equal(((thrown[1] as Error).cause as Error).cause instanceof TypeError, true);
    assert.equal((((thrown[1] as Error).cause as Error).cause as Error).message, HOSTILE);
  });

  it('an error with nothing to escape is handed to the logger as it is, not copied', async () => {
    const { lines, logger } = recorder();
    const fault = new Error('declined', { cause: new Error('card expired') });
    await once(
      memoryStore(),
      'order:plain',
      () => {
        throw fault;
      },
      { logger },
    );
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.detail[0], fault);
  });

  it('once() logs a consumer error quoting its message the same way', async () => {
    const { lines, logger } = recorder();
    const result = await once(
      memoryStore(),
      'order:1',
      () => {
        throw new Error(HOSTILE);
      },
      { logger },
    );
    assert.equal(result.outcome, 'failed');
    assert.equal(lines.length, 1);
    assert.equal(hasUnsafe(lines[0]!.message), false);
    assert.match(lines[0]!.message, /\\x1b\[2J/);
  });
});

describe('stored headers shown by an allow-list', () => {
  it("shows content metadata and the senders' id and type headers; masks credentials whatever their name", () => {
    // The three the block-list missed, and the usual suspects.
    for (const name of [
      'x-okta-hook-auth',
      'paypal-transmission-sig',
      'plaid-verification',
      'Authorization',
      'cookie',
      'x-api-key',
      'x-some-new-credential',
    ]) {
      assert.equal(isShownHeader(name), false, name);
      assert.equal(shownHeaderValue(name, 'hunter2-secret'), '(14 characters)', name);
    }
    for (const name of [
      'content-type',
      'user-agent',
      'x-github-event',
      'webhook-id',
      'paypal-transmission-id',
    ]) {
      assert.equal(shownHeaderValue(name, 'shown'), 'shown', name);
    }
  });

  it('holds no header that any provider reads a signature, token or credential from (a scan of src/providers)', () => {
    // Prepare: every quoted header name in the providers' sources that names a credential.
    const root = fileURLToPath(new URL('../src/providers', import.meta.url));
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory() ? files(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
      );
    const credential = /sig|auth|token|secret|hmac|mac\b|verification|key/;
    const names = new Set<string>();
    for (const file of files(root)) {
      for (const m of readFileSync(file, 'utf8').matchAll(/'([a-z0-9]+(?:-[a-z0-9]+)+)'/g)) {
        // Bitbucket's x-event-key is its event type ('repo:push'), not a key.
        const name = m[1]!;
        if (credential.test(name) && !/-(timestamp|algo)$/.test(name) && name !== 'x-event-key')
          names.add(name);
      }
    }
    // The scan finds what it should.
    for (const known of [
      'stripe-signature',
      'x-okta-hook-auth',
      'paypal-transmission-sig',
      'plaid-verification',
      'x-gitlab-token',
    ]) {
      assert.ok(names.has(known), `the scan finds ${known}`);
    }
    // Assess
    const shown = [...names].filter((n) => isShownHeader(n));
    assert.deepEqual(shown, [], 'credential headers on the allow-list');
  });
});
