/**
 * Every ```ts block of README.md and docs/*.md compiles under `strict`, against the sources (each
 * `onceonly/...` import resolves to the file the subpath publishes). The docs show fragments: what a
 * block assumes (a `store`, a `pool`, an `event`, the SDK client it calls) is declared here, beside
 * the test, never in the docs:
 *
 * - a package export the block uses without importing it is imported from its subpath (the first in
 *   the manifest's order; a page's scene names the subpath where several export the name);
 * - each page has a scene: one declaration a line, taken only for a name the block uses and does not
 *   declare itself. Third-party SDK clients the docs call (Stripe's, Resend's, Octokit, ...) are
 *   `any`: what is checked is the onceonly API a block uses, and the shape of its own code;
 * - a block that is an object member (`handler: ...`) is compiled inside the object it belongs to.
 *
 * A diagnostic is reported at the doc's own line.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const dir = join(root, '.tmp', `docs-${process.pid}`);
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, { import: { default: string } } | string>;
};

interface Block {
  page: string;
  line: number;
  code: string;
}

function blocksOf(page: string): Block[] {
  const lines = readFileSync(join(root, page), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```ts') continue;
    const indent = lines[i]!.indexOf('`');
    let end = i + 1;
    while (lines[end]!.trim() !== '```') end++;
    const code = lines
      .slice(i + 1, end)
      .map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length)))
      .join('\n');
    blocks.push({ page, line: i + 2, code });
    i = end;
  }
  return blocks;
}

const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];
const blocks = pages.flatMap(blocksOf);
/** Not in the docs: a block that misuses the API, which must be reported (the check can fail). */
const misuse: Block = {
  page: 'misuse',
  line: 1,
  code: 'createReceiver({ provider: stripe({ secret: 42 }), store, handler: async ({ event }) => event.nope.id });',
};

/** Each subpath's source file, from the manifest (`./dist/x.js` is `src/x.ts`). */
const subpaths = Object.entries(manifest.exports)
  .filter(([s]) => s !== './package.json')
  .map(([s, target]) => ({
    specifier: s === '.' ? 'onceonly' : `onceonly/${s.slice(2)}`,
    file: join(
      root,
      (target as { import: { default: string } }).import.default
        .replace(/^\.\/dist\//, 'src/')
        .replace(/\.js$/, '.ts'),
    ),
  }));

const options: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts', 'lib.dom.iterable.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  types: ['node'],
  skipLibCheck: true,
  paths: {
    ...Object.fromEntries(subpaths.map((s) => [s.specifier, [s.file]])),
    // The senders' published types the "Typed events" blocks use: in the SDKs' workspace.
    stripe: [join(root, 'test/sdks/node_modules/stripe/esm/stripe.esm.node.d.ts')],
    '@octokit/webhooks-types': [join(root, 'test/sdks/node_modules/@octokit/webhooks-types/schema.d.ts')],
  },
};

/** The package's exports by name, each from the first subpath (in the manifest's order) that has it. */
function exportsByName(): { found: Map<string, string>; program: ts.Program } {
  const program = ts.createProgram(
    subpaths.map((s) => s.file),
    options,
  );
  const checker = program.getTypeChecker();
  const found = new Map<string, string>();
  for (const { specifier, file } of subpaths) {
    const symbol = checker.getSymbolAtLocation(program.getSourceFile(file)!);
    for (const e of checker.getExportsOfModule(symbol!)) if (!found.has(e.name)) found.set(e.name, specifier);
  }
  return { found, program };
}

