/**
 * `onceonly console --store <url>` as a user runs it (the built CLI): it serves on 127.0.0.1 only,
 * answers its own host name and refuses another (DNS rebinding), shows the store's dead entries,
 * and stops on SIGTERM.
 */
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { openStore } from '../../src/cli/stores.js';
import { cliArgv, root } from '../support/cli.js';
import { reachable, servers } from '../support/servers.js';

function get(port: number, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const probe = new pg.Pool({ connectionString: servers.postgres, max: 1 });
const up = await reachable('PostgreSQL', servers.postgres, () => probe.query('SELECT 1'));
await probe.end();

if (up) {
  describe('onceonly console', () => {
    const name = `oo_cli_console_${randomBytes(4).toString('hex')}`;
    after(async () => {
      const opened = await openStore(servers.postgres, name);
      await opened.drop().catch(() => {});
      await opened.close();
    });

    it('serves the inbox on 127.0.0.1 under its own host name only, then stops on SIGTERM', async () => {
      const opened = await openStore(servers.postgres, name);
      const inbox = opened.store.inbox!;
      await inbox.accept({
        key: 'acme:evt_cli',
        receiver: 'acme',
        fingerprint: 'f'.repeat(64),
        type: 'order.paid',
        id: 'evt_cli',
        body: new TextEncoder().encode('{"id":"evt_cli"}'),
        headers: [['content-type', 'application/json']],
        receivedAt: new Date(),
      });
      const [job] = await inbox.take({ limit: 1, leaseMs: 60_000, receiver: 'acme' });
      assert.ok(await inbox.bury(job!.lease, { error: 'it broke' }));
      await opened.close();

      const child = spawn(
        process.execPath,
        cliArgv([
          'console',
          '--store',
          servers.postgres,
          '--name',
          name,
          '--port',
          '0',
          '--receiver',
          'acme',
        ]),
        { cwd: root },
      );
      let out = '';
      child.stderr.on('data', (c) => (out += c));
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout.on('data', (c) => {
          out += c;
          const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.on('exit', () => reject(new Error(`exited: ${out}`)));
      });
      const list = await get(port, '/entries?state=dead', `127.0.0.1:${port}`);
      assert.equal(list.status, 200);
      assert.match(list.body, /acme:evt_cli/);
      assert.match(list.body, /it broke/);
      assert.equal((await get(port, '/', `localhost:${port}`)).status, 200);
      const rebound = await get(port, '/entries?state=dead', `evil.example:${port}`);
      assert.equal(rebound.status, 403);
      assert.doesNotMatch(rebound.body, /evt_cli/);
      const code = await new Promise<number | null>((resolve) => {
        child.on('exit', (c) => resolve(c));
        child.kill('SIGTERM');
      });
      assert.equal(code, 0, out);
    });
  });
}
