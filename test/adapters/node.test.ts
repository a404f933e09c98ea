import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { webhook } from '../../src/adapters/node.js';
import {
  adapterSuite,
  bodyOf,
  deliver,
  eventId,
  type Fixture,
  fixture,
  listen,
  type Server,
} from './harness.js';

adapterSuite('node:http', (receiver) => listen(webhook(receiver)));

describe('node:http: a body read before the listener', () => {
  let f: Fixture;
  let server: Server;
  const errors: unknown[] = [];
  before(async () => {
    f = fixture();
    const hook = webhook(f.receiver, { onError: (error) => errors.push(error) });
    // A "global JSON parser" in front: reads and parses the stream, keeps no bytes.
    server = await listen(async (req, res) => {
      let text = '';
      for await (const chunk of req) text += chunk;
      (req as { body?: unknown }).body = JSON.parse(text);
      hook(req, res);
    });
  });
  after(() => server.close());

  it('refuses with 500 body_already_parsed and reports the error, never running the handler', async () => {
    const id = eventId();
    const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
    assert.equal(res.status, 500);
    assert.equal(res.json?.code, 'body_already_parsed');
    assert.match(res.json?.message ?? '', /^onceonly: the request body was already read/);
    assert.equal((errors[0] as { code?: string }).code, 'body_already_parsed');
    assert.equal(f.behaviour.attempts.get(id), undefined);
  });
});

describe('node:http: connect-style middleware', () => {
  let f: Fixture;
  let server: Server;
  before(async () => {
    f = fixture();
    const hook = webhook(f.options);
    server = await listen(async (req, res) => {
      if (req.headers['x-read-first']) for await (const _ of req);
      hook(req, res, (error) => {
        res.statusCode = 599;
        res.end(String((error as { code?: string }).code));
      });
    });
  });
  after(() => server.close());

  it('takes receiver options and answers non-POST requests 405 with Allow: POST', async () => {
    const res = await fetch(server.url);
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'POST');
    const id = eventId();
    assert.equal((await deliver(server.url, bodyOf({ id, action: 'ok' }))).outcome, 'processed');
  });

  it('passes body_already_parsed to next instead of answering itself', async () => {
    const res = await deliver(server.url, bodyOf({ id: eventId(), action: 'ok' }), {
      headers: { 'x-read-first': '1' },
    });
    assert.equal(res.status, 599);
    assert.equal(res.text, 'body_already_parsed');
  });
});
