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

/**
 * nginx server block for autoconfig.<domain> and autodiscover.<domain>: TLS
 * with a certificate naming both, and only the autoconfiguration paths
 * proxied to mailsvc (Outlook may write Autodiscover in any case: matched
 * without regard to case and passed on as mailsvc spells it).
 */
export function nginxAutoconfigSnippet(plan: DnsPlan, upstream: string): string {
  const [autoconfig, autodiscover] = [`autoconfig.${plan.domain}`, `autodiscover.${plan.domain}`];
  const proxy = [
    `        proxy_pass ${upstream};`,
    '        proxy_set_header Host $host;',
    '        proxy_set_header X-Forwarded-For $remote_addr;',
    '        proxy_set_header X-Forwarded-Proto $scheme;',
  ];
  return [
    `# Mail client autoconfiguration of ${plan.domain} (docs/mail-clients.md): Thunderbird asks`,
    `# https://${autoconfig}/mail/config-v1.1.xml, Outlook https://${autodiscover}/autodiscover/autodiscover.xml.`,
    `# Point the certificate lines at one certificate naming ${autoconfig} and ${autodiscover}`,
    `# (e.g. certbot certonly --webroot -w /var/www/html -d ${autoconfig} -d ${autodiscover}),`,
    '# and set MAILSVC_TRUSTED_PROXIES=127.0.0.1 so the rate limit counts each client, not nginx.',
    'server {',
    '    listen 80;',
    '    listen [::]:80;',
    `    server_name ${autoconfig} ${autodiscover};`,
    '    location /.well-known/acme-challenge/ { root /var/www/html; }',
    '    # Thunderbird asks over http first when https fails: send it to https.',
    '    location / { return 301 https://$host$request_uri; }',
    '}',
    '',
    'server {',
    '    listen 443 ssl;',
    '    listen [::]:443 ssl;',
    `    server_name ${autoconfig} ${autodiscover};`,
    `    ssl_certificate     /etc/letsencrypt/live/${autoconfig}/fullchain.pem;`,
    `    ssl_certificate_key /etc/letsencrypt/live/${autoconfig}/privkey.pem;`,
    '    ssl_protocols TLSv1.2 TLSv1.3;',
    '    client_max_body_size 64k;',
    '    location = /mail/config-v1.1.xml {',
    ...proxy,
    '    }',
    '    location = /.well-known/autoconfig/mail/config-v1.1.xml {',
    ...proxy,
    '    }',
    '    location ~* ^/autodiscover/autodiscover\\.xml$ {',
    '        rewrite ^ /autodiscover/autodiscover.xml break;',
    ...proxy,
    '    }',
    '    location ~* ^/autodiscover/autodiscover\\.json {',
    ...proxy,
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
    'nginx-autoconfig.conf  nginx server blocks for autoconfig.<domain> and autodiscover.<domain>,',
    '                passing mail clients\' autoconfiguration requests to mailsvc',
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
export async function writeBundle(plan: DnsPlan, output: string, upstream = 'http://127.0.0.1:8080'): Promise<BundleResult> {
  const target = resolve(output);
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-bundle-'));
  const root = `mailsvc-dns-${plan.domain}`;
  const files = { 'zone.txt': plan.zone, 'mta-sts.txt': plan.mta_sts_policy, 'nginx-mta-sts.conf': nginxSnippet(plan), 'nginx-autoconfig.conf': nginxAutoconfigSnippet(plan, upstream), 'README.txt': bundleReadme(plan) };
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
