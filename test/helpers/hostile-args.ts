import { generateKeyPairSync } from 'node:crypto';
import fc from 'fast-check';
import { DAEMON_LIMITS } from '../../src/shared/limit-keys.js';

/** What the hostile values may name: the secret file and the special files (test/helpers/privilege-root.ts). */
export type HostileContext = { secretFile: string; hostilePaths: readonly string[] };

const ed25519 = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'der' }).toString('base64');
const limits = Object.fromEntries(DAEMON_LIMITS.map((l) => [l.key, l.default]));

/** Values some validator accepts, so the accept paths (and the programs behind them) run too. */
export const VALID_VALUES: readonly string[] = [
  'alice@example.org', 'postmaster@example.org', '4Xy7Zq1aBcD2eF', 'ABC123DEF0', '4Xy7Zq1aBcD2eF,ABC123DEF0', '192.0.2.1', '2001:db8::1', '10.0.0.0/8',
  'mailsvc-auth', 'sshd', 'postfix', 'dovecot', 'fail2ban', 'rspamd', 'abc123', 'example.org', '202611', 'rsa', 'ed25519', ed25519,
  JSON.stringify(limits), '[]', JSON.stringify([{ domain: 'example.org', selectors: [{ selector: '202611' }] }]), 'example.org,other.test', '',
  JSON.stringify([{ ports: '25 587', protocol: 'tcp', source: '', enabled: 'yes' }]),
];

/** Bits of text that break parsers, configuration files and shells. */
function words(ctx: HostileContext): string[] {
  return [
    '"', "'", '`', '\\', '\n', '\r\n', '\u0000', '{', '}', '#', ';', '..', '../../../etc/shadow', '/', '*', '$', '$(id)', '`id`', '${IFS}', '%n%s', ' ', ',', '=', '@', '\u202e', 'é',
    `include "${ctx.secretFile}"`, 'include "/etc/shadow"', 'flush ruleset', '}\nflush ruleset\n{', '!include /etc/shadow', 'table ip filter { }', 'comment "#"', 'comment "}"',
    '-c', '-f', '--help', '-s/tmp/x', '--', '-', '-h ABC', 'queue_directory = /', 'SRS_DOMAIN=$(id)', 'mailsvc.service', '../mailsvc-update@x.service',
  ];
}

/** A JSON value shaped like what the JSON-taking actions read (limits, signing sets, firewall rules), with hostile strings and unknown keys inside. */
function hostileJson(str: fc.Arbitrary<string>): fc.Arbitrary<string> {
  const limitKey = fc.constantFrom(...DAEMON_LIMITS.map((l) => l.key));
  const anyValue = fc.oneof(str, fc.integer(), fc.double(), fc.constant(null), fc.boolean(), fc.constant(Number.MAX_VALUE), fc.array(str, { maxLength: 3 }));
  const shaped = fc.oneof(
    // every limit, one of them hostile
    fc.tuple(limitKey, anyValue).map(([k, v]) => ({ ...limits, [k]: v })),
    // every limit plus an unknown key
    fc.tuple(str, anyValue).map(([k, v]) => ({ ...limits, [k]: v })),
    fc.constant(JSON.parse(`${JSON.stringify(limits).slice(0, -1)},"__proto__":{"message-size-limit":1}}`) as unknown),
    fc.constant(JSON.parse('{"constructor":{"prototype":{"x":1}},"__proto__":{"polluted":1}}') as unknown),
    // signing sets
    fc.tuple(str, str).map(([domain, selector]) => [{ domain, selectors: [{ selector }] }]),
    fc.tuple(str, anyValue).map(([k, v]) => [{ domain: 'example.org', selectors: [{ selector: '202611' }], [k]: v }]),
    fc.constant([{ domain: 'example.org', selectors: [{ selector: '202611', key: '/etc/shadow' }] }]),
    // firewall rules and the guard's protected addresses and ports
    fc.record({ ports: str, protocol: fc.oneof(fc.constantFrom('tcp', 'udp'), str), source: str, enabled: fc.oneof(fc.constantFrom('yes', 'no'), str) }).map((r) => [r]),
    fc.tuple(str, anyValue).map(([k, v]) => ({ rules: [{ ports: '25', protocol: 'tcp', source: '', enabled: 'yes', [k]: v }], protected: { addresses: ['192.0.2.1'], ports: [22] } })),
    fc.record({ addresses: fc.array(str, { maxLength: 3 }), ports: fc.array(anyValue, { maxLength: 3 }) }).map((p) => ({ rules: [], protected: p })),
  ).map((v) => JSON.stringify(v));
  // Raw JSON text no value serializes to: deep nesting, a number out of range, a duplicate key.
  const raw = fc.oneof(
    fc.integer({ min: 10, max: 2500 }).map((n) => `${'['.repeat(n)}${']'.repeat(n)}`),
    fc.constant(`${JSON.stringify(limits).slice(0, -1)},"message-size-limit":1e309}`),
    fc.constant(`${JSON.stringify(limits).slice(0, -1)},"message-size-limit":"/etc/shadow"}`),
  );
  return fc.oneof({ arbitrary: shaped, weight: 9 }, { arbitrary: raw, weight: 1 });
}


/** One hostile argument for an action whose arguments may be `maxArgLength` characters long. */
export function hostileArg(ctx: HostileContext, maxArgLength: number): fc.Arbitrary<string> {
  const piece = fc.oneof(fc.constantFrom(...words(ctx)), fc.constantFrom(...ctx.hostilePaths), fc.constantFrom(...VALID_VALUES), fc.string({ maxLength: 12 }));
  const joined = fc.array(piece, { minLength: 1, maxLength: 5 }).map((p) => p.join(''));
  const huge = fc.tuple(fc.constantFrom(maxArgLength - 1, maxArgLength, maxArgLength + 1, 4096), piece.filter((p) => p.length > 0))
    .map(([n, p]) => p.repeat(Math.ceil(n / p.length)).slice(0, n));
  return fc.oneof(
    { arbitrary: fc.constantFrom(...ctx.hostilePaths), weight: 3 },
    { arbitrary: fc.constantFrom(...VALID_VALUES), weight: 3 },
    { arbitrary: joined, weight: 4 },
    { arbitrary: hostileJson(joined), weight: 2 },
    { arbitrary: huge, weight: 1 },
  );
}

/**
 * Argument lists for an action: mostly the right count (each argument hostile,
 * or one of the values its own validator accepts, `valid[i]`), sometimes too few or too many.
 */
export function hostileArgs(ctx: HostileContext, valid: readonly (readonly string[])[], maxArgLength: number): fc.Arbitrary<string[]> {
  const arg = hostileArg(ctx, maxArgLength);
  const params = valid.length;
  const nth = (i: number): fc.Arbitrary<string> => {
    const ok = valid[i] ?? [];
    return ok.length === 0 ? arg : fc.oneof({ arbitrary: arg, weight: 3 }, { arbitrary: fc.constantFrom(...ok), weight: 1 });
  };
  return fc.oneof(
    { arbitrary: fc.tuple(...Array.from({ length: params }, (_, i) => nth(i))).map((t) => [...t]), weight: 4 },
    { arbitrary: fc.array(arg, { minLength: 0, maxLength: params + 2 }).filter((a) => a.length !== params), weight: 1 },
  );
}
