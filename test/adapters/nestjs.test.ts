import 'reflect-metadata';
import { strict as assert } from 'node:assert';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { Body, Controller, Module, Post, Req, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { webhook } from '../../src/adapters/nestjs.js';
import type { Receiver } from '../../src/index.js';
import {
  adapterSuite,
  assertParsedFirst,
  bodyOf,
  deliver,
  eventId,
  fixture,
  type Server,
} from './harness.js';

/**
 * The app a Nest user writes, with the decorators applied as calls: the test runner's TypeScript
 * transform does not emit legacy (parameter) decorators. With `experimentalDecorators` this is
 * `@Controller('webhooks') class { @Post() handle(@Req() req, @Res() res) { ... } }`.
 */
function appModule(
  receive: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  errors: unknown[] = [],
) {
  class WebhooksController {
    handle(req: IncomingMessage, res: ServerResponse) {
      return receive(req, res).catch((error: unknown) => {
        errors.push(error);
        throw error;
      });
    }
  }
  Controller('webhooks')(WebhooksController);
  const handle = Object.getOwnPropertyDescriptor(WebhooksController.prototype, 'handle')!;
  Post()(WebhooksController.prototype, 'handle', handle);
  Req()(WebhooksController.prototype, 'handle', 0);
  Res()(WebhooksController.prototype, 'handle', 1);

  // An ordinary JSON route of the same app: Nest's global JSON parser keeps working for it.
  class ApiController {
    echo(body: unknown) {
      return { echoed: body };
    }
  }
  Controller('api')(ApiController);
  const echo = Object.getOwnPropertyDescriptor(ApiController.prototype, 'echo')!;
  Post()(ApiController.prototype, 'echo', echo);
  Body()(ApiController.prototype, 'echo', 0);

  class AppModule {}
  Module({ controllers: [WebhooksController, ApiController] })(AppModule);
  return AppModule;
}

async function start(receiver: Receiver, options: { rawBody: boolean }, errors?: unknown[]): Promise<Server> {
  const app = await NestFactory.create(appModule(webhook(receiver), errors), { ...options, logger: false });
  await app.listen(0, '127.0.0.1');
  return { url: `${await app.getUrl()}/webhooks`.replace('[::1]', '127.0.0.1'), close: () => app.close() };
}

adapterSuite('NestJS 11 (Express platform, rawBody: true)', (receiver) => start(receiver, { rawBody: true }));

describe('NestJS 11: its global JSON parser', () => {
  it('verifies the bytes Nest kept with rawBody: true while other routes get parsed JSON', async () => {
    const f = fixture();
    const server = await start(f.receiver, { rawBody: true });
    try {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      assert.equal((await deliver(server.url, body)).outcome, 'processed');
      assert.equal((await deliver(server.url, body)).outcome, 'duplicate');
      const other = await fetch(server.url.replace('/webhooks', '/api'), {
        method: 'POST',
        body: JSON.stringify({ a: 1 }),
        headers: { 'content-type': 'application/json' },
      });
      assert.deepEqual(await other.json(), { echoed: { a: 1 } });
    } finally {
      await server.close();
    }
  });

  it('answers 500 body_already_parsed naming rawBody: true when the app was created without it', async () => {
    const f = fixture();
    const errors: { code?: string; message?: string }[] = [];
    const server = await start(f.receiver, { rawBody: false }, errors);
    try {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /NestFactory\.create\(AppModule, \{ rawBody: true \}\)/, {
        id,
        ran: f.behaviour.attempts.get(id),
        outcomes: f.outcomes,
      });
      assert.deepEqual(errors, [], "nothing reached Nest's exception filters: the core answered");
    } finally {
      await server.close();
    }
  });
});
