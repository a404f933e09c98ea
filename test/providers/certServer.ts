/**
 * A sender's certificate host on loopback, for the providers whose signing certificates are
 * fetched (AWS SNS, PayPal): real X.509 certificates made with openssl, served by a local HTTP
 * server, and a `fetch` that sends the https URLs the provider is allowed to fetch there, so every
 * host check runs on the URL the delivery names while the bytes come from 127.0.0.1.
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach } from 'node:test';
import type { KeyFetch } from '../../src/providers/families/fetchedKeys.js';

export interface CertServer {
  /** `http://127.0.0.1:<port>`, once started. */
  readonly base: () => string;
  /** Every URL the providers asked for since the last test began. */
  readonly requested: string[];
  /** Private keys by certificate name. */
  readonly keys: Map<string, KeyObject>;
  /** Makes a fresh RSA key and a self-signed certificate for it (valid two days from now); returns its name. */
  credential(): string;
  /**
   * The fetch a provider gets. `trusted` stands for the certificates the sender really serves: a
   * URL naming another certificate is answered with the first trusted one, as the real host would
   * answer with its own.
   */
  loopback(trusted: readonly string[]): KeyFetch;
  /** Extra routes (a subscription confirmation endpoint): return true when handled. */
  route?: (url: URL, res: ServerResponse) => boolean;
}

/**
 * Starts the server for the calling test file (node:test hooks) and serves `/<prefix><name>.pem`
 * for every certificate made with `credential()`.
 */
export function certServer(prefix: string): CertServer {
  let dir = '';
  let server: Server | undefined;
  let base = '';
  const certs = new Map<string, string>();
  const keys = new Map<string, KeyObject>();
  const requested: string[] = [];
  const pattern = new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\w+)\\.pem$`);
  const self: CertServer = {
    base: () => base,
    requested,
    keys,
    credential() {
      const name = `k${keys.size + 1}`;
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-keyout',
          join(dir, `${name}.key`),
          '-out',
          join(dir, `${name}.pem`),
          '-days',
          '2',
          '-subj',
          '/CN=onceonly-test-signing-certificate',
        ],
        { stdio: 'ignore' },
      );
      keys.set(name, createPrivateKey(readFileSync(join(dir, `${name}.key`))));
      certs.set(name, readFileSync(join(dir, `${name}.pem`), 'utf8'));
      return name;
    },
    loopback(trusted) {
      return (url, init) => {
        requested.push(url);
        const u = new URL(url);
        const name = pattern.exec(u.pathname)?.[1];
        const path =
          name !== undefined && !trusted.includes(name)
            ? u.pathname.replace(pattern, `${prefix}${trusted[0]}.pem`)
            : u.pathname;
        return fetch(`${base}${path}${u.search}`, init) as ReturnType<KeyFetch>;
      };
    },
  };
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'onceonly-certs-'));
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      // A fresh connection per request: a kept-alive socket the server closes while the client
      // reuses it (a loaded machine stretches that window) would fail the fetch.
      res.setHeader('connection', 'close');
      const url = new URL(req.url ?? '/', 'http://x');
      const name = pattern.exec(url.pathname)?.[1];
      if (name !== undefined && certs.has(name)) {
        res.setHeader('content-type', 'application/x-pem-file');
        res.end(certs.get(name));
      } else if (!self.route?.(url, res)) {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    requested.length = 0;
  });
  return self;
}
