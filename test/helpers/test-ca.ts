import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A private CA made with openssl for one test run, and a server certificate it signed for the given names. */
export type TestCa = { ca: string; cert: string; key: string; chain: string; dir: string; cleanup(): void };

export function makeTestCa(names: readonly string[], opts: { days?: number } = {}): TestCa {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-ca-'));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '30', '-subj', '/CN=mailsvc test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', `/CN=${names[0]}`);
  writeFileSync(f('ext.cnf'), `subjectAltName=${names.map((n) => (/^[\d.]+$/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',')}\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n`);
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', String(opts.days ?? 90), '-extfile', f('ext.cnf'));
  const ca = readFileSync(f('ca.pem'), 'utf8');
  const cert = readFileSync(f('server.pem'), 'utf8');
  writeFileSync(f('chain.pem'), cert + ca);
  return { ca, cert, key: readFileSync(f('server.key'), 'utf8'), chain: f('chain.pem'), dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
