import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { requireServices } from './services.js';

/**
 * A TOTP code from oathtool (Debian package oathtool), an implementation
 * nobody here wrote. `at` is a Unix time in milliseconds. Where oathtool is
 * not installed (a newcomer's machine), RFC 6238 computed here with
 * node:crypto, not with mailsvc's code, and a notice says so once; the tests
 * that are about agreeing with oathtool itself skip instead (oathtoolInstalled).
 */
export function oathtoolCode(secret: string, at: number = Date.now()): string {
  if (!oathtoolInstalled()) {
    if (requireServices) throw new Error('oathtool (Debian package oathtool) is required (MAILSVC_TEST_REQUIRE_SERVICES=1) but not found on PATH');
    if (!noticed) console.warn('[notice] oathtool (Debian package oathtool) is not installed: TOTP codes come from RFC 6238 computed in test/helpers/totp.ts');
    noticed = true;
    return rfc6238(secret, at);
  }
  const iso = new Date(Math.floor(at / 1000) * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  return execFileSync('oathtool', ['--totp', '-b', `--now=${iso}`, secret], { encoding: 'utf8' }).trim();
}

let installed: boolean | undefined;
let noticed = false;

export function oathtoolInstalled(): boolean {
  if (installed !== undefined) return installed;
  try {
    execFileSync('oathtool', ['--version'], { stdio: 'ignore' });
    installed = true;
  } catch {
    installed = false;
  }
  return installed;
}

/** RFC 6238 (SHA-1, 30 s, 6 digits) over a base32 secret, as oathtool --totp -b computes it. */
function rfc6238(secret: string, at: number): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const ch of secret.toUpperCase().replace(/=+$/, '')) bits += alphabet.indexOf(ch).toString(2).padStart(5, '0');
  const key = Buffer.from((bits.match(/.{8}/g) ?? []).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / 30)));
  const h = createHmac('sha1', key).update(counter).digest();
  const o = h[h.length - 1]! & 0xf;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/**
 * The code of the step before the current one, for an enrolment whose next
 * sign-in uses the current step's code (a step is used once). The server
 * accepts one step either side, so this code is good only until the current
 * step ends: if less than 5 s of it are left (a loaded machine may take that
 * long to send the request), this waits for the next step first.
 */
export async function previousStepCode(secret: string): Promise<string> {
  while (Date.now() % 30_000 > 25_000) await new Promise((r) => setTimeout(r, 200));
  return oathtoolCode(secret, Date.now() - 30_000);
}
