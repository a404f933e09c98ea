import 'reflect-metadata';
import { strict as assert } from 'node:assert';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import {
  Body,
  Controller,
  Get,
  type INestApplication,
  Inject,
  Injectable,
  Module,
  Post,
  Req,
  Res,
  VersioningType,
} from '@nestjs/common';
import { HttpAdapterHost, NestFactory, RouterModule } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import express from 'express';
import { OnceonlyModule, webhook } from '../../src/adapters/nestjs.js';
import type { Receiver } from '../../src/index.js';
import {
  adapterSuite,
  assertParsedFirst,
  bodyOf,
  deliver,
  deliverChunkedNode,
  eventId,
  fixture,
  handshakeSuite,
  LARGE_BODY,
  largeBodySuite,
  localOutcomes,
  outcomeSuite,
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
    handshake(req: IncomingMessage, res: ServerResponse) {
      return this.handle(req, res);
    }
  }
  Controller('webhooks')(WebhooksController);
  const handle = Object.getOwnPropertyDescriptor(WebhooksController.prototype, 'handle')!;
  Post()(WebhooksController.prototype, 'handle', handle);
  Req()(WebhooksController.prototype, 'handle', 0);
  Res()(WebhooksController.prototype, 'handle', 1);
  // The same for GET, for a provider's handshake: `@Get() handshake(@Req() req, @Res() res)`.
  const handshake = Object.getOwnPropertyDescriptor(WebhooksController.prototype, 'handshake')!;
  Get()(WebhooksController.prototype, 'handshake', handshake);
  Req()(WebhooksController.prototype, 'handshake', 0);
  Res()(WebhooksController.prototype, 'handshake', 1);

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

// With rawBody: true Nest's JSON parser (body-parser) reads the body first, up to its own 100 kB
// limit, and answers a body over it after draining the rest.
const NEST_LIMIT = 100 * 1024;
adapterSuite(
  'NestJS 11 (Express platform, rawBody: true)',
  (receiver) => start(receiver, { rawBody: true }),
  {
    parserLimit: NEST_LIMIT,
    parserDrains: true,
  },
);

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

