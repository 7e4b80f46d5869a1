import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigChecker, RunFn } from '../../../adapters/config-applier/index.js';
import { current } from './common.js';
import type { DaemonPlan, WiringContext } from './types.js';

/** postsrsd's defaults file with SRS_DOMAIN set (the line replaced, or added); everything else kept. */
export function withSrsDomain(text: string, domain: string): string {
  const line = `SRS_DOMAIN=${domain}`;
  if (/^#?[ \t]*SRS_DOMAIN=.*$/m.test(text)) return text.replace(/^#?[ \t]*SRS_DOMAIN=.*$/m, line);
  return `${text.replace(/\n?$/, '\n')}${line}\n`;
}

/** The defaults file is sourced by a shell: `sh -n` on the new text, and SRS_DOMAIN must come out set. */
export function postsrsdChecker(exec: RunFn): ConfigChecker {
  return {
    name: 'sh -n (postsrsd defaults)',
    async check(files) {
      const dir = mkdtempSync(join(tmpdir(), 'mailsvc-postsrsd-'));
      try {
        for (const f of files) {
          const copy = join(dir, 'postsrsd');
          writeFileSync(copy, f.content);
          const r = await exec('sh', ['-c', '. "$1" && test -n "$SRS_DOMAIN"', 'sh', copy], { timeoutMs: 10_000 });
          if (r.code !== 0) return { ok: false, detail: `${f.path}: not a shell file that sets SRS_DOMAIN (${r.stderr.trim() || `exit ${r.code}`})` };
        }
        return { ok: true };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * postsrsd: its rewrite domain (MAILSVC_SRS_DOMAIN). Postfix's canonical maps
 * pointing at it are set with Postfix's wiring; mailsvc keeps the excluded
 * domains (SRS_EXCLUDE_DOMAINS) itself. Only with MAILSVC_ENABLE_SRS=yes.
 */
export function planPostsrsd(ctx: WiringContext, domain: string): DaemonPlan {
  const path = ctx.paths.postsrsdDefaults;
  const now = current(path) ?? '';
  return {
    daemon: 'postsrsd',
    before: [],
    files: [{ path, content: withSrsDomain(now, domain), mode: now ? statSync(path).mode & 0o7777 : 0o644 }],
    checker: postsrsdChecker(ctx.exec),
    after: [],
    settings: {},
    notes: [],
  };
}
