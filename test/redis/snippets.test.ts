/**
 * Every Redis setup snippet in README.md and docs/*.md, run as pasted through an outage. A snippet is
 * a ```ts block that creates a node-redis or ioredis client; each is marked `<!-- redis-snippet -->`.
 * Only the package import (`'onceonly/redis'` → the source) and the URL (`process.env.REDIS_URL` →
 * a throwaway server's) are rewritten. Each runs in a child process of its own (tsx), which builds the
 * store and then claims keys on request. Meanwhile this file stops the server, then freezes it
 * (SIGSTOP): every store call must fail fast with an error (no hang), the process must live on (no
 * unhandled 'error'), and once the server is back the same store must work again without a new
 * client. The start-up check must find nothing to warn about. Cluster snippets run the same against
 * a 3-master cluster, with the master that holds the keys stopped and frozen.
 */
import { strict as assert } from 'node:assert';
import { type ChildProcess, execFile, fork } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { redisBinaries, startRedisCluster, type TestCluster } from '../support/redis-cluster.js';
import { type RedisInstance, startRedisInstance } from '../support/redis-instance.js';
import { reachable } from '../support/servers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const MARK = '<!-- redis-snippet -->';
/** A store call while Redis is stopped or frozen must fail within this (well under storeTimeout's 3 s). */
const FAIL_FAST_MS = 2_000;
/** The same store must work again within this once the server is back. */
const RECOVER_MS = 10_000;
const FREEZE_MS = 4_000;

interface Snippet {
  file: string;
  line: number;
  code: string;
  marked: boolean;
  cluster: boolean;
}

/** Every ```ts block of README.md and docs/*.md that creates a Redis client. */
function redisSnippets(): Snippet[] {
  const files = ['README.md', ...readdirSync(join(root, 'docs')).map((f) => join('docs', f))].filter((f) =>
    f.endsWith('.md'),
  );
  const out: Snippet[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    for (const m of text.matchAll(/^([ \t]*)```(?:ts|typescript)\n([\s\S]*?)^\1```/gm)) {
      const code = m[2]!.replace(new RegExp(`^${m[1]}`, 'gm'), '');
      if (!/\bcreateClient\(|\bcreateCluster\(|\bnew (?:Redis|Cluster)\(/.test(code)) continue;
      const before = text.slice(0, m.index).trimEnd();
      out.push({
        file,
        line: text.slice(0, m.index).split('\n').length,
        code,
        marked: before.endsWith(MARK),
        cluster: /\bcreateCluster\(|\bnew Cluster\(/.test(code),
      });
    }
  }
  return out;
}

const snippets = redisSnippets();
const dir = join(root, '.tmp', `redis-snippets-${process.pid}`);
const runId = Math.random().toString(36).slice(2, 8);

/** The snippet as pasted, with only the import and the URL pointed at this test's source and server. */
function rewrite(code: string, url: string | undefined): string {
  let out = code.replaceAll("from 'onceonly/redis'", `from '${join(root, 'src/stores/redis.js')}'`);
  if (url !== undefined) out = out.replaceAll('process.env.REDIS_URL', JSON.stringify(url));
  return out;
}

// Appended to each snippet: claims keys on request from this file, over the IPC channel.
const DRIVER = `
// ---- appended by test/redis/snippets.test.ts ----
process.on('message', (m: { id: number; key: string }) => {
  const started = performance.now();
  store.claim(m.key, { leaseMs: 60_000 }).then(
    (claim) => process.send?.({ id: m.id, status: claim.status, ms: performance.now() - started }),
    (err: unknown) =>
      process.send?.({ id: m.id, error: err instanceof Error ? err.message : String(err), ms: performance.now() - started }),
  );
});
// The inbox through the same client, as set up (accept, take, complete): the claim path alone once
// hid an inbox that failed on a documented client option (ioredis enableAutoPipelining).
{
  const receiver = \`snippet\${process.pid}\`;
  const inbox = store.inbox!;
  const body = new Uint8Array([0, 255, 1]);
  const receivedAt = new Date();
  try {
  const accepted = await inbox.accept({ key: \`\${receiver}:e1\`, receiver, fingerprint: 'f'.repeat(64), body, headers: [], receivedAt });
  const jobs = await inbox.take({ limit: 5, leaseMs: 10_000, receiver });
  const done = jobs.length === 1 ? await inbox.complete(jobs[0]!.lease, { retentionMs: 60_000 }) : false;
  const same = jobs.length === 1 && Buffer.from(jobs[0]!.body).equals(Buffer.from(body));
  process.send?.({ inbox: { accepted: accepted.status, taken: jobs.length, same, done } });
  } catch (err) {
    process.send?.({ inbox: { error: err instanceof Error ? err.message : String(err) } });
  }
}
process.send?.({ ready: true });
`;

interface Reply {
  id: number;
  status?: string;
  error?: string;
  ms: number;
}

/** One snippet running in a child process of its own. */
class Running {
  readonly child: ChildProcess;
  stderr = '';
  stdout = '';
  private next = 0;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  readonly ready: Promise<void>;
  /** What the snippet's inbox round trip (accept, take, complete) found before it was ready. */
  inbox: unknown;

  constructor(file: string) {
    this.child = fork(file, [], {
      cwd: root,
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.child.stdout?.on('data', (d) => {
      this.stdout += d;
    });
    this.child.stderr?.on('data', (d) => {
      this.stderr += d;
    });
    this.ready = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no store within 30 s\n${this.stderr}`)), 30_000);
      this.child.on('message', (m: Reply | { ready: true } | { inbox: unknown }) => {
        if ('inbox' in m) {
          this.inbox = m.inbox;
          return;
        }
        if ('ready' in m) {
          clearTimeout(timer);
          resolve();
          return;
        }
        this.waiting.get(m.id)?.(m);
        this.waiting.delete(m.id);
      });
      this.child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(
            `the snippet's process ended (${code ?? signal}) before its store was built\n${this.stderr}`,
          ),
        );
      });
    });
  }

  alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private dead(): string {
    return `the snippet's process ended (exit ${this.child.exitCode ?? this.child.signalCode}): an unhandled 'error'?\n${this.stderr.slice(-3000)}`;
  }

  /** A store.claim in the child; rejects when no answer comes within `ms` (a hang) or the child ends. */
  claim(key: string, ms: number): Promise<Reply> {
    assert.ok(this.alive(), this.dead());
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error(`store.claim(${key}) gave no answer within ${ms} ms: it hangs`));
      }, ms);
      const onExit = () => {
        clearTimeout(timer);
        reject(new Error(this.dead()));
      };
      this.child.once('exit', onExit);
      this.waiting.set(id, (r) => {
        clearTimeout(timer);
        this.child.off('exit', onExit);
        resolve(r);
      });
      this.child.send({ id, key });
    });
  }

  /** Claims until a call answers without an error; returns that answer and how long it took. */
  async recovers(key: string): Promise<Reply & { after: number }> {
    const start = performance.now();
    let last: Reply | undefined;
    while (performance.now() - start < RECOVER_MS) {
      last = await this.claim(key, RECOVER_MS);
      if (last.status) return { ...last, after: performance.now() - start };
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error(
      `the store did not work again within ${RECOVER_MS} ms of the server's return (last: ${last?.error})`,
    );
  }

  kill(): void {
    if (this.alive()) this.child.kill('SIGKILL');
  }
}