/** An app whose only webhook route comes from OnceonlyModule, on either platform. */
/** Starts `app` on a loopback port; its base URL, on 127.0.0.1. */
async function listenOnLoopback(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  return (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
}

async function startModule(
  imports: unknown[],
  options: { rawBody?: boolean; bodyParser?: boolean; fastify?: boolean },
  path = 'webhooks',
): Promise<Server> {
  class AppModule {}
  Module({ imports: imports as never[] })(AppModule);
  const { fastify, ...rest } = options;
  const app = fastify
    ? await NestFactory.create(AppModule, new FastifyAdapter(), { ...rest, logger: false })
    : await NestFactory.create(AppModule, { ...rest, logger: false });
  const base = await listenOnLoopback(app);
  return { url: `${base}/${path}`, close: () => app.close() };
}

adapterSuite('NestJS 11 OnceonlyModule.register (Express platform, rawBody: true)', (receiver) =>
  startModule([OnceonlyModule.register({ path: 'webhooks', ...receiver })], { rawBody: true }),
);
// Fastify's own bodyLimit (1 MiB) bounds what Nest's parser reads on that platform.
adapterSuite(
  'NestJS 11 OnceonlyModule.register (Fastify platform, rawBody: true)',
  (receiver) =>
    startModule([OnceonlyModule.register({ path: 'webhooks', ...receiver })], {
      rawBody: true,
      fastify: true,
    }),
  { parserLimit: 1024 * 1024 },
);
adapterSuite('NestJS 11 OnceonlyModule.register (Express platform, bodyParser: false)', (receiver) =>
  startModule([OnceonlyModule.register({ path: 'webhooks', ...receiver })], { bodyParser: false }),
);

const moduleApp = (options: Parameters<typeof startModule>[1]) => (receiver: Receiver) =>
  startModule([OnceonlyModule.register({ path: 'webhooks', ...receiver })], options);
// The module's route takes its own body up to maxBodyBytes, past Nest's global 100 kB parsers.
largeBodySuite(
  'NestJS 11 OnceonlyModule.register (Express platform, rawBody: true)',
  moduleApp({ rawBody: true }),
);
largeBodySuite('NestJS 11 OnceonlyModule.register (Express platform, default parsers)', moduleApp({}));
largeBodySuite(
  'NestJS 11 OnceonlyModule.register (Fastify platform, rawBody: true)',
  moduleApp({ rawBody: true, fastify: true }),
);
largeBodySuite('NestJS 11 OnceonlyModule.register under a global prefix', async (receiver) => {
  class AppModule {}
  Module({ imports: [OnceonlyModule.register({ path: 'webhooks', ...receiver })] })(AppModule);
  const app = await NestFactory.create(AppModule, { rawBody: true, logger: false });
  app.setGlobalPrefix('api');
  const base = await listenOnLoopback(app);
  return { url: `${base}/api/webhooks`, close: () => app.close() };
});
outcomeSuite(
  'NestJS 11 webhook() (Express platform, rawBody: true)',
  () => localOutcomes((receiver) => start(receiver, { rawBody: true })),
  { parserLimit: NEST_LIMIT },
);
outcomeSuite(
  'NestJS 11 OnceonlyModule (Fastify platform, rawBody: true)',
  () => localOutcomes(moduleApp({ rawBody: true, fastify: true })),
  { parserLimit: 1024 * 1024 },
);
outcomeSuite('NestJS 11 OnceonlyModule (Express platform, bodyParser: false)', () =>
  localOutcomes(moduleApp({ bodyParser: false })),
);
// OnceonlyModule's route takes GET as well as POST, on both platforms; webhook() in a controller
// of one's own gets whatever method its decorator routes (here @Get() beside @Post()).
handshakeSuite('NestJS 11 OnceonlyModule (Express platform, rawBody: true)', moduleApp({ rawBody: true }));
handshakeSuite(
  'NestJS 11 OnceonlyModule (Fastify platform, rawBody: true)',
  moduleApp({ rawBody: true, fastify: true }),
);
handshakeSuite('NestJS 11 webhook() in a controller with @Get() and @Post()', (receiver) =>
  start(receiver, { rawBody: true }),
);

describe('NestJS 11: OnceonlyModule', () => {
  it('registerAsync builds the receiver from an injected service, and two routes live side by side', async () => {
    // A service of the app's own, used by the handler.
    class Ledger {
      readonly seen: string[] = [];
      record(id: string) {
        this.seen.push(id);
      }
    }
    Injectable()(Ledger);
    class LedgerModule {}
    Module({ providers: [Ledger], exports: [Ledger] })(LedgerModule);
    const f = fixture();
    const other = fixture();
    let injected: Ledger | undefined;
    const server = await startModule(
      [
        OnceonlyModule.registerAsync({
          path: 'webhooks/ledger',
          imports: [LedgerModule],
          inject: [Ledger],
          useFactory: (ledger: Ledger) => {
            injected = ledger;
            return { ...f.options, handler: ({ event }) => ledger.record((event as { id: string }).id) };
          },
        }),
        OnceonlyModule.register({ path: 'webhooks/other', ...other.receiver }),
      ],
      { rawBody: true },
      'webhooks/ledger',
    );
    try {
      const id = eventId();
      const body = bodyOf({ id, action: 'ok' });
      assert.equal((await deliver(server.url, body)).outcome, 'processed');
      assert.equal((await deliver(server.url, body)).outcome, 'duplicate');
      const second = eventId();
      const res = await deliver(
        server.url.replace('/ledger', '/other'),
        bodyOf({ id: second, action: 'ok' }),
      );
      assert.equal(res.outcome, 'processed');
      assert.equal(other.behaviour.runs.get(second), 1);
      // The app's own Ledger was injected into the first route's handler and saw its event once.
      assert.ok(injected instanceof Ledger);
      assert.deepEqual(injected.seen, [id]);
    } finally {
      await server.close();
    }
  });

  it('answers 500 body_already_parsed on the Fastify platform without rawBody: true', async () => {
    const f = fixture();
    const server = await startModule([OnceonlyModule.register({ path: 'webhooks', ...f.receiver })], {
      fastify: true,
    });
    try {
      const id = eventId();
      const res = await deliver(server.url, bodyOf({ id, action: 'ok' }));
      assertParsedFirst(res, /rawBody: true/, {
        id,
        ran: f.behaviour.attempts.get(id),
        outcomes: f.outcomes,
      });
    } finally {
      await server.close();
    }
  });

  it("with bodyParser: false, refuses an oversized body with the core's 413 before reading it", async () => {
    const f = fixture();
    const server = await startModule([OnceonlyModule.register({ path: 'webhooks', ...f.receiver })], {
      bodyParser: false,
    });
    try {
      const res = await deliverChunkedNode(
        server.url,
        bodyOf({ id: eventId(), action: 'ok', padding: 'x'.repeat(200_000) }),
        { declared: true },
      );
      assert.equal(res.status, 413);
      assert.equal(res.outcome, 'too-large');
    } finally {
      await server.close();
    }
  });
});

describe("NestJS 11: OnceonlyModule leaves the app's other routes their bodies", () => {
  // An app route that ends the way the module's does: `POST /projects/:id/webhooks` (a project's
  // webhook settings), with Nest's JSON parser, beside OnceonlyModule at `webhooks`.
  function projectsModule(receiver: Receiver) {
    class ProjectsController {
      save(body: unknown) {
        return { saved: body };
      }
    }
    Controller('projects')(ProjectsController);
    const save = Object.getOwnPropertyDescriptor(ProjectsController.prototype, 'save')!;
    Post(':id/webhooks')(ProjectsController.prototype, 'save', save);
    Body()(ProjectsController.prototype, 'save', 0);
    class AppModule {}
    Module({
      imports: [OnceonlyModule.register({ path: 'webhooks', ...receiver })],
      controllers: [ProjectsController],
    })(AppModule);
    return AppModule;
  }

  for (const prefix of [undefined, 'api']) {
    it(`POST /${prefix ? `${prefix}/` : ''}projects/42/webhooks still gets its JSON body, and the module's route still works`, async () => {
      const f = fixture();
      const app = await NestFactory.create(projectsModule(f.receiver), { logger: false });
      if (prefix) app.setGlobalPrefix(prefix);
      const base = await listenOnLoopback(app);
      const at = prefix ? `${base}/${prefix}` : base;
      try {
        const res = await fetch(`${at}/projects/42/webhooks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ url: 'https://example.com/hook' }),
        });
        assert.equal(res.status, 201);
        assert.deepEqual(await res.json(), { saved: { url: 'https://example.com/hook' } });
        const id = eventId();
        const delivered = await deliver(`${at}/webhooks`, bodyOf({ id, action: 'ok' }));
        assert.equal(delivered.outcome, 'processed');
        assert.equal(f.behaviour.runs.get(id), 1);
      } finally {
        await app.close();
      }
    });
  }
});

describe('NestJS 11: OnceonlyModule on Express finds its route under a RouterModule path, a URI version, or a prefix Nest never handed over', () => {
  const cases: [string, (receiver: Receiver) => Promise<{ app: INestApplication; path: string }>][] = [
    [
      'bodyParser: false, a global prefix, and the app its own express.json()',
      async (receiver) => {
        class AppModule {}
        Module({ imports: [OnceonlyModule.register({ path: 'webhooks', ...receiver })] })(AppModule);
        const app = await NestFactory.create<NestExpressApplication>(AppModule, {
          bodyParser: false,
          logger: false,
        });
        app.setGlobalPrefix('api');
        app.use(express.json());
        return { app, path: '/api/webhooks' };
      },
    ],
    [
      'URI versioning with a default version',
      async (receiver) => {
        class AppModule {}
        Module({ imports: [OnceonlyModule.register({ path: 'webhooks', ...receiver })] })(AppModule);
        const app = await NestFactory.create(AppModule, { logger: false });
        app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' });
        return { app, path: '/v1/webhooks' };
      },
    ],
    [
      'a RouterModule path',
      async (receiver) => {
        const hooks = OnceonlyModule.register({ path: 'webhooks', ...receiver });
        class AppModule {}
        Module({ imports: [hooks, RouterModule.register([{ path: 'payments', module: OnceonlyModule }])] })(
          AppModule,
        );
        const app = await NestFactory.create(AppModule, { logger: false });
        return { app, path: '/payments/webhooks' };
      },
    ],
  ];
  for (const [label, make] of cases) {
    it(`${label}: a delivery (and one over the app parser's 100 kB) reads its own body`, async () => {
      const f = fixture({ maxBodyBytes: LARGE_BODY + 4096 });
      const { app, path } = await make(f.receiver);
      const base = await listenOnLoopback(app);
      try {
        for (const padding of ['', 'p'.repeat(LARGE_BODY - 1024)]) {
          const id = eventId();
          const res = await deliver(`${base}${path}`, bodyOf({ id, action: 'ok', padding }));
          assert.equal(res.outcome, 'processed', `${res.status} ${res.text.slice(0, 200)}`);
          assert.equal(f.behaviour.runs.get(id), 1);
        }
      } finally {
        await app.close();
      }
    });
  }
});

describe('NestJS 11: OnceonlyModule on the Fastify platform (rawBody: true) takes a delivery sent as text/plain', () => {
  it("verifies the exact bytes of a text/plain delivery (AWS SNS's content type), and the app's own text route still gets text", async () => {
    class NotesController {
      save(body: unknown) {
        return { type: typeof body, body };
      }
    }
    Controller('notes')(NotesController);
    const save = Object.getOwnPropertyDescriptor(NotesController.prototype, 'save')!;
    Post()(NotesController.prototype, 'save', save);
    Body()(NotesController.prototype, 'save', 0);
    const f = fixture();
    class AppModule {}
    Module({
      imports: [OnceonlyModule.register({ path: 'webhooks', ...f.receiver })],
      controllers: [NotesController],
    })(AppModule);
    const app = await NestFactory.create(AppModule, new FastifyAdapter(), { rawBody: true, logger: false });
    const base = await listenOnLoopback(app);
    try {
      const id = eventId();
      const res = await deliver(`${base}/webhooks`, bodyOf({ id, action: 'ok' }), {
        headers: { 'content-type': 'text/plain; charset=UTF-8' },
      });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.outcome, 'processed');
      assert.equal(f.behaviour.runs.get(id), 1);
      const note = await fetch(`${base}/notes`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain' },
        body: 'héllo',
      });
      assert.deepEqual(await note.json(), { type: 'string', body: 'héllo' });
    } finally {
      await app.close();
    }
  });

  it('an app that adds its own text/plain parser (in onModuleInit) still boots, and the delivery still verifies', async () => {
    const f = fixture();
    class TextParserModule {
      constructor(private readonly host: HttpAdapterHost) {}
      onModuleInit() {
        const fastify = this.host.httpAdapter.getInstance() as {
          addContentTypeParser(
            type: string,
            opts: { parseAs: 'string' },
            fn: (req: unknown, body: string, done: (e: null, b: unknown) => void) => void,
          ): void;
        };
        fastify.addContentTypeParser('text/plain', { parseAs: 'string' }, (_req, body, done) =>
          done(null, body),
        );
      }
    }
    Inject(HttpAdapterHost)(TextParserModule, undefined, 0);
    Module({ imports: [OnceonlyModule.register({ path: 'webhooks', ...f.receiver })] })(TextParserModule);
    const app = await NestFactory.create(TextParserModule, new FastifyAdapter(), {
      rawBody: true,
      logger: false,
    });
    const base = await listenOnLoopback(app);
    try {
      const id = eventId();
      const res = await deliver(`${base}/webhooks`, bodyOf({ id, action: 'ok' }), {
        headers: { 'content-type': 'text/plain; charset=UTF-8' },
      });
      assert.equal(res.outcome, 'processed', res.text);
      assert.equal(f.behaviour.runs.get(id), 1);
    } finally {
      await app.close();
    }
  });
});
