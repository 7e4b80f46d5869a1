import { execFileSync } from 'node:child_process';

/**
 * A TOTP code from oathtool (Debian package oathtool), an implementation
 * nobody here wrote. `at` is a Unix time in milliseconds.
 */
export function oathtoolCode(secret: string, at: number = Date.now()): string {
  const iso = new Date(Math.floor(at / 1000) * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
  return execFileSync('oathtool', ['--totp', '-b', `--now=${iso}`, secret], { encoding: 'utf8' }).trim();
}

export function oathtoolInstalled(): boolean {
  try {
    execFileSync('oathtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
