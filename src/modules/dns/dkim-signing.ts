import type { HelperClient } from '../../adapters/helper-client.js';
import { pkcs8Der } from '../../adapters/rspamd/dkim-files.js';
import { HELPER_LIST_ARG_MAX } from '../../shared/dkim-names.js';
import { AppError } from '../../shared/errors.js';
import type { DkimAlgorithm } from './dkim-keygen.js';

/** One key Rspamd signs with, its private key opened (RSA: PKCS#8 PEM; Ed25519: base64 of seed ‖ public key). */
export type SigningKey = { domain: string; selector: string; algorithm: DkimAlgorithm; privateKey: string };

export type SigningOutcome = { status: 'changed' | 'unchanged' | 'skipped'; detail: string; reloaded: boolean };

type HelperOutcome = { ok: boolean; status: string; detail?: string; reloaded?: boolean };

function outcome(stdout: string, what: string): HelperOutcome {
  try {
    const v = JSON.parse(stdout) as HelperOutcome;
    if (typeof v.ok === 'boolean' && typeof v.status === 'string') return v;
  } catch {
    // Below.
  }
  throw new AppError('upstream', `${what}: the helper answered something unexpected`);
}

/**
 * Rspamd's DKIM files through the root helper (the service runs as the
 * unprivileged `mailsvc` user): each key is handed over as base64 PKCS#8 DER
 * (`dkim-key-install`, which parses it and writes the file itself), then the
 * signing configuration is rendered from names only (`dkim-signing-apply`:
 * rspamadm configtest, rename, reload, restore on failure).
 */
export function helperSigning(helper: HelperClient) {
  return {
    async applySigning(keys: readonly SigningKey[]): Promise<SigningOutcome> {
      const byDomain = new Map<string, { domain: string; selectors: { selector: string }[] }>();
      for (const k of keys) {
        const d = byDomain.get(k.domain) ?? { domain: k.domain, selectors: [] };
        d.selectors.push({ selector: k.selector });
        byDomain.set(k.domain, d);
      }
      const set = JSON.stringify([...byDomain.values()]);
      // Measured as it travels (JSON-escaped inside the request line), so the line stays within the helper's 64 KiB.
      const size = JSON.stringify(set).length;
      if (size > HELPER_LIST_ARG_MAX) throw new AppError('conflict', `DKIM signing: ${byDomain.size} domains do not fit one signing update (${size} characters, at most ${HELPER_LIST_ARG_MAX})`);
      for (const k of keys) {
        const der = pkcs8Der(k.algorithm, k.privateKey).toString('base64');
        const r = outcome((await helper.run('dkim-key-install', [k.domain, k.selector, k.algorithm, der])).stdout, 'DKIM key install');
        if (r.status === 'skipped') return { status: 'skipped', detail: r.detail ?? 'Rspamd not installed', reloaded: false };
      }
      const r = outcome((await helper.run('dkim-signing-apply', [set])).stdout, 'DKIM signing');
      if (!r.ok) throw new AppError('conflict', `DKIM signing: ${r.detail ?? 'refused'}`);
      return { status: r.status === 'changed' || r.status === 'skipped' ? r.status : 'unchanged', detail: r.detail ?? '', reloaded: r.reloaded === true };
    },
    /** Deletes the key files of selectors Rspamd no longer signs with. */
    async removeKeyFiles(domain: string, selectors: readonly string[]): Promise<void> {
      for (const s of selectors) outcome((await helper.run('dkim-key-remove', [domain, s])).stdout, 'DKIM key removal');
    },
  };
}
