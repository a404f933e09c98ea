/**
 * Oversized and slow bodies through real HTTP (the onceonly/node listener on node:http, raw TCP
 * clients): over the limit with and without Content-Length gets 413, a trickled body gets 408, and
 * neither buffers the body past the limit nor reaches the store.
 */
import { strict as assert } from 'node:assert';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { webhook } from '../../src/adapters/node.js';
import type { Store } from '../../src/core/types.js';
import { stripe } from '../../src/providers/stripe.js';
import { createReceiver, type DeliveryResult } from '../../src/receiver/receiver.js';

const LIMIT = 64 * 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('oversized and slow bodies over HTTP (onceonly/node)', () => {
  const storeCalls: string[] = [];
  const outcomes: DeliveryResult[] = [];
  let handled = 0;
  let server: Server;
  let port: number;
  const store = new Proxy({} as Store, {
    get: (_, name) => () => {
      storeCalls.push(String(name));
      return Promise.reject(new Error('the store must not be reached'));
    },
  });

  before(async () => {
    const receiver = createReceiver({
      provider: stripe({ secret: 'whsec_0123456789abcdef0123456789abcdef' }),
      store,
      maxBodyBytes: LIMIT,
      bodyTimeout: '1s',
      handler: () => {
        handled++;
      },
      onOutcome: (r) => {
        outcomes.push(r);
      },
    });
    server = createServer(webhook(receiver));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    assert.deepEqual(storeCalls, [], 'no store access for any refused body');
    assert.equal(handled, 0);
  });

  /** Opens a raw connection and collects what the server answers. */
  function open(head: string): { socket: Socket; answer: Promise<string>; closed: Promise<void> } {
    const socket = connect(port, '127.0.0.1');
    socket.write(head);
    let text = '';
    let resolveAnswer: (s: string) => void;
    const answer = new Promise<string>((resolve) => {
      resolveAnswer = resolve;
    });
    socket.on('data', (d) => {
      text += d.toString('latin1');
      if (/\r\n\r\n[\s\S]*\}/.test(text)) resolveAnswer(text);
    });
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    return { socket, answer, closed };
  }

  const head = (extra: string) =>
    `POST /hooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nStripe-Signature: t=1,v1=00\r\n${extra}\r\n`;

  it('a Content-Length over the limit gets 413 before any body byte is sent', async () => {
    const { socket, answer, closed } = open(head(`Content-Length: ${100 * 1024 * 1024}\r\n`));
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"body_too_large"/);
    assert.match(text, /connection: close/i);
    socket.destroy();
    await closed;
  });

  it('a chunked body over the limit gets 413 once it passes the limit; the rest is never read', async () => {
    const { socket, answer, closed } = open(head('Transfer-Encoding: chunked\r\n'));
    const chunk = Buffer.alloc(16 * 1024, 0x61);
    const frame = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from('\r\n'),
    ]);
    let sent = 0;
    let answered = false;
    answer.then(() => {
      answered = true;
    });
    const before = process.memoryUsage().arrayBuffers;
    // Keep sending (200 MiB at most) until the answer comes; honour backpressure like a real client.
    while (!answered && sent < 200 * 1024 * 1024 && !socket.destroyed) {
      sent += chunk.length;
      if (!socket.write(frame))
        await Promise.race([new Promise((r) => socket.once('drain', r)), answer, sleep(200)]);
    }
    const text = await answer;
    const grown = process.memoryUsage().arrayBuffers - before;
    console.log(
      `[fault figures] chunked body over a 64 KiB limit: 413 after ${sent} bytes sent, buffers +${grown} bytes`,
    );
    assert.match(text, /^HTTP\/1\.1 413 /);
    assert.match(text, /"code":"body_too_large"/);
    assert.ok(sent < 32 * 1024 * 1024, `the answer came after ${sent} bytes sent`);
    assert.ok(grown < 16 * 1024 * 1024, `buffers grew by ${grown} bytes`);
    socket.destroy();
    await closed;
  });

  it('many oversized chunked bodies at once hold no more than the limit each', async () => {
    const before = process.memoryUsage().arrayBuffers;
    const chunk = Buffer.alloc(32 * 1024, 0x62);
    const frame = Buffer.concat([
      Buffer.from(`${chunk.length.toString(16)}\r\n`),
      chunk,
      Buffer.from('\r\n'),
    ]);
    const results = await Promise.all(
      Array.from({ length: 20 }, async () => {
        const { socket, answer, closed } = open(head('Transfer-Encoding: chunked\r\n'));
        let answered = false;
        answer.then(() => {
          answered = true;
        });
        let sent = 0;
        while (!answered && sent < 20 * 1024 * 1024 && !socket.destroyed) {
          sent += chunk.length;
          if (!socket.write(frame))
            await Promise.race([new Promise((r) => socket.once('drain', r)), answer, sleep(200)]);
        }
        const text = await answer;
        socket.destroy();
        await closed;
        return text;
      }),
    );
    const grown = process.memoryUsage().arrayBuffers - before;
    console.log(
      `[fault figures] 20 concurrent chunked bodies over the limit: all 413, buffers +${grown} bytes`,
    );
    for (const text of results) assert.match(text, /^HTTP\/1\.1 413 /);
    assert.ok(grown < 64 * 1024 * 1024, `buffers grew by ${grown} bytes for 20 refused bodies`);
  });

  it('a body trickled a byte every 100 ms gets 408 (body_timeout) at the 1 s body deadline', async () => {
    const started = Date.now();
    const { socket, answer, closed } = open(head('Content-Length: 1000\r\n'));
    let answered = false;
    answer.then(() => {
      answered = true;
    });
    while (!answered && Date.now() - started < 10_000) {
      socket.write('{');
      await Promise.race([sleep(100), answer]);
    }
    const text = await answer;
    assert.match(text, /^HTTP\/1\.1 408 /);
    assert.match(text, /"code":"body_timeout"/);
    const elapsed = Date.now() - started;
    console.log(`[fault figures] trickled body: 408 after ${elapsed} ms`);
    assert.ok(elapsed >= 900 && elapsed < 5_000, `answered after ${elapsed} ms`);
    socket.destroy();
    await closed;
    assert.ok(outcomes.some((o) => o.status === 408 && o.code === 'body_timeout'));
  });
});
