/**
 * The test kit's X.509 encoder, read back by node:crypto's X509Certificate (OpenSSL's parser) and,
 * where the openssl CLI is installed, checked as a chain by `openssl verify -x509_strict`.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createCertificate, type Issuer } from './x509.js';

const HOUR = 3_600_000;
const now = Date.now();
const ec = () => generateKeyPairSync('ec', { namedCurve: 'prime256v1' });

function chain(rootKeys: {
  privateKey: import('node:crypto').KeyObject;
  publicKey: import('node:crypto').KeyObject;
}) {
  const root = createCertificate({
    subject: { commonName: 'test root', organization: 'onceonly tests', country: 'US' },
    publicKey: rootKeys.publicKey,
    issuer: { self: rootKeys.privateKey },
    notBefore: new Date(now - 24 * HOUR),
    notAfter: new Date(now + 365 * 24 * HOUR),
    ca: {},
  });
  const intermediateKeys = ec();
  const intermediate = createCertificate({
    subject: { commonName: 'test intermediate' },
    publicKey: intermediateKeys.publicKey,
    issuer: { name: root.name, ...rootKeys },
    notBefore: new Date(now - 24 * HOUR),
    notAfter: new Date(now + 365 * 24 * HOUR),
    ca: { pathLength: 0 },
  });
  const issuer: Issuer = { name: intermediate.name, ...intermediateKeys };
  const leafKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const leaf = createCertificate({
    subject: { commonName: 'sns.amazonaws.com' },
    publicKey: leafKeys.publicKey,
    issuer,
    notBefore: new Date(now - HOUR),
    notAfter: new Date(now + 30 * 24 * HOUR),
    dnsNames: ['sns.amazonaws.com', 'sns-signing.eu-west-1.amazonaws.com'],
    caIssuers: 'http://crt.test.amazontrust.com/intermediate.cer',
  });
  return { root, intermediate, leaf, leafKeys };
}

describe('createCertificate (X.509 v3, DER)', () => {
  const rsaRoot = chain(generateKeyPairSync('rsa', { modulusLength: 2048 }));
  const ecRoot = chain(ec());

  for (const [label, made] of [
    ['an RSA root', rsaRoot],
    ['an ECDSA P-256 root', ecRoot],
  ] as const) {
    it(`makes a root, an intermediate and a leaf that chain under ${label}`, () => {
      // Prepare
      const root = new X509Certificate(made.root.pem);
      const intermediate = new X509Certificate(made.intermediate.der);
      const leaf = new X509Certificate(made.leaf.pem);
      // Assess: each is signed by the one above it, and only by it.
      assert.ok(root.checkIssued(root) && root.verify(root.publicKey), 'the root is self-signed');
      assert.ok(intermediate.checkIssued(root) && intermediate.verify(root.publicKey));
      assert.ok(leaf.checkIssued(intermediate) && leaf.verify(intermediate.publicKey));
      assert.equal(leaf.checkIssued(root), false);
      assert.equal(leaf.verify(root.publicKey), false);
      assert.equal(intermediate.verify(intermediate.publicKey), false);
      // Names, CA flags, the certified key.
      assert.equal(root.subject, 'C=US\nO=onceonly tests\nCN=test root');
      assert.equal(root.issuer, root.subject);
      assert.equal(intermediate.subject, 'CN=test intermediate');
      assert.equal(leaf.issuer, 'CN=test intermediate');
      assert.equal(leaf.subject, 'CN=sns.amazonaws.com');
      assert.deepEqual([root.ca, intermediate.ca, leaf.ca], [true, true, false]);
      assert.ok(leaf.publicKey.equals(made.leafKeys.publicKey));
    });

    it(`writes the leaf's DNS names, CA Issuers URL and validity under ${label}`, () => {
      const leaf = new X509Certificate(made.leaf.pem);
      assert.equal(leaf.subjectAltName, 'DNS:sns.amazonaws.com, DNS:sns-signing.eu-west-1.amazonaws.com');
      assert.equal(leaf.checkHost('sns.amazonaws.com'), 'sns.amazonaws.com');
      assert.equal(leaf.checkHost('sns.evil.example'), undefined);
      assert.match(
        leaf.infoAccess ?? '',
        /^CA Issuers - URI:http:\/\/crt\.test\.amazontrust\.com\/intermediate\.cer/,
      );
      // Validity to the second, in UTC.
      assert.equal(Date.parse(leaf.validFrom), Math.floor((now - HOUR) / 1000) * 1000);
      assert.equal(Date.parse(leaf.validTo), Math.floor((now + 30 * 24 * HOUR) / 1000) * 1000);
      assert.match(leaf.serialNumber, /^[0-9A-F]+$/);
    });
  }

  it('writes dates from 2050 on as GeneralizedTime, and a serial given as bytes', () => {
    const keys = ec();
    const cert = new X509Certificate(
      createCertificate({
        subject: { commonName: 'far' },
        publicKey: keys.publicKey,
        issuer: { self: keys.privateKey },
        notBefore: new Date('2049-12-31T23:59:59Z'),
        notAfter: new Date('2051-06-01T00:00:00Z'),
        serial: Uint8Array.from([0x80, 0x01]),
      }).der,
    );
    assert.equal(Date.parse(cert.validFrom), Date.parse('2049-12-31T23:59:59Z'));
    assert.equal(Date.parse(cert.validTo), Date.parse('2051-06-01T00:00:00Z'));
    assert.equal(cert.serialNumber, '8001');
  });

  it('passes openssl verify -x509_strict as a chain (where the openssl CLI is installed)', (t) => {
    let openssl = true;
    try {
      execFileSync('openssl', ['version'], { stdio: 'ignore' });
    } catch {
      openssl = false;
    }
    if (!openssl) return t.skip('no openssl CLI');
    const dir = mkdtempSync(join(tmpdir(), 'onceonly-x509-'));
    try {
      for (const made of [rsaRoot, ecRoot]) {
        writeFileSync(join(dir, 'root.pem'), made.root.pem);
        writeFileSync(join(dir, 'int.pem'), made.intermediate.pem);
        writeFileSync(join(dir, 'leaf.pem'), made.leaf.pem);
        const out = execFileSync(
          'openssl',
          ['verify', '-x509_strict', '-CAfile', 'root.pem', '-untrusted', 'int.pem', 'leaf.pem'],
          { cwd: dir, encoding: 'utf8' },
        );
        assert.equal(out.trim(), 'leaf.pem: OK');
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
