/**
 * NestJS + onceonly: GitHub webhooks received once. Run from this folder: `npx tsx server.ts`.
 * In your app the imports are `onceonly`, `onceonly/nestjs` and `onceonly/providers`.
 *
 * The decorators are applied as calls so this file runs under tsx without `experimentalDecorators`.
 * In a Nest project (which has it on) the controller reads:
 *
 *   @Controller('webhooks')
 *   export class WebhooksController {
 *     @Post()
 *     handle(@Req() req: RawBodyRequest<Request>, @Res() res: Response) {
 *       return receive(req, res);
 *     }
 *   }
 */
import 'reflect-metadata';
import { createHmac } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Module, Post, Req, Res } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { webhook } from '../../src/adapters/nestjs.js';
import { memoryStore } from '../../src/index.js';
import { github } from '../../src/providers/index.js';

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret';

const receive = webhook({
  provider: github({ secret }),
  store: memoryStore(), // one process only; use redisStore / postgresStore when you run several
  handler: async ({ type, attempt }) => {
    console.log(`${type} received (attempt ${attempt})`);
  },
});

class WebhooksController {
  handle(req: IncomingMessage, res: ServerResponse) {
    return receive(req, res);
  }
}
Controller('webhooks')(WebhooksController);
Post()(
  WebhooksController.prototype,
  'handle',
  Object.getOwnPropertyDescriptor(WebhooksController.prototype, 'handle')!,
);
Req()(WebhooksController.prototype, 'handle', 0);
Res()(WebhooksController.prototype, 'handle', 1);

class AppModule {}
Module({ controllers: [WebhooksController] })(AppModule);

// rawBody: true makes Nest keep the exact bytes (req.rawBody) next to the parsed JSON.
const app = await NestFactory.create(AppModule, { rawBody: true, logger: ['error', 'warn'] });
const port = Number(process.env.PORT ?? 3000);
await app.listen(port, '127.0.0.1');
const url = `http://127.0.0.1:${port}/webhooks`;
const body = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
console.log(`onceonly + NestJS listening on ${url}`);
console.log('send a signed delivery twice (processed, then duplicate):');
console.log(
  `  curl -si ${url} -H 'content-type: application/json' -H 'x-github-event: ping' -H 'x-hub-signature-256: ${signature}' -d '${body}'`,
);
