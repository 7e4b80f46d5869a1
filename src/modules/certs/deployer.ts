import { createHash } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { X509Certificate } from 'node:crypto';

/** The ports a certificate is proven on, by what they speak. */
export type TlsService = 'smtp' | 'submission' | 'smtps' | 'imaps' | 'pop3s' | 'https';
export type PortProof = { service: string; port: number; servedSha256: string | null; matches: boolean; detail?: string };
export type DeployProof = { ok: boolean; ports: PortProof[] };

/**
 * The seam between issuing and serving (docs/certs.md): after the CA issued a
 * certificate, the certs module hands it here. An implementation writes the
 * chain and key where the daemons read them, reloads them, and proves on the
 * wire that every port serves it.
 */
export interface CertificateDeployer {
  /** Writes chain+key through the helper, reloads daemons, proves every port serves it.
   *  Resolves with the proof; rejects/returns ok:false when not proven (previous cert keeps serving). */
  deployAndProve(input: { certName: string; chainPem: string; keyPem: string; services: TlsService[] }): Promise<DeployProof>;
}

const STARTTLS: readonly TlsService[] = ['smtp', 'submission'];

/** Reads SMTP replies up to the final line of each, EHLO, STARTTLS; resolves when TLS may start. */
function smtpStartTls(sock: Socket, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let step = 0;
    const timer = setTimeout(() => finish(new Error(`no SMTP answer within ${ms} ms`)), ms);
    const finish = (err?: Error) => {
      clearTimeout(timer);
      sock.off('data', onData);
      if (err) reject(err);
      else resolve();
    };
    const onData = (d: Buffer) => {
      buf += d.toString('latin1');
      if (buf.length > 16_384) return finish(new Error('an SMTP answer over 16 KiB'));
      const lines = buf.split('\r\n').slice(0, -1);
      const final = lines.find((l) => /^\d{3} /.test(l));
      if (!final) return;
      buf = '';
      if (step === 0) {
        if (!final.startsWith('220')) return finish(new Error(`the greeting was ${final.slice(0, 80)}`));
        step = 1;
        sock.write('EHLO mailsvc-certs.invalid\r\n');
      } else if (step === 1) {
        if (!lines.some((l) => /^250[- ]STARTTLS/i.test(l))) return finish(new Error('STARTTLS is not offered'));
        step = 2;
        sock.write('STARTTLS\r\n');
      } else if (!final.startsWith('220')) finish(new Error(`STARTTLS was answered ${final.slice(0, 80)}`));
      else finish();
    };
    sock.on('data', onData);
  });
}

/** The SHA-256 (hex) of the leaf certificate `host:port` serves for `servername` (after STARTTLS for SMTP). */
export async function servedSha256(host: string, port: number, service: TlsService, servername: string, ms = 10_000): Promise<string> {
  const plain = STARTTLS.includes(service) ? netConnect({ host, port }) : undefined;
  try {
    if (plain) {
      plain.setTimeout(ms, () => plain.destroy(new Error(`no answer within ${ms} ms`)));
      await new Promise<void>((resolve, reject) => {
        plain.once('connect', () => resolve());
        plain.once('error', reject);
      });
      await smtpStartTls(plain, ms);
    }
    const tls = tlsConnect({ ...(plain ? { socket: plain } : { host, port }), servername, rejectUnauthorized: false, timeout: ms });
    try {
      await new Promise<void>((resolve, reject) => {
        tls.once('secureConnect', () => resolve());
        tls.once('error', reject);
        tls.once('timeout', () => reject(new Error(`no TLS handshake within ${ms} ms`)));
      });
      const raw = tls.getPeerCertificate().raw as Buffer | undefined;
      if (!raw || raw.length === 0) throw new Error('no certificate was presented');
      return createHash('sha256').update(raw).digest('hex');
    } finally {
      tls.destroy();
    }
  } finally {
    plain?.destroy();
  }
}

const leafSha256 = (chainPem: string): string => createHash('sha256').update(new X509Certificate(chainPem).raw).digest('hex');

