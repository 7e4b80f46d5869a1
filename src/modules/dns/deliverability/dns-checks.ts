import ipaddr from 'ipaddr.js';
import { dkimRecordValue } from '../dkim-keygen.js';
import type { DkimAlgorithm } from '../dkim-keygen.js';
import { dmarcValue, parseIp, reverseName } from '../dns-plan.js';
import { countLookups, parseSpf } from './spf.js';
import { bare, fail, pass, txtValues, unknown } from './types.js';
import type { CheckInput, CheckResult } from './types.js';

/** Every check that needs DNS only. Each asks through the shared, once-per-run cache. */

export async function checkMx(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['mx', 'MX'];
  const a = await i.zone(i.domain, 'MX');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const hosts = a.kind === 'records' ? a.records.map((r) => bare(r.exchange)) : [];
  if (hosts.includes(i.mailHost)) return pass(id, name, `${i.domain} MX ${hosts.join(', ')}`);
  return fail(id, name, hosts.length ? `MX points to ${hosts.join(', ')}, not ${i.mailHost}` : `${i.domain} has no MX record`, `Publish: ${i.domain}. IN MX 10 ${i.mailHost}.`);
}

/** The zone answer for the mail host when it is inside the domain, else the resolvers'. */
const hostAsk = (i: CheckInput) => (i.mailHost === i.domain || i.mailHost.endsWith(`.${i.domain}`) ? i.zone : i.any);

export async function checkAddress(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['address', 'A/AAAA of the mail host'];
  const ask = hostAsk(i);
  const [a, aaaa] = await Promise.all([ask(i.mailHost, 'A'), ask(i.mailHost, 'AAAA')]);
  if (a.kind === 'error' && aaaa.kind === 'error') return unknown(id, name, a.detail);
  const addrs = [...(a.kind === 'records' ? a.records : []), ...(aaaa.kind === 'records' ? aaaa.records : [])];
  if (addrs.length === 0) return fail(id, name, `${i.mailHost} has no A or AAAA record`, `Publish: ${i.mailHost}. IN A <public IPv4>`);
  if (i.publicIp !== undefined && !addrs.map((x) => parseIp(x).toString()).includes(parseIp(i.publicIp).toString())) {
    return fail(id, name, `${i.mailHost} resolves to ${addrs.join(', ')}, not ${i.publicIp}`, `Point ${i.mailHost} at ${i.publicIp}`);
  }
  return pass(id, name, `${i.mailHost} → ${addrs.join(', ')}`);
}

export async function checkSpf(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['spf', 'SPF'];
  const a = await i.zone(i.domain, 'TXT');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const records = a.kind === 'records' ? txtValues(a.records).filter((v) => /^v=spf1(\s|$)/i.test(v)) : [];
  const fix = `Publish one record: ${i.domain}. IN TXT "v=spf1 mx -all"`;
  if (records.length === 0) return fail(id, name, `${i.domain} has no SPF record`, fix);
  if (records.length > 1) return fail(id, name, `${records.length} SPF records (receivers treat that as a permanent error)`, `Merge them into one. ${fix}`);
  const record = records[0] ?? '';
  const parsed = parseSpf(record);
  if (!parsed.ok) return fail(id, name, `"${record}": ${parsed.detail}`, fix);
  const lookups = await countLookups(parsed.terms, i.any);
  if (lookups.count > 10) return fail(id, name, `${lookups.count} DNS lookups (the limit is 10)`, 'Replace include: and a/mx terms with ip4:/ip6: ranges until at most 10 lookups remain');
  if (lookups.problems.length) return fail(id, name, lookups.problems.join('; '), 'Fix or remove the include: targets named');
  const all = parsed.terms.find((t) => /^[+\-~?]?all$/i.test(t));
  if (all === undefined || /^[+?]?all$/i.test(all)) return fail(id, name, `"${record}" does not end with -all or ~all`, fix);
  const ip = i.publicIp;
  const authorizes =
    parsed.terms.some((t) => /^\+?mx$/i.test(t)) ||
    parsed.terms.some((t) => new RegExp(`^\\+?a:${i.mailHost.replace(/\./g, '\\.')}$`, 'i').test(t)) ||
    (ip !== undefined && parsed.terms.some((t) => {
      const m = /^\+?ip[46]:(.+)$/i.exec(t);
      if (!m?.[1]) return false;
      try {
        const target = parseIp(ip);
        const [net, bits] = m[1].includes('/') ? ipaddr.parseCIDR(m[1]) : [ipaddr.parse(m[1]), target.kind() === 'ipv4' ? 32 : 128];
        return net.kind() === target.kind() && target.match(net, bits);
      } catch {
        return false;
      }
    })) ||
    parsed.terms.some((t) => /^\+?(include:|redirect=)/i.test(t));
  if (!authorizes) return fail(id, name, `"${record}" does not allow ${i.mailHost}`, fix);
  return pass(id, name, `"${record}", ${lookups.count} DNS lookup(s)`);
}

