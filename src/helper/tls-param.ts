import { isRecord, parseJsonOr } from '../shared/json-value.js';
import { TLS_BUNDLE_ARG_MAX, parseCertName, parseTlsBundle } from '../shared/tls-bundle.js';
import type { Param } from './action-types.js';

/** The daemons `tls-deploy` points at a certificate. */
export const TLS_DAEMONS = ['postfix', 'dovecot', 'nginx'] as const;
export type TlsDaemon = (typeof TLS_DAEMONS)[number];

export { TLS_BUNDLE_ARG_MAX };

/** A certificate's name (its directory under MAILSVC_TLS_DIR): a lower-case host name or label, never a path. */
export const certName: Param = { name: 'name', validate: parseCertName };

/** `postfix,dovecot,nginx` or a part of it: each once, in that order. */
export const tlsDaemons: Param = {
  name: 'daemons',
  validate(raw) {
    const given = raw.split(',');
    if (raw === '' || given.some((d) => !(TLS_DAEMONS as readonly string[]).includes(d))) throw new Error(`daemons must be a comma-separated part of ${TLS_DAEMONS.join(',')}`);
    return TLS_DAEMONS.filter((d) => given.includes(d)).join(',');
  },
};

/** One daemon whose certificate a restart makes it read again. */
export const tlsDaemon: Param = {
  name: 'daemon',
  validate(raw) {
    if (!(TLS_DAEMONS as readonly string[]).includes(raw)) throw new Error(`daemon must be one of ${TLS_DAEMONS.join(', ')}`);
    return raw;
  },
};

/**
 * `{"chain":[base64 DER, …],"key":base64 PKCS#8 DER}`: parsed and checked
 * (shared/tls-bundle.ts: the chain in order, the key the leaf's, the leaf
 * valid now, key type and size). Secret: logged as `[redacted]`; its
 * messages never quote it.
 */
export const tlsBundle: Param = {
  name: 'bundle',
  secret: true,
  safeMessage: true,
  validate(raw) {
    const parsed = parseJsonOr(raw, 'bundle must be JSON {chain, key}');
    if (!isRecord(parsed)) throw new Error('bundle must be JSON {chain, key}');
    parseTlsBundle(parsed, Date.now());
    return raw;
  },
};