// What every page may assume, then what each page's fragments assume (one declaration a line; the
// page's own line wins over the common one of the same name).
const common = `
declare const store: import('onceonly').Store;
declare const receiver: import('onceonly').Receiver;
declare const provider: import('onceonly').Provider<import('onceonly/providers').StripeEvent>;
declare const handler: import('onceonly').Handler<import('onceonly/providers').StripeEvent>;
declare const client: import('ioredis').Redis;
declare const secret: string;
declare const log: { warn(...args: unknown[]): void };
declare const app: import('express').Express;
import { webhook } from 'onceonly/express';
declare const msg: { id: string; body: string; ack(): void; nack(options: { requeue: boolean }): void };
declare function fulfil(body: unknown, options: { attempt: number; signal: AbortSignal }): Promise<void>;
declare const work: (ctx: import('onceonly').WorkContext) => Promise<void>;
declare function markPaid(invoice: Record<string, unknown>): Promise<void>;
declare function grant(customer: unknown): void;
declare const resend: { emails: { send(email: object, options: { idempotencyKey: string }): Promise<{ data: { id: string } | null; error: { name: string; message: string } | null }> } };
declare function sendReceipt(...args: unknown[]): Promise<void>;
declare const db: any;
declare const pool: import('pg').Pool;
declare const event: import('onceonly/providers').StripeEvent & { data: { object: { id: string } } };
declare const total: number;
declare const key: string;
declare const retentionMs: number;
declare const order: Record<string, unknown>;
declare const orders: any;
declare const myStore: (options: { client: unknown }) => import('onceonly').Store;
`;

const scenes: Record<string, string> = {
  'README.md': `
declare function adminName(request: Request): string | undefined;
declare const app: import('express').Express;
declare const store: import('onceonly').Store;
declare const stripe: { paymentIntents: { create(params: object, options: { idempotencyKey: string }): Promise<{ id: string; status: string }> } };
declare const params: object;
`,
  'docs/idempotency-keys.md': `
declare const stripe: { paymentIntents: { create(params: object, options: { idempotencyKey: string }): Promise<{ id: string; status: string }> } };
declare const params: object;
declare const ctx: import('onceonly').HandlerContext<import('onceonly/providers').StripeEvent>;
declare const square: { payments: { create(request: object): Promise<{ payment?: { id?: string; status?: string } }> } };
declare const octokit: { rest: { checks: { listForRef(request: object): Promise<{ data: { check_runs: { id: number; external_id: string | null }[] } }>; create(request: object): Promise<{ data: { id: number } }> } } };
declare const slack: { conversations: { history(request: object): Promise<{ messages?: { ts?: string; metadata?: { event_payload?: Record<string, unknown> } }[] }> }; chat: { postMessage(request: object): Promise<{ ts?: string }> } };
declare const user: { email: string };
declare const html: string;
declare const orderId: string;
declare function paypalToken(): Promise<string>;
declare const cardId: string;
declare const customerId: string;
declare const cents: number;
declare const ADYEN_CHECKOUT: string;
declare const ADYEN_API_KEY: string;
declare const pspReference: string;
declare const merchantAccount: string;
declare const refundRef: string;
declare const value: number;
declare const currency: string;
declare const POSTMARK_TOKEN: string;
declare const email: string;
declare const TextBody: string;
declare const owner: string;
declare const repo: string;
declare const sha: string;
declare const channel: string;
declare const text: string;
declare function markCharged(orderId: unknown, chargeId: string): Promise<void>;
`,
  'docs/reliability.md': `
declare const stripe: { paymentIntents: { create(params: object, options: { idempotencyKey: string }): Promise<{ id: string; status: string }> } };
declare const params: object;
declare const store: import('onceonly/postgres').PostgresStore & import('onceonly/sqlite').SqliteStore;
import pg from 'pg';
declare const connectionString: string;
declare const from: string;
declare const html: string;
`,
  'docs/inbox.md': `
import { postgresStore } from 'onceonly/postgres';
declare const store: import('onceonly').Store;
declare function deploy(sha: unknown, options: { attempt: number; signal: AbortSignal }): Promise<void>;
`,
  'docs/observability.md': `
declare const app: import('express').Express;
`,
  'docs/consumers.md': `
declare const store: import('onceonly').Store;
declare const queueUrl: string;
declare const deadLetterQueueUrl: string;
declare function ship(order: unknown, options: { attempt: number; signal: AbortSignal }): Promise<void>;
`,
  'docs/console.md': `
declare function yourSession(request: Request): Promise<{ isAdmin: boolean; email: string } | undefined>;
declare const store: import('onceonly').Store;
`,
  'docs/lambda.md': `
import { webhook } from 'onceonly/lambda';
`,
  'docs/adapters.md': `
declare class BillingModule {}
declare class BillingService { markPaid(invoice: unknown): Promise<void> }
`,
  'docs/postgres.md': `
declare const store: import('onceonly/postgres').PostgresStore;
import pg from 'pg';
declare const sql: import('postgres').Sql;
import { kyselyTx } from 'onceonly/postgres';
import { drizzleTx } from 'onceonly/postgres';
import { postgresStore } from 'onceonly/postgres';
`,
  'docs/mysql.md': `
declare const store: import('onceonly/mysql').MysqlStore;
declare const pool: import('mysql2/promise').Pool;
import mysql from 'mysql2/promise';
import { kyselyTx } from 'onceonly/mysql';
import { drizzleTx } from 'onceonly/mysql';
`,
  'docs/sqlite.md': `
declare const store: import('onceonly/sqlite').SqliteStore;
declare const db: import('better-sqlite3').Database;
import { kyselyTx } from 'onceonly/sqlite';
import { drizzleTx } from 'onceonly/sqlite';
`,
  'docs/dynamodb.md': `
declare const client: import('@aws-sdk/client-dynamodb').DynamoDBClient;
declare const dynamodb: { Table: new (scope: object, id: string, props: object) => { addGlobalSecondaryIndex(props: object): void }; AttributeType: Record<'STRING' | 'NUMBER', string>; BillingMode: Record<'PAY_PER_REQUEST', string>; ProjectionType: Record<'INCLUDE', string> };
`,
  'docs/redis.md': `
declare const client: import('ioredis').Redis;
`,
  'docs/providers.md': `
declare const rawBody: Uint8Array;
declare const headers: Headers;
declare const queue: { send(message: unknown): Promise<void> };
declare const message: { rawBody: Uint8Array; headers: [string, string][]; receivedAt: string };
`,
};

