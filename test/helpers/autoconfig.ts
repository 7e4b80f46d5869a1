import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { XMLParser } from 'fast-xml-parser';
import { findProgram } from './mail-daemons.js';

const execFileP = promisify(execFile);

/** The schemas of the autoconfiguration answers, written from the public documentation (test/fixtures/autoconfig/). */
export const SCHEMAS = fileURLToPath(new URL('../fixtures/autoconfig/', import.meta.url));

/** Why `xmllint --schema` cannot run here, or null. */
export function xmllintMissing(): string | null {
  return findProgram('xmllint') === null ? 'no xmllint (apt-get install libxml2-utils)' : null;
}

/** Validates XML text against an XSD in test/fixtures/autoconfig with libxml2's xmllint; resolves with its verdict. */
export async function validateXml(xml: string, schema: string): Promise<{ ok: boolean; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'mailsvc-xsd-'));
  try {
    writeFileSync(join(dir, 'doc.xml'), xml);
    const r = await execFileP(findProgram('xmllint') ?? 'xmllint', ['--noout', '--nonet', '--schema', join(SCHEMAS, schema), join(dir, 'doc.xml')], { timeout: 30_000 })
      .then((x) => ({ ok: true, output: `${x.stdout}${x.stderr}` }))
      .catch((err: { stdout?: string; stderr?: string }) => ({ ok: false, output: `${err.stdout ?? ''}${err.stderr ?? ''}` }));
    return r;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** An Apple property list parsed by Python's plistlib (a parser nobody here wrote), as JSON. */
export async function parsePlist(text: string): Promise<Record<string, unknown>> {
  const script = 'import json, plistlib, sys\nprint(json.dumps(plistlib.loads(sys.stdin.buffer.read(), fmt=plistlib.FMT_XML)))';
  const child = execFileP(findProgram('python3') ?? 'python3', ['-c', script], { timeout: 30_000 });
  child.child.stdin?.end(text);
  return JSON.parse((await child).stdout) as Record<string, unknown>;
}

/** A server of an answer: what a client takes from it. */
export type AnsweredServer = { type: string; hostname: string; port: number; socketType: string; username: string };

const parser = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@', removeNSPrefix: true, parseTagValue: false, isArray: (name) => ['incomingServer', 'outgoingServer', 'Protocol'].includes(name) });

/** The servers of a Thunderbird config-v1.1.xml, in the order given. */
export function thunderbirdServers(xml: string): { incoming: AnsweredServer[]; outgoing: AnsweredServer[] } {
  type S = { '@type': string; hostname: string; port: string; socketType: string; username: string };
  const doc = parser.parse(xml) as { clientConfig: { emailProvider: { incomingServer?: S[]; outgoingServer?: S[] } } };
  const map = (s: S): AnsweredServer => ({ type: s['@type'], hostname: s.hostname, port: Number(s.port), socketType: s.socketType, username: s.username });
  return { incoming: (doc.clientConfig.emailProvider.incomingServer ?? []).map(map), outgoing: (doc.clientConfig.emailProvider.outgoingServer ?? []).map(map) };
}

/** The protocols of an Outlook Autodiscover response, in the order given. */
export function autodiscoverProtocols(xml: string): Array<Record<string, string>> {
  const doc = parser.parse(xml) as { Autodiscover: { Response: { Account: { Protocol: Array<Record<string, string>> } } } };
  return doc.Autodiscover.Response.Account.Protocol;
}