/** The server side of an outage: stop and start, or freeze, whatever holds the snippet's keys. */
interface Target {
  url: string;
  /** A key whose claim lands on the node that goes away. */
  key(name: string): Promise<string>;
  stop(): Promise<void>;
  start(): Promise<void>;
  freeze(ms: number): Promise<void>;
  /** Whether a claim survives a stop and start (the standalone server keeps an AOF). */
  durable: boolean;
}

async function outage(snippet: Snippet, target: Target, index: number): Promise<void> {
  const file = join(dir, `snippet-${index}.ts`);
  writeFileSync(file, rewrite(snippet.code, target.url) + DRIVER);
  const run = new Running(file);
  try {
    await run.ready;
    // The inbox works through the snippet's client as configured.
    assert.deepEqual(
      run.inbox,
      { accepted: 'accepted', taken: 1, same: true, done: true },
      `${snippet.file}:${snippet.line}: the inbox through this client`,
    );
    const key = async (name: string) => target.key(`${runId}-${index}-${name}`);
    const [held, during, frozen] = [await key('held'), await key('during'), await key('frozen')];
    // Prepare: a key claimed while all is well.
    assert.equal((await run.claim(held, 10_000)).status, 'acquired');

    const took: string[] = [];
    // Act: the server goes away.
    await target.stop();
    try {
      for (const attempt of [1, 2]) {
        const r = await run.claim(during, FAIL_FAST_MS + 1_000);
        // Assess: an error, fast; a call made while reconnecting does not wait either.
        assert.ok(r.error, `claim ${attempt} with the server stopped: ${JSON.stringify(r)}`);
        assert.ok(
          r.ms < FAIL_FAST_MS,
          `claim ${attempt} with the server stopped took ${Math.round(r.ms)} ms`,
        );
        took.push(`stopped: claim ${attempt} failed in ${Math.round(r.ms)} ms (${r.error})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.ok(run.alive(), "the process lives on while Redis is away (no unhandled 'error')");
    } finally {
      await target.start();
    }
    // The same store, the same client, works again.
    const back = await run.recovers(held);
    took.push(`restarted: working again after ${Math.round(back.after)} ms`);
    assert.ok(
      target.durable ? back.status === 'in-flight' : back.status !== undefined,
      `after the restart: ${back.status}`,
    );
    // The claims that failed while the server was away were never sent: none ran after the restart.
    assert.equal((await run.claim(during, 10_000)).status, 'acquired', 'a failed claim ran late');

    // Act: the server freezes (SIGSTOP): connections stay open, nothing answers.
    const frozenFor = target.freeze(FREEZE_MS);
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const r = await run.claim(frozen, FAIL_FAST_MS + 1_000);
      // Assess
      assert.ok(r.error, `claim with the server frozen: ${JSON.stringify(r)}`);
      assert.ok(r.ms < FAIL_FAST_MS, `claim with the server frozen took ${Math.round(r.ms)} ms`);
      took.push(`frozen: claim failed in ${Math.round(r.ms)} ms (${r.error})`);
      assert.ok(run.alive(), 'the process lives on while Redis is frozen');
    } finally {
      await frozenFor;
    }
    took.push(`resumed: working again after ${Math.round((await run.recovers(held)).after)} ms`);
    // Not asserted, reported: a command already written to the frozen server may run when it resumes.
    const late = (await run.claim(frozen, 10_000)).status;
    took.push(
      `the claim sent into the freeze ${late === 'in-flight' ? 'ran when the server resumed' : 'never ran'}`,
    );
    console.log(`${snippet.file}:${snippet.line}\n  ${took.join('\n  ')}`);

    // Nothing to warn about at start-up, and nothing crashed on the way.
    assert.doesNotMatch(run.stderr, /onceonly: this (node-redis|ioredis)/, 'no offline-queue warning');
    assert.ok(run.alive());
  } finally {
    run.kill();
  }
}

describe('Redis setup snippets in README.md and docs/*.md', () => {
  it('marks every Redis setup snippet for this test, one client and one store each', () => {
    assert.ok(snippets.length >= 4, `found ${snippets.length}`);
    for (const s of snippets) {
      const where = `${s.file}:${s.line}`;
      assert.ok(s.marked, `${where}: a Redis snippet without ${MARK} before it`);
      assert.equal(s.code.match(/\bconst store\b/g)?.length, 1, `${where}: one \`const store\``);
      assert.match(s.code, /process\.env\.REDIS_URL/, `${where}: takes its URL from process.env.REDIS_URL`);
      assert.match(s.code, /from 'onceonly\/redis'/, `${where}: imports redisStore from 'onceonly/redis'`);
      assert.match(s.code, /\.on\('error'/, `${where}: has an 'error' listener`);
    }
  });

  it('type-checks every snippet as pasted (strict)', { timeout: 120_000 }, async () => {
    const tsc = join(dir, 'tsc');
    mkdirSync(tsc, { recursive: true });
    const files = snippets.map((s, i) => {
      const f = join(tsc, `snippet-${i}.ts`);
      writeFileSync(f, rewrite(s.code, undefined));
      return f;
    });
    writeFileSync(
      join(tsc, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
        },
        files,
      }),
    );
    const run = promisify(execFile);
    await run(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', tsc], {
      cwd: root,
    }).catch((err: { stdout?: string }) => {
      throw new Error(`the snippets do not type-check:\n${err.stdout}`);
    });
  });
});