/** What one block assumes beyond its page's scene, by the block's first line. */
const blockScenes: Record<string, string> = {
  '// Kysely (PostgresDialect over pg)': `
declare const db: import('kysely').Kysely<{ orders: { id: string; total: number } }>;
declare const order: { id: string; total: number };
`,
  "// Drizzle (node-postgres driver): pass Drizzle's sql tag as well": `
declare const db: import('drizzle-orm/node-postgres').NodePgDatabase;
declare const orders: typeof import('./tables.js').pgOrders;
declare const order: { id: string };
`,
  '// Kysely (MysqlDialect)': `
declare const db: import('kysely').Kysely<{ orders: { id: string; total: number } }>;
declare const order: { id: string; total: number };
`,
  '// Drizzle (drizzle-orm/mysql2)': `
declare const db: import('drizzle-orm/mysql2').MySql2Database;
declare const orders: typeof import('./tables.js').mysqlOrders;
declare const order: { id: string };
`,
  '// Kysely (SqliteDialect over the same better-sqlite3 Database; not over node:sqlite)': `
declare const kdb: import('kysely').Kysely<{ orders: { id: string; total: number } }>;
declare const order: { id: string; total: number };
`,
  '// Drizzle (drizzle-orm/better-sqlite3): its transactions are synchronous': `
declare const ddb: import('drizzle-orm/better-sqlite3').BetterSQLite3Database;
declare const orders: typeof import('./tables.js').sqliteOrders;
declare const order: { id: string };
`,
};

