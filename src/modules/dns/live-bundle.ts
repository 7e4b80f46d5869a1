import { mkdtempSync, rmSync, writeFileSync, chmodSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createTarGz } from '../../adapters/archive/tar.js';
import { AppError } from '../../shared/errors.js';
import type { DnsPlan } from './schema.js';

export type BundleResult = { path: string; files: string[] };

/** nginx server block serving the MTA-STS policy (RFC 8461 §3.3: HTTPS, text/plain, on mta-sts.<domain>). */
export function nginxSnippet(plan: DnsPlan): string {
  const host = `mta-sts.${plan.domain}`;
  return [
    `# MTA-STS policy of ${plan.domain}: copy mta-sts.txt to /var/www/${host}/.well-known/mta-sts.txt`,
    `# and point the certificate lines at a certificate for ${host}.`,
    'server {',
    '    listen 443 ssl;',
    '    listen [::]:443 ssl;',
    `    server_name ${host};`,
    `    ssl_certificate     /etc/letsencrypt/live/${host}/fullchain.pem;`,
    `    ssl_certificate_key /etc/letsencrypt/live/${host}/privkey.pem;`,
    `    root /var/www/${host};`,
    '    location = /.well-known/mta-sts.txt {',
    '        default_type text/plain;',
    '        try_files $uri =404;',
    '    }',
    '    location / {',
    '        return 404;',
    '    }',
    '}',
    '',
  ].join('\n');
}

export function bundleReadme(plan: DnsPlan): string {
  return [
    `DNS live bundle for ${plan.domain} (mail host ${plan.mail_host}, public IP ${plan.public_ip ?? 'not given'})`,
    '',
    `zone.txt        the records to add to the zone of ${plan.domain} (zone-file lines; long TXT`,
    '                values are split into 255-byte strings). The PTR line is commented: ask',
    '                the owner of the IP address (your hosting provider) to set it.',
    'mta-sts.txt     the MTA-STS policy; serve it at',
    `                https://mta-sts.${plan.domain}/.well-known/mta-sts.txt`,
    'nginx-mta-sts.conf  an nginx server block that serves it (put it in /etc/nginx/sites-enabled/)',
    '',
    'Then check everything with:',
    `  mailsvc dns check ${plan.domain} ${plan.mail_host}${plan.public_ip ? ` --public-ip ${plan.public_ip}` : ''}`,
    '',
  ].join('\n');
}

/**
 * The "export live bundle" script: zone fragment, MTA-STS policy, nginx
 * snippet and README in one .tar.gz (`tar`, which every Debian has; the
 * bundle holds no secret, so it is 0644).
 */
export async function writeBundle(plan: DnsPlan, output: string): Promise<BundleResult> {
  const target = resolve(output);
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bundle-'));
  const root = `mailsvc-dns-${plan.domain}`;
  const files = { 'zone.txt': plan.zone, 'mta-sts.txt': plan.mta_sts_policy, 'nginx-mta-sts.conf': nginxSnippet(plan), 'README.txt': bundleReadme(plan) };
  try {
    mkdirSync(join(dir, root));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, root, name), text, { mode: 0o644 });
    const r = await createTarGz(dir, root, target).catch((err: unknown) => {
      throw new AppError('unavailable', `cannot run tar: ${err instanceof Error ? err.message : String(err)}`);
    });
    if (!r.ok) throw new AppError('bad_request', `cannot write ${target}: ${r.detail} (does ${dirname(target)} exist and can you write there?)`);
    chmodSync(target, 0o644);
    return { path: target, files: Object.keys(files).map((n) => `${root}/${n}`) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
