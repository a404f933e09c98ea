/**
 * `onceonly send`, `sign` and `simulate` for every sender of the test kit, against a real receiver
 * over HTTP (one node:http server, one endpoint per provider): each provider's delivery is
 * processed, then a duplicate; a wrong secret is refused; a port where nothing listens is said at
 * once; `sign --curl` prints a command curl runs as it is.
 */
import { strict as assert } from 'node:assert';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { webhook } from '../../src/adapters/node.js';
import { createReceiver, memoryStore, type Provider, type Receiver } from '../../src/index.js';
import * as providers from '../../src/providers/index.js';
import { providerOptions, type SenderName, senders, testSecret } from '../../src/testing/index.js';
import { cliPath, root } from '../support/cli.js';

const exec = promisify(execFile);

/** Runs the CLI; resolves with its exit code and output whatever the code. */
async function cli(args: string[], timeout = 60_000) {
  try {
    const { stdout, stderr } = await exec(process.execPath, [cliPath, ...args], { cwd: root, timeout });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** Runs the CLI with `input` on its stdin; resolves with its exit code and output. */
function cliWithInput(args: string[], input: Uint8Array) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [cliPath, ...args], { cwd: root });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

const secretSenders = senders.filter((s) => s.credential === 'secret');
/**
 * One sender of each way of signing, through the CLI (a process each): every sender's delivery is
 * checked in-process by test/testing/deliveries.test.ts, and the CLI only picks the row by name.
 */
const throughCli = [
  'github', // body HMAC, hex, type in a header
  'shopify', // body HMAC, base64
  'stripe', // timestamped HMAC
  'resend', // Standard Webhooks (svix-*)
  'square', // URL + body (the --url is signed)
  'twilio', // form body, URL and sorted parameters
  'mailgun', // the signature inside the body
  'hubspot', // v3: method, URL, body, timestamp
  'slack', // timestamped, v0=
  'gitlab', // a token, no signature
];

describe('onceonly send / sign / simulate against a receiver for every sender', () => {
  let server: Server;
  let base = '';
  const secrets = new Map<string, string>();
  const runs = new Map<string, unknown[]>();
  const receivers = new Map<string, Receiver>();

  before(async () => {
    server = createServer((req, res) => {
      const name = /^\/webhooks\/([A-Za-z]+)/.exec(req.url ?? '')?.[1];
      const receiver = name ? receivers.get(name) : undefined;
      if (!receiver) {
        res.writeHead(404).end();
        return;
      }
      webhook(receiver)(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    for (const { name } of secretSenders) {
      const secret = testSecret(name as SenderName);
      secrets.set(name, secret);
      const seen: unknown[] = [];
      runs.set(name, seen);
      const factory = (providers as unknown as Record<string, (o: unknown) => Provider<any, any>>)[name]!;
      const provider = factory(
        providerOptions(name as SenderName, { secret, url: `${base}/webhooks/${name}` }),
      );
      receivers.set(
        name,
        createReceiver({ provider, store: memoryStore(), handler: (e) => void seen.push(e) }),
      );
    }
  });

  after(() => server.close());

  it('send --repeat 2: a sender of each scheme processed, then a duplicate, its handler once', async () => {
    const queue = secretSenders.filter((s) => throughCli.includes(s.name));
    assert.equal(queue.length, throughCli.length);
    const lanes = Array.from({ length: 3 }, async () => {
      for (let s = queue.shift(); s; s = queue.shift()) {
        const url = `${base}/webhooks/${s.name}`;
        const r = await cli([
          'send',
          '--provider',
          s.name,
          '--url',
          url,
          '--secret',
          secrets.get(s.name)!,
          '--repeat',
          '2',
          '--json',
        ]);
        assert.equal(r.code, 0, `${s.name}: ${r.stdout}${r.stderr}`);
        const answers = (JSON.parse(r.stdout) as { answers: { status: number; outcome: string }[] }).answers;
        assert.deepEqual(
          answers.map((a) => a.outcome),
          ['processed', 'duplicate'],
          s.name,
        );
        assert.equal(runs.get(s.name)!.length, 1, s.name);
      }
    });
    await Promise.all(lanes);
  });

  it('send with a wrong secret: refused (401 invalid_signature), exit 1, the handler never runs', async () => {
    const before = runs.get('github')!.length;
    const r = await cli([
      'send',
      '--provider',
      'github',
      '--url',
      `${base}/webhooks/github`,
      '--secret',
      'not-the-secret',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /→ 401 {2}Onceonly-Outcome: rejected/);
    assert.match(r.stdout, /invalid_signature/);
    assert.equal(runs.get('github')!.length, before);
  });

  it('send and simulate to a port where nothing listens say so at once', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    for (const command of ['send', 'simulate']) {
      const started = performance.now();
      const r = await cli([
        command,
        '--provider',
        'resend',
        '--url',
        `http://127.0.0.1:${port}/`,
        '--secret',
        's',
      ]);
      const ms = performance.now() - started;
      assert.equal(r.code, 1, command);
      assert.match(r.stderr, new RegExp(`nothing is listening on 127\\.0\\.0\\.1:${port}`), command);
      assert.ok(ms < 10_000, `${command} took ${ms} ms`);
    }
  });

  it('sign --curl prints a command that curl runs as it is (a payload file, signed byte for byte)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'onceonly-sign-'));
    try {
      const file = join(dir, 'order.json');
      writeFileSync(file, '{"id": 820982911946154500, "note": "café – 😀"}\n');
      const url = `${base}/webhooks/shopify`;
      const printed = await cli([
        'sign',
        '--provider',
        'shopify',
        '--secret',
        secrets.get('shopify')!,
        '--payload',
        file,
        '--url',
        url,
        '--curl',
      ]);
      assert.equal(printed.code, 0, printed.stderr);
      assert.match(printed.stdout, /^curl /);
      const { stdout } = await exec('bash', ['-c', printed.stdout]);
      assert.match(stdout, /^HTTP\/1\.1 200/);
      assert.match(stdout, /onceonly-outcome: processed/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("send, sign --curl and simulate post to the URL the sender signed (Twilio's bodySHA256 of a JSON event)", async () => {
    const type = 'com.twilio.messaging.message.delivered';
    const url = `${base}/webhooks/twilio`;
    const secret = secrets.get('twilio')!;
    // The same delivery for every command: Twilio, this secret and type, sent to (and signed for) url.
    const twilio = ['--provider', 'twilio', '--url', url, '--secret', secret, '--type', type];
    const sent = await cli(['send', ...twilio]);
    assert.equal(sent.code, 0, sent.stdout + sent.stderr);
    assert.match(sent.stdout, /Onceonly-Outcome: processed/);
    const printed = await cli(['sign', ...twilio, '--curl']);
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, /bodySHA256=[0-9a-f]{64}/);
    const { stdout } = await exec('bash', ['-c', printed.stdout]);
    assert.match(stdout, /onceonly-outcome: processed/i);
    const lines = await cli(['sign', ...twilio]);
    assert.match(lines.stderr, /twilio signed the URL: send it to http:\S+\?bodySHA256=[0-9a-f]{64}$/m);
    const simulated = await cli(['simulate', ...twilio, '--events', '3', '--json'], 120_000);
    assert.equal(simulated.code, 0, simulated.stderr);
    assert.equal((JSON.parse(simulated.stdout) as { acknowledged: number }).acknowledged, 3);
  });

  it('sign --curl with a body on stdin: sent as it is (one starting with @ is no file name); bytes that are not UTF-8 are refused', async () => {
    const url = `${base}/webhooks/github`;
    const args = [
      'sign',
      '--provider',
      'github',
      '--secret',
      secrets.get('github')!,
      '--payload',
      '-',
      '--url',
      url,
      '--curl',
    ];
    const printed = await cliWithInput(args, new TextEncoder().encode('@/etc/hostname'));
    assert.equal(printed.code, 0, printed.stderr);
    const { stdout } = await exec('bash', ['-c', printed.stdout]);
    // The signature is over the 14 bytes given: curl sent those, not the file they name (so the
    // signature matched, and the receiver refused only what is not a JSON event).
    assert.match(stdout, /"code":"invalid_body"/);
    const binary = await cliWithInput(args, new Uint8Array([0x7b, 0xff, 0x00, 0x7d]));
    assert.equal(binary.code, 2);
    assert.match(binary.stderr, /not plain UTF-8 text .*--payload <file>/);
  });

  it('send and simulate read at most 64 KiB of an answer: a receiver streaming without end does not hold them to the timeout', async () => {
    const endless = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'onceonly-outcome': 'processed' });
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        const more = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', more);
        };
        more();
      });
    });
    await new Promise<void>((resolve) => endless.listen(0, '127.0.0.1', resolve));
    try {
      const port = (endless.address() as AddressInfo).port;
      const started = performance.now();
      const r = await cli([
        'send',
        '--provider',
        'github',
        '--secret',
        's',
        '--url',
        `http://127.0.0.1:${port}/`,
        '--timeout',
        '30000',
      ]);
      const ms = performance.now() - started;
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /→ 200 {2}Onceonly-Outcome: processed/);
      assert.match(r.stdout, /a{500}…/);
      assert.ok(ms < 15_000, `send took ${ms} ms`);
      // simulate reads the same bounded answer: every event acknowledged, none waits for the timeout.
      const simStarted = performance.now();
      const sim = await cli([
        'simulate',
        '--provider',
        'github',
        '--secret',
        's',
        '--url',
        `http://127.0.0.1:${port}/`,
        '--events',
        '3',
        '--duplicate-rate',
        '0',
        '--concurrent-rate',
        '0',
        '--timeout',
        '30000',
        '--json',
      ]);
      const simMs = performance.now() - simStarted;
      assert.equal(sim.code, 0, sim.stderr);
      assert.equal((JSON.parse(sim.stdout) as { acknowledged: number }).acknowledged, 3);
      assert.ok(simMs < 15_000, `simulate took ${simMs} ms`);
    } finally {
      endless.closeAllConnections();
      endless.close();
    }
  });

  it('a secret HTTP cannot carry in a header is a usage error that never prints the secret', async () => {
    for (const command of ['send', 'sign']) {
      const r = await cli([
        command,
        '--provider',
        'gitlab',
        '--url',
        `${base}/webhooks/gitlab`,
        '--secret',
        'first-half\nsecond-half',
      ]);
      assert.equal(r.code, 2, command);
      assert.match(r.stderr, /x-gitlab-token header would hold a line break/, command);
      assert.ok(!`${r.stdout}${r.stderr}`.includes('first-half'), `${command}: ${r.stderr}`);
    }
  });

  it('sign without --curl prints the header lines, then the sample body', async () => {
    const r = await cli([
      'sign',
      '--provider',
      'stripe',
      '--secret',
      'whsec_abc',
      '--type',
      'payment_intent.succeeded',
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^content-type: application\/json$/m);
    assert.match(r.stdout, /^stripe-signature: t=\d+,v1=[0-9a-f]{64}$/m);
    assert.match(r.stdout, /"type":"payment_intent\.succeeded"/);
  });

  it('simulate takes any sender: one outside the demo’s three (resend), every event acknowledged once', async () => {
    const seen = runs.get('resend')!;
    const before = seen.length;
    const r = await cli(
      [
        'simulate',
        '--provider',
        'resend',
        '--url',
        `${base}/webhooks/resend`,
        '--secret',
        secrets.get('resend')!,
        '--events',
        '30',
        '--json',
      ],
      120_000,
    );
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as {
      acknowledged: number;
      gaveUp: string[];
      byOutcome: Record<string, number>;
    };
    assert.equal(report.acknowledged, 30);
    assert.deepEqual(report.gaveUp, []);
    assert.equal(seen.length - before, 30);
  });

  it('--help lists every sender with its event types; mistakes are one line and exit 2', async () => {
    for (const command of ['send', 'sign', 'simulate']) {
      const help = await cli([command, '--help']);
      assert.equal(help.code, 0);
      for (const s of secretSenders)
        assert.match(
          help.stdout,
          new RegExp(`^  ${s.name} +${s.types[0]!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'm'),
        );
    }
    const cases: [string[], RegExp][] = [
      [['send', '--provider', 'nope', '--url', base, '--secret', 's'], /unknown --provider "nope"/],
      [
        ['send', '--provider', 'stripe', '--url', base, '--secret', 's', '--type', 'no.such'],
        /no sample event of type "no\.such"/,
      ],
      [['sign', '--provider', 'stripe'], /--secret is required/],
      [['send', '--provider', 'stripe', '--url', 'ftp://x', '--secret', 's'], /--url must be http or https/],
      // A timer past 2^31 - 1 ms fires at once; a fraction or 2^32 made Node throw mid-run.
      [
        ['send', '--provider', 'stripe', '--url', base, '--secret', 's', '--timeout', '3000000000'],
        /--timeout must be a whole number of ms/,
      ],
      [
        ['simulate', '--provider', 'stripe', '--url', base, '--secret', 's', '--timeout', '1.5'],
        /--timeout must be a whole number of ms/,
      ],
      [['simulate', '--provider', 'stripe', '--url', base, '--secret', 's', '--type', 'a,b'], /.+/],
    ];
    for (const [args, message] of cases.slice(0, -1)) {
      const r = await cli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
    const keyed = senders.find((s) => s.credential === 'keys');
    if (keyed) {
      const r = await cli(['send', '--provider', keyed.name, '--url', base, '--secret', 's']);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /testKeys/);
    }
  });
});