let binaries = false;
try {
  await redisBinaries();
  binaries = true;
} catch (err) {
  await reachable('redis-server binary', 'redis-server on PATH', () => Promise.reject(err));
}

if (binaries) {
  describe('Redis setup snippets through an outage (own redis-server)', () => {
    let redis: RedisInstance;
    before(async () => {
      mkdirSync(dir, { recursive: true });
      redis = await startRedisInstance();
    });
    after(async () => {
      await redis?.destroy();
    });

    snippets.forEach((s, i) => {
      if (s.cluster) return;
      it(`${s.file}:${s.line}: fails fast while Redis is stopped or frozen, lives on, works again after`, async () => {
        await outage(
          s,
          {
            url: redis.url,
            key: async (name) => name,
            stop: () => redis.stop(),
            start: () => redis.start(),
            freeze: (ms) => redis.pause(ms),
            durable: true,
          },
          i,
        );
      });
    });
  });

  describe('Redis Cluster setup snippets through an outage of one master (own 3-master cluster)', () => {
    let cluster: TestCluster;
    before(async () => {
      mkdirSync(dir, { recursive: true });
      cluster = await startRedisCluster(3);
    });
    after(async () => {
      await cluster?.stop();
    });

    snippets.forEach((s, i) => {
      if (!s.cluster) return;
      it(`${s.file}:${s.line}: fails fast while a master is stopped or frozen, lives on, works again after`, async () => {
        const victim = 1;
        const node = cluster.nodes[victim]!;
        // The slots this master serves, and a key (as the store writes it) in one of them.
        const mine = (await node.cli('cluster', 'nodes'))
          .split('\n')
          .find((l) => l.includes('myself'))!
          .split(' ')
          .slice(8)
          .map((r) => r.split('-').map(Number) as [number, number?]);
        const key = async (name: string) => {
          for (let n = 0; ; n++) {
            const k = `${name}-${n}`;
            const slot = Number((await node.cli('cluster', 'keyslot', `onceonly:k:${k}`)).trim());
            if (mine.some(([from, to]) => slot >= from && slot <= (to ?? from))) return k;
          }
        };
        await outage(
          s,
          {
            url: cluster.nodes[0]!.url,
            key,
            stop: () => cluster.stopNode(victim),
            start: () => cluster.startNode(victim),
            freeze: (ms) => cluster.pauseNode(victim, ms),
            durable: false,
          },
          i,
        );
      });
    });
  });
}

after(() => {
  rmSync(dir, { recursive: true, force: true });
});
