import { X509Certificate, createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTestCa } from '../../../test/helpers/test-ca.js';
import type { HelperClient } from '../../adapters/helper-client.js';
import { Deployer } from './deployer.js';
import type { PortReading, PortTarget } from './prober.js';

/**
 * The proof's reading of the wire, on a scripted prober (the real daemons are in
 * tls-deploy.int.test.ts): what a port serves once is not yet what it serves.
 * A reloaded nginx keeps its old worker accepting for a moment next to the new
 * one, so a port can answer with the new certificate and then the old one.
 */
const next = makeTestCa(['mail.unit.test']);
const previous = makeTestCa(['mail.unit.test']);
afterAll(() => {
  next.cleanup();
  previous.cleanup();
});
const sha = (pem: string): string => createHash('sha256').update(new X509Certificate(pem).raw).digest('hex');
const NEW = sha(next.cert);
const OLD = sha(previous.cert);
const HTTPS: PortTarget = { kind: 'https', port: 443 };

/** The helper's answers for a deploy to nginx; `asked` records the actions. */
function helper(asked: string[]): HelperClient {
  const answers: Record<string, unknown> = {
    'tls-deploy': { ok: true, daemons: [{ daemon: 'nginx', status: 'changed', reloaded: true, detail: 'reloaded' }] },
    'tls-restart': { ok: true },
    'tls-rollback': { ok: true, sha256: OLD, daemons: [] },
  };
  return {
    run: async (action) => {
      asked.push(action);
      return { code: 0, stdout: JSON.stringify(answers[action]), stderr: '' };
    },
  };
}

/** A prober whose port 443 serves the scripted certificates one reading after another, the last one from then on. */
function scripted(script: string[]): { read(targets: readonly PortTarget[]): Promise<PortReading[]>; readings: string[] } {
  const readings: string[] = [];
  return {
    readings,
    read: async (targets) =>
      targets.map((t) => {
        const served = script[Math.min(readings.length, script.length - 1)] ?? OLD;
        readings.push(served);
        const reading: PortReading = { ...t, served: { sha256: served, notBefore: 0, notAfter: Date.now() + 86_400_000, subject: 'CN=mail.unit.test', issuer: 'CN=mailsvc test CA', trusted: true, untrustedBecause: null }, error: null };
        return reading;
      }),
  };
}

function deployer(prober: ReturnType<typeof scripted>, asked: string[]): Deployer {
  const repo = { upsertPorts: async () => undefined, addDeploy: async () => undefined };
  const quiet = { warn: () => undefined, info: () => undefined };
  return new Deployer(helper(asked), prober, [HTTPS], repo, { now: () => Date.now() }, () => quiet, { settleMs: 300, restartWaitMs: 3000, pollMs: 20, steadyMs: 60 });
}
const input = { certName: 'mail.unit.test', chainPem: readFileSync(next.chain, 'utf8'), keyPem: next.key, services: ['https' as const] };

describe('the proof on the wire: a certificate counts as served when it is served on two readings apart', () => {
  it('the new certificate once, then the old one for good: not proven, nginx restarted once, the deploy rolled back', async () => {
    const asked: string[] = [];
    const prober = scripted([NEW, OLD]);
    const r = await deployer(prober, asked).deploy(input);
    expect(r.ok).toBe(false);
    expect(r.ports).toEqual([{ service: 'https', port: 443, servedSha256: OLD, matches: false, detail: 'still serves the old certificate after a restart of nginx' }]);
    expect(asked).toEqual(['tls-deploy', 'tls-restart', 'tls-rollback']);
    expect(r.detail).toMatch(/which every port serves again$/);
  });

  it('the new certificate, the old one a moment later (an old worker), then the new one steadily: proven after a reload, no restart', async () => {
    const asked: string[] = [];
    const prober = scripted([NEW, OLD, NEW]);
    const r = await deployer(prober, asked).deploy(input);
    expect(r.ok).toBe(true);
    expect(r.ports).toEqual([{ service: 'https', port: 443, servedSha256: NEW, matches: true, detail: 'serves the new certificate after a reload' }]);
    expect(asked).toEqual(['tls-deploy']);
    // Read until the new certificate was seen twice in a row.
    expect(prober.readings).toEqual([NEW, OLD, NEW, NEW]);
  });
});
