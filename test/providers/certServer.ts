/**
 * A sender's certificate host on loopback, for the providers whose signing certificates are
 * fetched (AWS SNS, PayPal): real X.509 certificates made with openssl, served by a local HTTP
 * server, and a `fetch` that sends the URLs the provider is allowed to fetch there, so every host
 * check runs on the URL the delivery names while the bytes come from 127.0.0.1.
 *
 * The certificates chain as the real ones do: a test root (passed to the provider as
 * `certificateRoots`, standing for Node's store), an intermediate, and per credential a leaf
 * issued to the sender's name. `served: 'leaf'` serves the leaf alone with a "CA Issuers" URL
 * for its intermediate (as SNS does); `'chain'` serves the leaf and the intermediate (as PayPal).
 */
import { execFileSync } from 'node:child_process';
import { createPrivateKey, type KeyObject, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
  /** The test root certificate (PEM), for the provider's `certificateRoots`. */
  readonly roots: () => string[];
  /**
   * Makes a fresh RSA key and a certificate for it (valid two days from now), issued by the test
   * intermediate to `subject` (the sender's name by default); returns its name (hex).
   */
  credential(options?: { subject?: string; selfSigned?: boolean }): string;
  /**
   * The fetch a provider gets. `trusted` stands for the certificates the sender really serves: a
   * URL naming another certificate is answered with the first trusted one, as the real host would
   * answer with its own.
   */
  loopback(trusted: readonly string[]): KeyFetch;
  /** Extra routes (a subscription confirmation endpoint): return true when handled. */
  route?: (url: URL, res: ServerResponse) => boolean;
}

/** The intermediate's "CA Issuers" URL in every leaf (its host is one SNS's CA serves from). */
export const ISSUER_URL = 'http://crt.test.amazontrust.com/onceonly-test-intermediate.cer';

/**
 * Starts the server for the calling test file (node:test hooks) and serves `/<prefix><name>.pem`
 * for every certificate made with `credential()`.
 */
export function certServer(
  prefix: string,
  options: { subject: string; served: 'leaf' | 'chain' },
): CertServer {
  let dir = '';
  let server: Server | undefined;
  let base = '';
  let root = '';
  let intermediate = '';
  let intermediateDer = Buffer.alloc(0);
  const certs = new Map<string, string>();
  const keys = new Map<string, KeyObject>();
  const requested: string[] = [];
  const pattern = new RegExp(`${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\w+)\\.pem$`);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore', cwd: dir });
  const self: CertServer = {
    base: () => base,
    requested,
    keys,
    roots: () => [root],
    credential({ subject = options.subject, selfSigned = false } = {}) {
      const name = randomBytes(16).toString('hex');
      if (selfSigned) {
        // What a forger makes: the right name, no chain.
        openssl(
          ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`],
          ...['-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${subject}`],
          ...['-addext', `subjectAltName=DNS:${subject}`, '-addext', 'basicConstraints=critical,CA:FALSE'],
        );
      } else {
        openssl(
          ...['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`],
          ...['-subj', `/CN=${subject}`],
        );
        writeFileSync(
          join(dir, `${name}.ext`),
          [
            'basicConstraints=CA:FALSE',
            'keyUsage=critical,digitalSignature',
            `subjectAltName=DNS:${subject}`,
            `authorityInfoAccess=caIssuers;URI:${ISSUER_URL}`,
          ].join('\n'),
        );
        openssl(
          ...['x509', '-req', '-in', `${name}.csr`, '-CA', 'int.pem', '-CAkey', 'int.key'],
          ...['-set_serial', `0x${name.slice(0, 16)}`, '-days', '2', '-sha256'],
          ...['-extfile', `${name}.ext`, '-out', `${name}.pem`],
        );
      }
      keys.set(name, createPrivateKey(readFileSync(join(dir, `${name}.key`))));
      const leaf = readFileSync(join(dir, `${name}.pem`), 'utf8');
      certs.set(name, options.served === 'chain' && !selfSigned ? `${leaf}${intermediate}` : leaf);
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
    // The test root and intermediate, as a public CA's would be.
    openssl(
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'root.key', '-out', 'root.pem'],
      ...['-days', '3', '-subj', '/CN=onceonly test root', '-addext', 'basicConstraints=critical,CA:TRUE'],
      ...['-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    );
    openssl(
      ...['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'int.key', '-out', 'int.csr'],
      ...['-subj', '/CN=onceonly test intermediate'],
    );
    writeFileSync(
      join(dir, 'int.ext'),
      'basicConstraints=critical,CA:TRUE,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n',
    );
    openssl(
      ...['x509', '-req', '-in', 'int.csr', '-CA', 'root.pem', '-CAkey', 'root.key', '-set_serial', '2'],
      ...['-days', '3', '-sha256', '-extfile', 'int.ext', '-out', 'int.pem'],
    );
    openssl('x509', '-in', 'int.pem', '-outform', 'DER', '-out', 'int.der');
    root = readFileSync(join(dir, 'root.pem'), 'utf8');
    intermediate = readFileSync(join(dir, 'int.pem'), 'utf8');
    intermediateDer = readFileSync(join(dir, 'int.der'));
    server = createServer((req: IncomingMessage, res: ServerResponse) => {
      // A fresh connection per request: a kept-alive socket the server closes while the client
      // reuses it (a loaded machine stretches that window) would fail the fetch.
      res.setHeader('connection', 'close');
      const url = new URL(req.url ?? '/', 'http://x');
      const name = pattern.exec(url.pathname)?.[1];
      if (name !== undefined && certs.has(name)) {
        res.setHeader('content-type', 'application/x-pem-file');
        res.end(certs.get(name));
      } else if (url.pathname === new URL(ISSUER_URL).pathname) {
        res.setHeader('content-type', 'application/pkix-cert');
        res.end(intermediateDer);
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
