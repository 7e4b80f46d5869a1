import { configDefaults, defineConfig } from 'vitest/config';
import { fileURLToPath } from 'node:url';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// The local HTTPS servers that play SMS providers use a certificate signed by
// a test CA. Node reads one NODE_EXTRA_CA_CERTS file, only at start: so it is
// set here, before the test workers are forked (they inherit it). When the
// machine already points it at a bundle, a copy of that bundle plus the test
// CA is used instead.
const testCa = fileURLToPath(new URL('./test/fixtures/tls/ca.pem', import.meta.url));
const caPem = readFileSync(testCa, 'utf8');
const current = process.env.NODE_EXTRA_CA_CERTS;
const read = (p: string): string => {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return '';
  }
};
if (!current) {
  process.env.NODE_EXTRA_CA_CERTS = testCa;
} else if (!read(current).includes(caPem.trim())) {
  const bundle = join(mkdtempSync(join(tmpdir(), 'mailsvc-test-ca-')), 'ca-bundle.pem');
  writeFileSync(bundle, `${read(current).trimEnd()}\n${caPem}`);
  process.env.NODE_EXTRA_CA_CERTS = bundle;
}

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Written for src/modules/notes/: test/add-a-module.test.ts runs it there, in a copy of the tree.
    exclude: [...configDefaults.exclude, 'test/example-module/**'],
    globalSetup: ['./test/global-setup.ts'],
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    maxWorkers: 2,
  },
});