/** The tables the Drizzle blocks insert into, and the modules the docs import that the repository does not install. */
const tables = `import { pgTable, text as pgText } from 'drizzle-orm/pg-core';
import { mysqlTable, varchar } from 'drizzle-orm/mysql-core';
import { sqliteTable, text as sqliteText } from 'drizzle-orm/sqlite-core';
export const pgOrders = pgTable('orders', { id: pgText('id').primaryKey() });
export const mysqlOrders = mysqlTable('orders', { id: varchar('id', { length: 64 }).primaryKey() });
export const sqliteOrders = sqliteTable('orders', { id: sqliteText('id').primaryKey() });
`;
// node:sqlite as @types/node 22.16+ declares it (the root's @types/node is 20's, the lowest line).
const ambient = `declare module 'node:sqlite' {
  export class StatementSync {
    run(...params: (null | number | bigint | string | Uint8Array)[]): { changes: number | bigint; lastInsertRowid: number | bigint };
    all(...params: (null | number | bigint | string | Uint8Array)[]): Record<string, unknown>[];
    get(...params: (null | number | bigint | string | Uint8Array)[]): Record<string, unknown> | undefined;
  }
  export class DatabaseSync {
    constructor(path: string, options?: { open?: boolean; readOnly?: boolean; timeout?: number });
    exec(sql: string): void;
    prepare(sql: string): StatementSync;
    readonly isTransaction: boolean;
    readonly isOpen: boolean;
    close(): void;
  }
}
declare module '@aws-sdk/client-sqs' {
  export class SQS {
    constructor(config: object);
    receiveMessage: any; deleteMessageBatch: any; changeMessageVisibility: any; changeMessageVisibilityBatch: any; sendMessage: any;
  }
  export class SQSClient { constructor(config: object); send(command: SendMessageCommand): Promise<unknown> }
  export class SendMessageCommand { constructor(input: { QueueUrl: string | undefined; MessageBody: string }) }
}
`;

/**
 * The object a member-only block belongs to, by its first member's name: `[before, after]`.
 * `handler:` is a receiver's option (with a Stripe provider, as the docs' handlers assume).
 */
const wrappers: Record<string, [string, string]> = {
  // AWS CDK: a Stack's constructor.
  "const table = new dynamodb.Table(this, 'Onceonly', {": ['class OnceonlyStack { constructor() {', '} }'],
  handler: ["createReceiver({ provider: stripe_({ secret: 'whsec_docs' }), store: store_,", '});'],
  // A family declaration's field (the families are the repository's own, not exported).
  fetchedKeys: [
    "const declaration: { fetchedKeys: import('../../src/providers/families/asymmetric.js').FetchedKeysSpec } = {",
    '};',
  ],
};

function declaredName(line: string): string | undefined {
  return (
    /^declare (?:const|function|let) (\w+)/.exec(line)?.[1] ??
    /^import \{ (\w+) \} from/.exec(line)?.[1] ??
    /^import (\w+) from/.exec(line)?.[1] ??
    /^declare class (\w+)/.exec(line)?.[1] ??
    /^(?:type|interface) (\w+)/.exec(line)?.[1]
  );
}

function sceneOf(block: Block): Map<string, string> {
  const scene = new Map<string, string>();
  const first = block.code.trim().split('\n')[0]!.trim();
  for (const text of [common, scenes[block.page] ?? '', blockScenes[first] ?? '']) {
    for (const line of text.split('\n')) {
      const name = declaredName(line.trim());
      if (name) scene.set(name, line.trim());
    }
  }
  return scene;
}

/** The names a block declares or imports itself (roughly: enough to leave them to the block). */
function declaredIn(code: string): Set<string> {
  const names = new Set<string>();
  for (const m of code.matchAll(/^\s*import\s+(?:type\s+)?(?:(\w+)\s*,?\s*)?(?:\{([^}]*)\})?/gm)) {
    if (m[1]) names.add(m[1]);
    for (const part of (m[2] ?? '').split(',')) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop()
        ?.replace(/^type\s+/, '');
      if (name) names.add(name);
    }
  }
  for (const m of code.matchAll(/\b(?:const|let|var|function|class)\s+(\w+)/g)) names.add(m[1]!);
  return names;
}

interface Compiled {
  block: Block;
  file: string;
  /** The generated line of the block's first line, 0-based. */
  offset: number;
}

