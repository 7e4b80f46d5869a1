#!/usr/bin/env node
// A stand-in TLS daemon for trying certificates locally (README, "Certificates"):
// serves <dir>/fullchain.pem + privkey.pem, read again on every connection (as a
// daemon does after a reload); before they exist, a throwaway self-signed one.
// Usage: node scripts/tls-serve-dir.mjs <dir> <port>
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createSecureContext, createServer } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [dir, port] = process.argv.slice(2);
if (!dir || !/^\d+$/.test(port ?? '')) {
  process.stderr.write('usage: node scripts/tls-serve-dir.mjs <dir> <port>\n');
  process.exit(2);
}
const tmp = mkdtempSync(join(tmpdir(), 'tls-serve-'));
execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', join(tmp, 'k.pem'), '-out', join(tmp, 'c.pem'), '-days', '2', '-subj', '/CN=placeholder'], { stdio: 'ignore' });
const placeholder = { cert: readFileSync(join(tmp, 'c.pem')), key: readFileSync(join(tmp, 'k.pem')) };
const current = () => {
  const [c, k] = [join(dir, 'fullchain.pem'), join(dir, 'privkey.pem')];
  try {
    return existsSync(c) && existsSync(k) ? createSecureContext({ cert: readFileSync(c), key: readFileSync(k) }) : createSecureContext(placeholder);
  } catch {
    return createSecureContext(placeholder);
  }
};
createServer({ ...placeholder, SNICallback: (_name, cb) => cb(null, current()) }, (s) => s.end('hello\n')).listen(Number(port), '127.0.0.1', () => process.stderr.write(`serving ${dir} on 127.0.0.1:${port}\n`));
