import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

/**
 * An independent DKIM verifier: dkimpy (Debian python3-dkim, the library behind
 * `dkimverify`), with its DNS lookups sent to the test's DNS server instead of
 * /etc/resolv.conf. Answers, per DKIM-Signature (top first), its selector,
 * algorithm and whether it verified against the published record.
 */
const SCRIPT = `
import sys, re, dkim, dns.resolver
host, port = sys.argv[1], int(sys.argv[2])
r = dns.resolver.Resolver(configure=False)
r.nameservers = [host]
r.port = port
def dnsfunc(name, timeout=5):
    name = name.decode() if isinstance(name, bytes) else name
    try:
        ans = r.resolve(name, 'TXT', lifetime=timeout)
    except Exception:
        return b''
    return b''.join(ans[0].strings)
msg = sys.stdin.buffer.read()
d = dkim.DKIM(msg)
sigs = [v for (k, v) in d.headers if k.lower() == b'dkim-signature']
for i, s in enumerate(sigs):
    tags = dict(re.findall(rb'\\b([a-z]+)=([^;]*)', re.sub(rb'\\s+', b'', s)))
    ok = dkim.DKIM(msg).verify(idx=i, dnsfunc=dnsfunc)
    print((tags.get(b's', b'') + b' ' + tags.get(b'a', b'') + b' ' + (b'pass' if ok else b'fail')).decode())
`;

export function dkimpyUnavailable(): string | null {
  return existsSync('/usr/lib/python3/dist-packages/dkim/__init__.py') ? null : 'missing python3-dkim (Debian package)';
}

export function dkimVerify(message: string, dns: { host: string; port: number }): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const p = execFile('/usr/bin/python3', ['-c', SCRIPT, dns.host, String(dns.port)], { timeout: 30_000 }, (err, stdout, stderr) =>
      err ? reject(new Error(`dkimpy: ${err.message} ${stderr}`)) : resolve(stdout.split('\n').filter(Boolean)),
    );
    p.stdin?.end(message);
  });
}
