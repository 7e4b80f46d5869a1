import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSettings } from '../../src/config/settings.js';
import { createDb } from '../../src/db/database.js';
import { migrateToLatest } from '../../src/app/schema.js';
import { createInfra } from '../../src/infra/infra.js';
import type { Infra } from '../../src/infra/infra.js';
import { createDomainsModule } from '../../src/modules/domains/index.js';
import type { DomainsModule } from '../../src/modules/domains/index.js';
import { createDnsModule, retireDomainKeys } from '../../src/modules/dns/index.js';
import type { DnsDeps, DnsModule } from '../../src/modules/dns/index.js';
import type { Clock } from '../../src/shared/clock.js';

/** The domains and dns modules over a migrated database (SQLite in a temp dir unless a URL is given). */
export type DnsTestModules = { infra: Infra; domains: DomainsModule; dns: DnsModule; close(): Promise<void> };

export async function openDnsModules(
  env: Record<string, string>,
  deps: Partial<Omit<DnsDeps, 'domains'>> = {},
  opts: { clock?: Clock; databaseUrl?: string } = {},
): Promise<DnsTestModules> {
  const dataDir = mkdtempSync(join(tmpdir(), 'mailsvc-dns-'));
  const settings = loadSettings(
    {
      MAILSVC_DATA_DIR: dataDir,
      MAILSVC_CONFIG_FILE: join(dataDir, 'none.conf'),
      MAILSVC_SECRET_KEY: randomBytes(32).toString('base64'),
      MAILSVC_HELPER: 'direct',
      // The helper's actions run in this process: never on the host's own daemon files.
      MAILSVC_RSPAMD_LOCAL_DIR: join(dataDir, 'no-rspamd/local.d'),
      MAILSVC_POSTSRSD_DEFAULTS: join(dataDir, 'no-postsrsd'),
      MAILSVC_LOG_LEVEL: 'silent',
      ...(opts.databaseUrl ? { MAILSVC_DATABASE_URL: opts.databaseUrl } : {}),
      ...env,
    },
    dataDir,
  );
  const infra = createInfra(settings, { createKeyFile: true, openDb: createDb, ...(opts.clock ? { clock: opts.clock } : {}) });
  await migrateToLatest(infra.db);
  const later: { dns?: DnsModule } = {};
  const dkim = () => (later.dns as DnsModule).dkim;
  const domains = createDomainsModule(infra, {
    keys: { generate: (d) => dkim().generate(d), has: async (d) => (await dkim().keys(d)).length > 0, resync: async () => void (await dkim().syncSigning()) },
    // As the module list wires them: the dns module listens to domain.deleting.
    deleting: { listeners: async () => [retireDomainKeys(dkim())] },
  });
  const dns = (later.dns = createDnsModule(infra, { domains: domains.service, keyBits: () => 2048, ...deps }));
  return { infra, domains, dns, close: () => infra.close() };
}