export async function checkDmarc(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['dmarc', 'DMARC'];
  const at = `_dmarc.${i.domain}`;
  const a = await i.zone(at, 'TXT');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const records = a.kind === 'records' ? txtValues(a.records).filter((v) => /^v\s*=\s*DMARC1/i.test(v)) : [];
  const fix = `Publish: ${at}. IN TXT "${dmarcValue(i.domain)}"`;
  if (records.length === 0) return fail(id, name, `${at} has no DMARC record`, fix);
  if (records.length > 1) return fail(id, name, `${records.length} DMARC records (receivers ignore them all)`, `Keep one. ${fix}`);
  const record = records[0] ?? '';
  const tags = new Map<string, string>();
  for (const part of record.split(';').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([a-z]+)\s*=\s*(.*)$/i.exec(part);
    if (!m?.[1]) return fail(id, name, `"${record}": "${part}" is not tag=value`, fix);
    tags.set(m[1].toLowerCase(), (m[2] ?? '').trim());
  }
  const p = tags.get('p')?.toLowerCase();
  if (p === undefined || !['none', 'quarantine', 'reject'].includes(p)) return fail(id, name, `"${record}": p= must be none, quarantine or reject`, fix);
  const pct = tags.get('pct');
  if (pct !== undefined && !(/^\d{1,3}$/.test(pct) && Number(pct) <= 100)) return fail(id, name, `"${record}": pct= must be 0..100`, fix);
  const rua = tags.get('rua');
  if (rua !== undefined && !rua.split(',').every((u) => /^(mailto:[^@\s]+@[^@\s]+|https:\/\/\S+)$/i.test(u.trim()))) return fail(id, name, `"${record}": rua= must be mailto: or https: URIs`, fix);
  if (p === 'none') return fail(id, name, `"${record}": p=none only monitors; spoofed mail is still delivered`, `Raise the policy to p=quarantine (or p=reject) once reports show your own mail aligned. ${fix}`);
  return pass(id, name, `p=${p}`);
}

export async function checkDkim(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['dkim', 'DKIM'];
  if (i.dkim.length === 0) return fail(id, name, `${i.domain} has no DKIM key`, `Make one: mailsvc dns generate-dkim ${i.domain}`);
  const results = await Promise.all(
    i.dkim.map(async (k) => {
      const at = `${k.selector}._domainkey.${i.domain}`;
      const expected = dkimRecordValue(k.algorithm as DkimAlgorithm, k.public_key);
      const a = await i.zone(at, 'TXT');
      if (a.kind === 'error') return { k, state: 'unknown' as const, detail: a.detail };
      const values = a.kind === 'records' ? txtValues(a.records) : [];
      const p = values.map((v) => /(?:^|;)\s*p=([^;]*)/.exec(v)?.[1]?.replace(/\s+/g, '')).filter((x) => x !== undefined);
      if (values.length === 0) return { k, state: 'fail' as const, detail: `${at} is not published`, fix: `Publish: ${at}. IN TXT "${expected}"` };
      if (p.length !== 1 || p[0] !== k.public_key) return { k, state: 'fail' as const, detail: `${at} does not hold the signing key`, fix: `Replace it with: ${at}. IN TXT "${expected}"` };
      return { k, state: 'pass' as const, detail: `${at} (${k.algorithm}) matches` };
    }),
  );
  const failed = results.filter((r) => r.state === 'fail');
  if (failed.length) return fail(id, name, failed.map((r) => r.detail).join('; '), failed.map((r) => r.fix).join(' '));
  const unsure = results.filter((r) => r.state === 'unknown');
  if (unsure.length) return unknown(id, name, unsure.map((r) => r.detail).join('; '));
  return pass(id, name, results.map((r) => r.detail).join('; '));
}

