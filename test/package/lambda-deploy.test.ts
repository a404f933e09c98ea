/**
 * docs/lambda.md's "Deploy the example", run as a newcomer runs it, up to the upload: the snippet's
 * own commands, read from the doc, in a fresh folder under the system's temporary folder (no
 * node_modules above it lends anything), with `npm install onceonly` taking the packed tarball of
 * the built dist/ (`npm run build` first) and every other package at the root's range (npm's
 * cache first: `--prefer-offline`, so the first run on a machine fetches what the cache lacks,
 * as the workspaces' installs do). Its `sam build` is done as SAM does it (test/support/sam.ts):
 * the template read, each function's esbuild
 * command line made from its own `BuildProperties`, run by the esbuild the project installed,
 * found as SAM finds it, in a copy of the project without node_modules where only the production
 * dependencies were installed (`npm install --omit=dev`). Then each function's bundle, alone in its
 * folder, is loaded as Lambda's Node.js runtime loads it (the `Handler` resolved to `handler.mjs`
 * and its export) in a Node process of its own (no tsx, no repository on the path), with the
 * template's environment (the deploy's answers: REDIS_URL to the local Redis, the secrets), and
 * invoked:
 *
 * - StripeWebhook: a Function URL event with a delivery signed by the Stripe SDK: 200 processed;
 *   the same delivery in another container: 200 duplicate.
 * - GithubWebhook: a signed GitHub delivery: 202 into the inbox; GithubInboxDrain, another container,
 *   runs it (`ran` >= 1).
 * - Orders: an SQS batch of two records: no batchItemFailures.
 *
 * Not covered (no AWS here): IAM, the Function URL's auth, VPC, cold starts, the upload itself.
 */
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash, createHmac, randomUUID } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createClient } from 'redis';
import { esbuildArgs, readYaml, type SamFunction, samFunctions } from '../support/sam.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'onceonly-lambda-deploy-'));
const run = `${Date.now().toString(36)}${process.pid.toString(36)}`;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The answers to `sam deploy --guided`'s questions (the template's parameters). */
const parameters = {
  RedisUrl: REDIS_URL,
  StripeWebhookSecret: `whsec_deploy_${run}`,
  GithubWebhookSecret: `gh-deploy-${run}`,
};
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}`, NODE_OPTIONS: '' };

function sh(cmd: string, args: string[], cwd: string): string {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} (in ${cwd}) failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** The `sh` block of docs/lambda.md's "Deploy the example", one command per entry. */
function snippet(): string[][] {
  const doc = readFileSync(join(root, 'docs', 'lambda.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Deploy the example'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(block, 'docs/lambda.md: no sh block under "Deploy the example"');
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter(Boolean)
    .flatMap((line) => line.split('&&').map((cmd) => cmd.trim().split(/\s+/)));
}

interface Built {
  readonly fn: SamFunction;
  readonly taskRoot: string;
}
const built: Built[] = [];
let deployReached = false;
let tarball = '';
let esbuildUsed = '';

/** `sam build` in `project`: functions with the same build are built once, as SAM groups them. */
function samBuild(project: string): void {
  const template = readYaml(readFileSync(join(project, 'template.yaml'), 'utf8'));
  const groups = new Map<string, SamFunction[]>();
  for (const fn of samFunctions(template, parameters)) {
    assert.equal(fn.buildMethod, 'esbuild', `${fn.name}: BuildMethod`);
    assert.match(fn.runtime, /^nodejs\d+\.x$/, `${fn.name}: Runtime`);
    const key = JSON.stringify([fn.runtime, fn.buildProperties]);
    groups.set(key, [...(groups.get(key) ?? []), fn]);
  }
  let n = 0;
  for (const fns of groups.values()) {
    // The workflow: the project copied without node_modules, its production dependencies installed.
    const build = join(dir, `sam-build-${n++}`);
    cpSync(project, build, {
      recursive: true,
      filter: (src) => !/[/\\](node_modules|\.aws-sam|\.git)$/.test(src),
    });
    sh('npm', ['install', '-q', '--no-audit', '--no-save', '--omit=dev', '--prefer-offline'], build);
    const esbuild = join(sh('npm', ['root'], build).trim(), '.bin', 'esbuild');
    assert.ok(
      existsSync(esbuild),
      'sam build: "Cannot find esbuild. esbuild must be installed on the host machine to use this feature." (not among the dependencies)',
    );
    esbuildUsed = esbuild;
    for (const fn of fns) {
      const taskRoot = join(dir, 'aws-sam', 'build', fn.name);
      mkdirSync(taskRoot, { recursive: true });
      const args = esbuildArgs(fn, taskRoot, (rel) => existsSync(join(build, rel)));
      const r = spawnSync(esbuild, [...args, '--log-level=warning'], { cwd: build, env, encoding: 'utf8' });
      assert.equal(r.status, 0, `sam build: esbuild failed for ${fn.name}:\n${r.stderr}`);
      built.push({ fn, taskRoot });
    }
  }
}

/** The snippet's commands, as a newcomer at the root of a clone runs them (in `dir`, a temp folder). */
function runSnippet(): void {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    devDependencies: Record<string, string>;
  };
  let cwd = dir;
  for (const [cmd, ...args] of snippet()) {
    if (cmd === 'mkdir') for (const a of args) mkdirSync(join(cwd, a));
    else if (cmd === 'cd') cwd = resolve(cwd, args[0]!);
    else if (cmd === 'cp') {
      const to = join(cwd, args.at(-1)!);
      for (const from of args.slice(0, -1)) cpSync(join(root, from), join(to, basename(from)));
    } else if (cmd === 'npm' && args[0] === 'install') {
      const specs = args.slice(1).map((name) => {
        if (name === 'onceonly') {
          // In the project, as the registry's would be: SAM's copy of the project takes it along.
          cpSync(tarball, join(cwd, basename(tarball)));
          return `./${basename(tarball)}`;
        }
        const range = manifest.devDependencies[name];
        assert.ok(range, `the snippet installs ${name}, which the root's devDependencies do not pin`);
        return `${name}@${range}`;
      });
      sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', ...specs], cwd);
    } else if (cmd === 'npm') sh('npm', args, cwd);
    else if (cmd === 'sam' && args[0] === 'build') samBuild(cwd);
    else if (cmd === 'sam' && args[0] === 'deploy') deployReached = true;
    else assert.fail(`the snippet runs ${cmd} ${args.join(' ')}, which this test does not know`);
  }
}

