/**
 * A body that ends early (the sender closed the connection mid-body, a body source that failed) is
 * rejected as `body_aborted`, not counted as a malformed body (`invalid_body`): the two mean
 * different things to an operator reading the outcomes. Nothing is claimed, no handler runs.
 */
import { strict as assert } from 'node:assert';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createGunzip } from 'node:zlib';
import { webhook } from '../src/adapters/node.js';
import { createReceiver, type DeliveryResult, hmac, memoryStore } from '../src/index.js';

function setup() {
  const outcomes: DeliveryResult[] = [];
  let runs = 0;
  const receiver = createReceiver({
    provider: hmac({
      name: 'github',
      secret: 's3cret',
      signatureHeader: 'x-hub-signature-256',
      signaturePrefix: 'sha256=',
    }),
    store: memoryStore(),
    handler: () => {
      runs++;
    },
    logger: false,
    onOutcome: (result) => {
      outcomes.push(result);
    },
  });
  return { receiver, outcomes, runs: () => runs };
}

describe('a body that ends early', () => {
  it('a sender closing the connection mid-body (onceonly/node, a real socket): rejected body_aborted', async () => {
    const { receiver, outcomes, runs } = setup();
    const server = createServer(webhook(receiver)).listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write(
        'POST /webhooks HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nX-Hub-Signature-256: sha256=00\r\n\r\n{"id":',
      );
      // The server has the headers and part of the body; then the sender goes away.
      const deadline = Date.now() + 5_000;
      await new Promise((resolve) => setTimeout(resolve, 100));
      socket.destroy();
      while (outcomes.length === 0 && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 20));
      assert.equal(outcomes.length, 1, 'the delivery ended with an outcome');
      assert.equal(outcomes[0]!.outcome, 'rejected');
      assert.equal(outcomes[0]!.code, 'body_aborted');
      assert.equal(outcomes[0]!.status, 400);
      assert.equal(runs(), 0);
    } finally {
      server.close();
    }
  });

  it('a body source whose connection reset (receive() with an async iterable): rejected body_aborted, with the cause kept', async () => {
    const { receiver, runs } = setup();
    const failing = {
      async *[Symbol.asyncIterator]() {
        yield new TextEncoder().encode('{"id":');
        throw Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
      },
    };
    const result = await receiver.receive({
      rawBody: failing,
      headers: { 'x-hub-signature-256': 'sha256=00' },
    });
    assert.equal(result.outcome, 'rejected');
    assert.equal(result.code, 'body_aborted');
    assert.equal(result.status, 400);
    assert.match(String((result.error as { cause?: unknown }).cause), /ECONNRESET/);
    assert.equal(runs(), 0);
  });

  it('a body source that fails otherwise (a decoder given bytes it cannot decode) stays invalid_body', async () => {
    const { receiver, runs } = setup();
    const gunzip = createGunzip();
    gunzip.end(Buffer.from('not gzip at all'));
    const result = await receiver.receive({
      rawBody: gunzip,
      headers: { 'x-hub-signature-256': 'sha256=00' },
    });
    assert.equal(result.outcome, 'rejected');
    assert.equal(result.code, 'invalid_body');
    assert.equal(runs(), 0);
  });

  it('a web stream that errors as undici does when the socket closes (fetch()): rejected body_aborted', async () => {
    const { receiver, runs } = setup();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"id":'));
        controller.error(new TypeError('terminated'));
      },
    });
    const res = await receiver.fetch(
      new Request('http://localhost/webhooks', {
        method: 'POST',
        body,
        headers: { 'x-hub-signature-256': 'sha256=00' },
        duplex: 'half',
      } as RequestInit),
    );
    assert.equal(res.status, 400);
    assert.equal((await res.json()).code, 'body_aborted');
    assert.equal(runs(), 0);
  });
});
