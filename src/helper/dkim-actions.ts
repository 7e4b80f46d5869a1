import { dirname } from 'node:path';
import { dkimKeyDir } from '../adapters/rspamd/dkim-files.js';
import type { ActionSpec, Command, HelperConfig } from './action-types.js';
import { LONG_ARG, dkimAlgorithm, dkimDomain, dkimPrivateKey, dkimSelector, signingSet, srsDomains } from './dkim-param.js';

/**
 * The helper's DKIM and SRS actions: Rspamd's key files and signing maps, and
 * postsrsd's excluded domains. Their work (dkim-action.ts) loads only when one
 * of them runs. `reloadRspamd` and `restartPostsrsd` are the commands the
 * action table uses for those daemons; `scratch` its scratch directory.
 */
export function dkimActions(deps: { reloadRspamd: (cfg: HelperConfig) => Command; restartPostsrsd: (cfg: HelperConfig) => Command; scratch: () => string }): Array<[string, ActionSpec]> {
  const { reloadRspamd, restartPostsrsd, scratch } = deps;
  return [
    [
      'dkim-key-install',
      { writes: (cfg) => [dirname(cfg.rspamdLocalDir), dkimKeyDir(cfg.rspamdLocalDir)],
        summary: "write one DKIM private key file for Rspamd (<key dir>/<domain>.<selector>.key, 0640 root:MAILSVC_RSPAMD_GROUP); the key (base64 PKCS#8 DER, RSA 2048-4096 bits or Ed25519) is parsed and written in Rspamd's form; a selector that signs now keeps its key",
        params: [dkimDomain, dkimSelector, dkimAlgorithm, dkimPrivateKey],
        run: async (args, cfg) => (await import('./dkim-action.js')).installKey(args, cfg),
      },
    ],
    [
      'dkim-signing-apply',
      { writes: (cfg) => [cfg.rspamdLocalDir, scratch()],
        summary: "render Rspamd's dkim_signing.conf from domain and selector names (key files derived, each must exist), rspamadm configtest on a staged copy, rename, reload Rspamd when it runs, restore on failure (JSON outcome)",
        params: [signingSet],
        maxArgLength: LONG_ARG,
        run: async (args, cfg, ctx) => (await import('./dkim-action.js')).applySigning(reloadRspamd)(args, cfg, ctx),
      },
    ],
    [
      'dkim-key-remove',
      { writes: (cfg) => [dkimKeyDir(cfg.rspamdLocalDir)],
        summary: "delete the key file of a retired DKIM selector; refused while dkim_signing.conf still names it",
        params: [dkimDomain, dkimSelector],
        run: async (args, cfg) => (await import('./dkim-action.js')).removeKey(args, cfg),
      },
    ],
    [
      'srs-domains-apply',
      { writes: (cfg) => [dirname(cfg.postsrsdDefaults)],
        summary: "set postsrsd's SRS_EXCLUDE_DOMAINS (MAILSVC_POSTSRSD_DEFAULTS) to these domain names when it differs, sh -n, rename, restart postsrsd, restore on failure (JSON outcome)",
        params: [srsDomains],
        maxArgLength: LONG_ARG,
        run: async (args, cfg, ctx) => (await import('./dkim-action.js')).applySrsDomains(restartPostsrsd)(args, cfg, ctx),
      },
    ],
  ];
}