interface Invocation {
  readonly result?: unknown;
  readonly error?: string;
}
interface Container {
  readonly invocations: Invocation[];
  readonly output: string;
}

/**
 * One container of `fn`: a Node process that loads its bundle as Lambda's runtime does and invokes
 * the handler with each event in turn, then is frozen (here: exits).
 */
function invoke(name: string, events: unknown[]): Container {
  const b = built.find((x) => x.fn.name === name);
  assert.ok(b, `the template has no function ${name}`);
  const eventsFile = join(dir, `events-${name}-${randomUUID()}.json`);
  writeFileSync(eventsFile, JSON.stringify(events));
  const r = spawnSync(process.execPath, [join(dir, 'runtime.mjs'), b.fn.handler, eventsFile], {
    cwd: b.taskRoot,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      ...b.fn.environment,
      LAMBDA_TASK_ROOT: b.taskRoot,
      AWS_LAMBDA_FUNCTION_NAME: name,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(b.fn.memoryMb),
      AWS_LAMBDA_FUNCTION_TIMEOUT: String(b.fn.timeoutSeconds),
      AWS_EXECUTION_ENV: `AWS_Lambda_${b.fn.runtime}`,
      AWS_REGION: 'us-east-1',
    },
  });
  const output = `${r.stdout}${r.stderr}`;
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@invocations '));
  assert.ok(line, `${name} (${b.fn.handler}) did not run:\n${output.slice(-3000)}`);
  return { invocations: JSON.parse(line.slice('@@invocations '.length)) as Invocation[], output };
}

/** Lambda's Node.js runtime in small: the handler's module and export, the context, each event. */
const runtime = `import { existsSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
const [handlerName, eventsFile] = process.argv.slice(2);
const taskRoot = process.env.LAMBDA_TASK_ROOT;
const match = /^([^.]*)\\.(.*)$/.exec(handlerName);
if (!match) throw new Error('Runtime.MalformedHandlerName: ' + handlerName);
const [, modulePath, exportPath] = match;
const file = ['.js', '.mjs', '.cjs'].map((ext) => join(taskRoot, modulePath + ext)).find((f) => existsSync(f));
if (!file) throw new Error("Runtime.ImportModuleError: Cannot find module '" + modulePath + "'");
const mod = await import(pathToFileURL(file).href);
const fn = exportPath.split('.').reduce((o, k) => o?.[k], mod);
if (typeof fn !== 'function') throw new Error('Runtime.HandlerNotFound: ' + handlerName + ' is undefined or not exported');
const timeout = Number(process.env.AWS_LAMBDA_FUNCTION_TIMEOUT) * 1000;
const out = [];
for (const event of JSON.parse(readFileSync(eventsFile, 'utf8'))) {
  const end = Date.now() + timeout;
  const context = {
    callbackWaitsForEmptyEventLoop: true,
    functionName: process.env.AWS_LAMBDA_FUNCTION_NAME,
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:123456789012:function:' + process.env.AWS_LAMBDA_FUNCTION_NAME,
    memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
    awsRequestId: crypto.randomUUID(),
    getRemainingTimeInMillis: () => end - Date.now(),
  };
  try {
    out.push({ result: await fn(event, context) });
  } catch (error) {
    out.push({ error: String(error?.stack ?? error) });
  }
}
console.log('@@invocations ' + JSON.stringify(out));
process.exit(0);
`;