/** Connects to every port once, in parallel, and compares what it serves with `chainPem`'s leaf. */
export async function proveOnTheWire(host: string, ports: readonly { service: TlsService; port: number }[], chainPem: string, servername: string, ms = 10_000): Promise<DeployProof> {
  const want = leafSha256(chainPem);
  const proofs = await Promise.all(
    ports.map(async ({ service, port }): Promise<PortProof> => {
      try {
        const got = await servedSha256(host, port, service, servername, ms);
        return got === want ? { service, port, servedSha256: got, matches: true } : { service, port, servedSha256: got, matches: false, detail: 'serves another certificate' };
      } catch (err) {
        return { service, port, servedSha256: null, matches: false, detail: (err as Error).message.slice(0, 200) };
      }
    }),
  );
  return { ok: proofs.every((p) => p.matches), ports: proofs };
}

export type LocalDeployerOptions = {
  /** `<dir>/<certName>/fullchain.pem` and `privkey.pem` (0600). */
  dir: string;
  /** Where the ports are reached (MAILSVC_DOCTOR_TLS_HOST). */
  host: string;
  /** The ports per service (MAILSVC_DOCTOR_TLS_PORTS). */
  ports: readonly { kind: TlsService; port: number }[];
  /** Called after the files changed, before the proof (a daemon reload); none by default. */
  reload?: () => Promise<void>;
  /** How long the proof waits for every port to serve the new certificate. */
  proveWithinMs?: number;
  timeoutMs?: number;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The built-in deployer, used until a `tls` module (the helper's daemon
 * deployment) takes over: it writes the files into a directory of its own
 * (each by a temp file and a rename), reloads through `reload`, and proves on
 * the wire. Not proven within `proveWithinMs`: the previous files are put
 * back (so the daemons keep the certificate that worked) and ok is false.
 */
export class LocalFileDeployer implements CertificateDeployer {
  constructor(private readonly o: LocalDeployerOptions) {}

  async deployAndProve(input: { certName: string; chainPem: string; keyPem: string; services: TlsService[] }): Promise<DeployProof> {
    if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(input.certName)) throw new Error('a certificate name is lowercase letters, digits and dashes');
    const dir = join(this.o.dir, input.certName);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const files = { chain: join(dir, 'fullchain.pem'), key: join(dir, 'privkey.pem') };
    const previous = { chain: await readFile(files.chain, 'utf8').catch(() => null), key: await readFile(files.key, 'utf8').catch(() => null) };
    const put = async (path: string, text: string, mode: number) => {
      const tmp = `${path}.new`;
      await writeFile(tmp, text, { mode });
      await chmod(tmp, mode);
      await rename(tmp, path);
    };
    // Key first: a daemon that reads both between the two renames sees the new key with the old chain only until the chain follows.
    await put(files.key, input.keyPem, 0o600);
    await put(files.chain, input.chainPem, 0o644);
    await this.o.reload?.();
    const ports = this.o.ports.filter((p) => input.services.includes(p.kind)).map((p) => ({ service: p.kind, port: p.port }));
    const servername = new X509Certificate(input.chainPem).subjectAltName?.split(/,\s*/).find((s) => s.startsWith('DNS:'))?.slice(4) ?? 'localhost';
    const deadline = Date.now() + (this.o.proveWithinMs ?? 10_000);
    let proof: DeployProof;
    for (;;) {
      proof = await proveOnTheWire(this.o.host, ports, input.chainPem, servername, this.o.timeoutMs ?? 5000);
      if (proof.ok || Date.now() > deadline) break;
      await sleep(250);
    }
    if (!proof.ok) {
      // Not proven: the certificate that was served stays (its files come back).
      if (previous.chain !== null && previous.key !== null) {
        await put(files.key, previous.key, 0o600);
        await put(files.chain, previous.chain, 0o644);
      } else {
        await rm(files.key, { force: true });
        await rm(files.chain, { force: true });
      }
      await this.o.reload?.().catch(() => undefined);
    }
    return proof;
  }
}