let results: Map<Compiled, string[]>;

before(() => {
  // The "Typed events" blocks type events with the senders' own published types (Stripe, Octokit).
  execFileSync(process.execPath, [join(root, 'scripts/workspaces.mjs'), 'install', 'test/sdks'], {
    stdio: 'inherit',
  });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'tables.ts'), tables);
  writeFileSync(join(dir, 'ambient.d.ts'), ambient);
  const { found: exported, program: first } = exportsByName();
  const compiled: Compiled[] = [...blocks, misuse].map((block, n) => {
    const scene = sceneOf(block);
    const own = declaredIn(block.code);
    const used = new Set(block.code.match(/[A-Za-z_$][\w$]*/g) ?? []);
    const member = /^(\w+):/.exec(block.code.replace(/^\s*\/\/.*$/gm, '').trim())?.[1];
    const wrap =
      wrappers[block.code.trim().split('\n')[0]!.trim()] ?? (member ? wrappers[member] : undefined);
    if (wrap) used.add('createReceiver');
    const prelude: string[] = [];
    const imports = new Map<string, string[]>();
    for (const name of used) {
      if (own.has(name)) continue;
      const line = scene.get(name);
      if (line) prelude.push(line);
      else if (exported.has(name))
        imports.set(exported.get(name)!, [...(imports.get(exported.get(name)!) ?? []), name]);
    }
    if (wrap)
      prelude.push(
        "import { stripe as stripe_ } from 'onceonly/providers';",
        'declare const store_: import("onceonly").Store;',
      );
    const head = [
      ...[...imports].map(([from, names]) => `import { ${names.join(', ')} } from '${from}';`),
      ...prelude,
      `// ${block.page}:${block.line}`,
    ];
    if (wrap) head.push(wrap[0]);
    const text = `${head.join('\n')}\n${block.code}\n${wrap ? wrap[1] : ''}\nexport {};\n`;
    const file = join(dir, `block-${String(n).padStart(3, '0')}.ts`);
    writeFileSync(file, text);
    return { block, file, offset: head.length };
  });
  // The first program's parsed files (the sources, the libraries' types) are reused.
  const program = ts.createProgram({
    rootNames: [...compiled.map((c) => c.file), join(dir, 'ambient.d.ts')],
    options,
    oldProgram: first,
  });
  results = new Map();
  for (const c of compiled) {
    const source = program.getSourceFile(c.file)!;
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    results.set(
      c,
      diagnostics.map((d) => {
        const at = source.getLineAndCharacterOfPosition(d.start ?? 0).line;
        const where =
          at >= c.offset
            ? `${c.block.page}:${c.block.line + at - c.offset}`
            : `${c.file}:${at + 1} (the context)`;
        return `${where}: TS${d.code} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      }),
    );
  }
});
after(() => rmSync(dir, { recursive: true, force: true }));

describe('the TypeScript blocks of README.md and docs/ compile under strict', () => {
  it('finds the blocks', () => {
    assert.ok(blocks.length >= 90, `${blocks.length} blocks`);
    assert.ok(pages.filter((p) => blocks.some((b) => b.page === p)).length >= 12);
  });
  it('reports a block that misuses the API, at its line', () => {
    const errors = [...results].filter(([c]) => c.block === misuse).flatMap(([, e]) => e);
    assert.equal(errors.length, 2, errors.join('\n'));
    assert.match(errors[0]!, /^misuse:1: TS2322 Type 'number' is not assignable/);
    assert.match(errors[1]!, /^misuse:1: TS18046 'event.nope' is of type 'unknown'/);
  });
  for (const page of pages) {
    const count = blocks.filter((b) => b.page === page).length;
    if (count === 0) continue;
    it(`${page}: its ${count} TypeScript block(s)`, () => {
      const errors = [...results].filter(([c]) => c.block.page === page).flatMap(([, e]) => e);
      assert.deepEqual(errors, []);
    });
  }
});