const URL_DOMAIN = 'abcdefg1234.lambda-url.us-east-1.on.aws';

/** A Lambda Function URL event (payload 2.0) for a POST of `body` with `headers`. */
function functionUrlEvent(headers: Record<string, string>, body: string) {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/',
    rawQueryString: '',
    headers: { host: URL_DOMAIN, 'x-forwarded-proto': 'https', ...headers },
    requestContext: {
      accountId: 'anonymous',
      apiId: 'abcdefg1234',
      domainName: URL_DOMAIN,
      domainPrefix: 'abcdefg1234',
      http: { method: 'POST', path: '/', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1', userAgent: 'agent' },
      requestId: randomUUID(),
      routeKey: '$default',
      stage: '$default',
      time: '04/Dec/2026:12:00:00 +0000',
      timeEpoch: Date.now(),
    },
    body,
    isBase64Encoded: false,
  };
}

/** An SQS record as in the Lambda guide's sample event. */
function sqsRecord(messageId: string, body: string) {
  return {
    messageId,
    receiptHandle: `MessageReceiptHandle-${messageId}`,
    body,
    attributes: {
      ApproximateReceiveCount: '1',
      SentTimestamp: String(Date.now()),
      SenderId: '123456789012',
      ApproximateFirstReceiveTimestamp: String(Date.now()),
    },
    messageAttributes: {},
    md5OfBody: createHash('md5').update(body).digest('hex'),
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:123456789012:OrdersQueue',
    awsRegion: 'us-east-1',
  };
}

async function redis<T>(use: (client: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const client = createClient({ url: REDIS_URL });
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    client.destroy();
  }
}

/** The inbox's keys under the example's (default) prefix before the run: the counter, the registry. */
async function inboxKeys(): Promise<Set<string>> {
  return redis(async (client) => {
    const found = new Set<string>();
    for await (const keys of client.scanIterator({ MATCH: 'onceonly:i:*', COUNT: 1000 })) {
      for (const key of keys) found.add(key);
    }
    return found;
  });
}
let inboxBefore = new Set<string>();

/**
 * What the bundles' runs left in Redis under the example's (default) prefix: the keys naming
 * `marks`, the inbox indexes' members naming them, and the inbox keys that were not there before.
 */
async function cleanRedis(marks: string[]): Promise<number> {
  return redis(async (client) => {
    let removed = 0;
    for (const mark of marks) {
      for await (const keys of client.scanIterator({ MATCH: `onceonly:*${mark}*`, COUNT: 1000 })) {
        if (keys.length > 0) removed += await client.del(keys);
      }
    }
    // The inbox's indexes (sorted sets and sets under onceonly:i:) may still name an entry.
    for await (const keys of client.scanIterator({ MATCH: 'onceonly:i:*', COUNT: 1000 })) {
      for (const key of keys) {
        const type = await client.type(key);
        if (type !== 'zset' && type !== 'set') continue;
        const members = type === 'zset' ? await client.zRange(key, 0, -1) : await client.sMembers(key);
        const ours = members.filter((m) => marks.some((mark) => m.includes(mark)));
        if (ours.length > 0)
          removed += type === 'zset' ? await client.zRem(key, ours) : await client.sRem(key, ours);
      }
    }
    const added = [...(await inboxKeys())].filter((key) => !inboxBefore.has(key));
    if (added.length > 0) removed += await client.del(added);
    return removed;
  });
}

const stripeBody = JSON.stringify({
  id: `evt_deploy_${run}`,
  object: 'event',
  api_version: '2025-01-27',
  created: Math.floor(Date.now() / 1000),
  data: { object: { id: `in_deploy_${run}`, object: 'invoice' } },
  livemode: false,
  type: 'invoice.paid',
});
const githubBody = JSON.stringify({ zen: 'Deploy once, run once.', hook_id: 1, run });
const githubDigest = createHash('sha256').update(githubBody).digest('hex');

