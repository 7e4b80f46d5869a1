/** The keys one domain signs with: each selector and the file holding its private key. */
export type SigningDomain = { domain: string; selectors: readonly { selector: string; path: string }[] };

const quote = (s: string): string => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * Rspamd's `local.d/dkim_signing.conf` (mailsvc's own file): per domain, the
 * selectors and key files it signs with. A `domain { … selectors [ … ] }` block
 * rather than `selector_map`/`path_map`, because those hold one selector per
 * domain and an Ed25519 key signs alongside the RSA one. Mail of a domain not
 * listed is not signed (`try_fallback = false`).
 */
export function renderDkimSigning(domains: readonly SigningDomain[]): string {
  const out = [
    '# Written by mailsvc (DKIM keys of the domains: mailsvc dns …); changes here are overwritten.',
    'enabled = true;',
    'sign_authenticated = true;',
    'sign_local = true;',
    'sign_inbound = false;',
    'use_domain = "header";',
    'use_esld = false;',
    'allow_username_mismatch = true;',
    'allow_hdrfrom_mismatch = false;',
    'try_fallback = false;',
    'domain {',
  ];
  for (const d of [...domains].sort((a, b) => a.domain.localeCompare(b.domain))) {
    if (d.selectors.length === 0) continue;
    out.push(`  ${quote(d.domain)} {`, '    selectors [');
    for (const s of d.selectors) out.push(`      { selector = ${quote(s.selector)}; path = ${quote(s.path)}; }`);
    out.push('    ];', '  }');
  }
  out.push('}', '');
  return out.join('\n');
}
