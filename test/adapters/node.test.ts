import { strict as assert } from 'node:assert';
import { after, before, describe, it } from 'node:test';
import { webhook } from '../../src/adapters/node.js';
import {
  adapterSuite,
  assertParsedFirst,
  bodyOf,
  deliver,
  eventId,
  type Fixture,
  fixture,
  handshakeSuite,
  largeBodySuite,
  listen,
  localOutcomes,
  outcomeSuite,
  type Server,
} from './harness.js';

adapterSuite('node:http', (receiver) => listen(webhook(receiver)));
outcomeSuite('node:http', () => localOutcomes((receiver) => listen(webhook(receiver))));
handshakeSuite('node:http', (receiver) => listen(webhook(receiver)));
largeBodySuite('node:http', (receiver) => listen(webhook(receiver)));

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

  it('answers 500 body_already_parsed through the core, never running the handler', async () => {
    const id = eventId();
    const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
    assertParsedFirst(res, /before anything reads its body/, {
      id,
      ran: f.behaviour.attempts.get(id),
      outcomes: f.outcomes,
    });
    assert.deepEqual(errors, [], 'onError is for failures the core could not answer');
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

  it('answers body_already_parsed through the core as middleware too (an outcome, not an error for next)', async () => {
    const id = eventId();
    const res = await deliver(server.url, bodyOf({ id, action: 'ok' }), {
      headers: { 'x-read-first': '1' },
    });
    assertParsedFirst(res, /before anything reads its body/, {
      id,
      ran: f.behaviour.attempts.get(id),
      outcomes: f.outcomes,
    });
  });
});
