/**
 * NestJS + onceonly: GitHub webhooks received once. Run from this folder: `npx tsx server.ts`.
 *
 * The module is applied as a call so this file runs under tsx without `experimentalDecorators`;
 * in a Nest project it reads `@Module({ imports: [OnceonlyModule.register({ ... })] })`.
 * `OnceonlyModule.registerAsync({ path, imports, inject, useFactory })` builds the options from your
 * own services instead.
 */
import { createHmac } from 'node:crypto';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { memoryStore } from 'onceonly';
import { OnceonlyModule } from 'onceonly/nestjs';
import { github } from 'onceonly/providers';

const secret = process.env.GITHUB_WEBHOOK_SECRET ?? 'dev-secret';

class AppModule {}
Module({
  imports: [
    OnceonlyModule.register({
      path: 'webhooks',
      provider: github({ secret }),
      store: memoryStore(), // one process only; use redisStore / postgresStore when you run several
      handler: async ({ type, attempt }) => {
        console.log(`${type} received (attempt ${attempt})`);
      },
    }),
  ],
})(AppModule);

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