export async function checkPtr(i: CheckInput): Promise<CheckResult | null> {
  if (i.publicIp === undefined) return null;
  const [id, name] = ['ptr', 'PTR (forward-confirmed)'];
  const ip = parseIp(i.publicIp);
  const rev = reverseName(ip);
  const a = await i.any(rev, 'PTR');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const names = a.kind === 'records' ? a.records.map(bare) : [];
  const fix = `Ask the owner of ${ip.toString()} (your hosting provider) to set its reverse DNS to ${i.mailHost}`;
  if (!names.includes(i.mailHost)) return fail(id, name, names.length ? `${ip.toString()} points back to ${names.join(', ')}` : `${ip.toString()} has no PTR record`, fix);
  const fwd = await hostAsk(i)(i.mailHost, ip.kind() === 'ipv4' ? 'A' : 'AAAA');
  if (fwd.kind === 'error') return unknown(id, name, fwd.detail);
  const addrs = fwd.kind === 'records' ? fwd.records.map((x) => parseIp(x).toString()) : [];
  if (!addrs.includes(ip.toString())) return fail(id, name, `${i.mailHost} does not resolve back to ${ip.toString()}`, `Point ${i.mailHost} at ${ip.toString()}`);
  return pass(id, name, `${ip.toString()} ↔ ${i.mailHost}`);
}

export async function checkMtaStsTxt(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['mta-sts-dns', 'MTA-STS record'];
  const at = `_mta-sts.${i.domain}`;
  const a = await i.zone(at, 'TXT');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const records = a.kind === 'records' ? txtValues(a.records).filter((v) => /^v=STSv1/i.test(v)) : [];
  const fix = `Publish the record of: mailsvc dns plan ${i.domain} ${i.mailHost}`;
  if (records.length !== 1) return fail(id, name, records.length ? `${records.length} MTA-STS records` : `${at} has no MTA-STS record`, fix);
  if (!/^v=STSv1;\s*id=[A-Za-z0-9]{1,32};?\s*$/.test(records[0] ?? '')) return fail(id, name, `"${records[0]}" is not "v=STSv1; id=<1-32 letters or digits>"`, fix);
  return pass(id, name, records[0] ?? '');
}

export async function checkTlsRpt(i: CheckInput): Promise<CheckResult> {
  const [id, name] = ['tls-rpt', 'TLS-RPT'];
  const at = `_smtp._tls.${i.domain}`;
  const a = await i.zone(at, 'TXT');
  if (a.kind === 'error') return unknown(id, name, a.detail);
  const records = a.kind === 'records' ? txtValues(a.records).filter((v) => /^v=TLSRPTv1/i.test(v)) : [];
  const fix = `Publish: ${at}. IN TXT "v=TLSRPTv1; rua=mailto:tls-reports@${i.domain}"`;
  if (records.length !== 1) return fail(id, name, records.length ? `${records.length} TLS-RPT records` : `${at} has no TLS-RPT record`, fix);
  const m = /^v=TLSRPTv1;\s*rua=([^;]+);?\s*$/.exec(records[0] ?? '');
  if (!m?.[1]?.split(',').every((u) => /^(mailto:[^@\s]+@[^@\s]+|https:\/\/\S+)$/.test(u.trim()))) return fail(id, name, `"${records[0]}" is not "v=TLSRPTv1; rua=<mailto: or https: URIs>"`, fix);
  return pass(id, name, records[0] ?? '');
}
