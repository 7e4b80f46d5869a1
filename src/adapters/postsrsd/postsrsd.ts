import { connect } from 'node:net';
import { run } from '../exec.js';
import type { CheckOutcome, ConfigChecker } from '../config-applier/index.js';

/** The answer of a Postfix tcp_table lookup: 200 (found: the value), 500 (not found: the reason), 400 (temporary). */
export type TableAnswer = { code: number; text: string };

/** `get <key>` on a Postfix tcp_table server (postsrsd 1.x's forward and reverse tables); the key %-encoded as Postfix does. */
export function tcpTableGet(host: string, port: number, key: string, timeoutMs = 5000): Promise<TableAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let buf = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer from ${host}:${port} within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.setEncoding('utf8');
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (d: string) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      clearTimeout(timer);
      socket.end();
      const line = buf.slice(0, nl);
      resolve({ code: Number(line.slice(0, 3)), text: decodeURIComponent(line.slice(4)) });
    });
    // Postfix's tcp_table encoding: %, white space and control characters as %XX.
    const encoded = [...key].map((c) => (c === '%' || c.charCodeAt(0) <= 0x20 || c.charCodeAt(0) === 0x7f ? `%${c.charCodeAt(0).toString(16).padStart(2, '0')}` : c)).join('');
    socket.write(`get ${encoded}\n`);
  });
}

/** `SRS_EXCLUDE_DOMAINS=…` set in postsrsd's shell-style settings file: the line replaced, else appended. */
export function setExcludeDomains(text: string, domains: readonly string[]): string {
  const line = `SRS_EXCLUDE_DOMAINS=${domains.join(',')}`;
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const i = lines.findIndex((l) => /^\s*SRS_EXCLUDE_DOMAINS=/.test(l));
  if (i < 0) lines.push(line);
  else lines[i] = line;
  return `${lines.join('\n')}\n`;
}

export function readExcludeDomains(text: string): string[] | null {
  const m = /^\s*SRS_EXCLUDE_DOMAINS=(.*)$/m.exec(text);
  return m ? (m[1] ?? '').replace(/^["']|["']$/g, '').split(',').map((d) => d.trim()).filter(Boolean) : null;
}

/** The settings file is sourced by a shell (Debian's unit and init script): `sh -n` must parse it. */
export function postsrsdChecker(): ConfigChecker {
  return {
    name: 'sh -n',
    async check(files): Promise<CheckOutcome> {
      for (const f of files) {
        const parsed = await run('sh', ['-n', '-c', f.content.toString('utf8')], { timeoutMs: 10_000 });
        if (parsed.code !== 0) return { ok: false, detail: `sh -n: ${parsed.stderr.trim()}` };
      }
      return { ok: true };
    },
  };
}