before(async () => {
  inboxBefore = await inboxKeys();
  assert.ok(
    existsSync(join(root, 'dist', 'index.js')),
    'onceonly: dist/ is not built: run `npm run build` first (`npm test` does)',
  );
  // The Stripe SDK signs the delivery: its workspace (test/sdks) is installed unless it is.
  sh(process.execPath, [join(root, 'scripts', 'workspaces.mjs'), 'install', 'test/sdks'], root);
  const packed = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], {
      cwd: root,
      encoding: 'utf8',
    }),
  ) as { filename: string }[];
  tarball = join(dir, packed[0]!.filename);
  writeFileSync(join(dir, 'runtime.mjs'), runtime);
  runSnippet();
});
after(async () => {
  try {
    await cleanRedis([run, githubDigest]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

describe("docs/lambda.md's Deploy the example, up to the upload", () => {
  it('builds every function of the template into a bundle of its own, with nothing installed beside it', () => {
    assert.ok(deployReached, 'the snippet goes on to sam deploy');
    assert.ok(esbuildUsed.startsWith(dir), 'esbuild came from the project, not from this repository');
    assert.deepEqual(built.map((b) => b.fn.name).sort(), [
      'GithubInboxDrain',
      'GithubWebhook',
      'Orders',
      'StripeWebhook',
    ]);
    for (const { taskRoot } of built) {
      assert.deepEqual(readdirSync(taskRoot), ['handler.mjs']);
      for (let up = taskRoot; up !== dirname(up); up = dirname(up)) {
        assert.ok(!existsSync(join(up, 'node_modules')), `no node_modules above the bundle (${up})`);
      }
    }
  });

  it('StripeWebhook: a signed delivery is processed, the same one in another container a duplicate', () => {
    const Stripe = createRequire(join(root, 'test', 'sdks', 'package.json'))('stripe') as new (
      key: string,
    ) => { webhooks: { generateTestHeaderString(o: { payload: string; secret: string }): string } };
    const signature = new Stripe('sk_test_only_used_to_sign').webhooks.generateTestHeaderString({
      payload: stripeBody,
      secret: parameters.StripeWebhookSecret,
    });
    const event = functionUrlEvent(
      { 'content-type': 'application/json', 'stripe-signature': signature },
      stripeBody,
    );
    const answers = [invoke('StripeWebhook', [event]), invoke('StripeWebhook', [event])];
    const outcomes = answers.map(({ invocations: [i], output }) => {
      const r = i?.result as { statusCode: number; headers: Record<string, string> } | undefined;
      assert.ok(r, `no answer: ${i?.error ?? ''}\n${output.slice(-2000)}`);
      return `${r.statusCode} ${r.headers['onceonly-outcome']}`;
    });
    assert.deepEqual(outcomes, ['200 processed', '200 duplicate']);
    assert.match(answers[0]!.output, new RegExp(`invoice in_deploy_${run} paid \\(attempt 1\\)`));
    assert.doesNotMatch(answers[1]!.output, /paid \(attempt/, 'the duplicate did not run the handler');
    for (const { output } of answers)
      assert.doesNotMatch(output, /^(onceonly|redis):/m, 'no warning from the store or client');
  });

  it('GithubWebhook accepts a signed delivery into the inbox (202); GithubInboxDrain runs it', () => {
    const headers = {
      'content-type': 'application/json',
      'x-github-event': 'ping',
      'x-github-delivery': randomUUID(),
      'x-hub-signature-256': `sha256=${createHmac('sha256', parameters.GithubWebhookSecret).update(githubBody).digest('hex')}`,
    };
    const accepted = invoke('GithubWebhook', [functionUrlEvent(headers, githubBody)]);
    const a = accepted.invocations[0]?.result as
      | { statusCode: number; headers: Record<string, string> }
      | undefined;
    assert.ok(a, `no answer: ${accepted.invocations[0]?.error ?? ''}\n${accepted.output.slice(-2000)}`);
    assert.equal(`${a.statusCode} ${a.headers['onceonly-outcome']}`, '202 accepted');
    // What EventBridge Scheduler sends; drain reads nothing of it.
    const drained = invoke('GithubInboxDrain', [
      {
        'detail-type': 'Scheduled Event',
        source: 'aws.scheduler',
        detail: {},
        time: new Date().toISOString(),
      },
    ]);
    const d = drained.invocations[0];
    assert.ok(d?.result, `drain failed: ${d?.error ?? ''}\n${drained.output.slice(-2000)}`);
    assert.ok((d.result as { ran: number }).ran >= 1, `ran ${JSON.stringify(d.result)}`);
    assert.match(drained.output, /github ping \(attempt 1\)/);
  });

  it('Orders: an SQS batch of two records runs both, no batchItemFailures', () => {
    const records = [sqsRecord(`m1-${run}`, '{"order":1}'), sqsRecord(`m2-${run}`, '{"order":2}')];
    const orders = invoke('Orders', [{ Records: records }]);
    const o = orders.invocations[0];
    assert.deepEqual(
      o?.result,
      { batchItemFailures: [] },
      `${o?.error ?? ''}\n${orders.output.slice(-2000)}`,
    );
    for (const id of [`m1-${run}`, `m2-${run}`])
      assert.match(orders.output, new RegExp(`order message ${id} \\(attempt 1\\)`));
  });
});
