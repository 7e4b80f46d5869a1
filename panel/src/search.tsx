import { useEffect, useRef, useState } from 'preact/hooks';
import { api, qs } from './api';
import { PAGES } from './pages';
import { LIMITS } from '../../src/shared/limit-keys.js';
import { BACKUP_FIELDS } from './pages/backup-fields';

/** One thing the search can jump to. */
export type Hit = { kind: 'page' | 'setting' | 'domain' | 'account'; label: string; detail: string; href: string };


const norm = (s: string) => s.toLowerCase().replace(/[-_]/g, ' ');

/** The pages and settings a text names: every word of the text is in the title, label, key or keywords. */
export function localHits(text: string): Hit[] {
  const words = norm(text).split(/\s+/).filter(Boolean);
  if (words.length === 0) return [];
  const match = (...hay: (string | undefined)[]) => {
    const all = norm(hay.filter(Boolean).join(' '));
    return words.every((w) => all.includes(w));
  };
  const pages: Hit[] = PAGES.filter((p) => match(p.title, p.nav, p.keywords, p.group ?? '')).map((p) => ({ kind: 'page', label: p.nav ?? p.title, detail: p.group ?? 'page', href: `#/${p.id}` }));
  const backup: Hit[] = BACKUP_FIELDS.filter((f) => match(f.key, f.label, 'backup')).map((f) => ({ kind: 'setting', label: f.label, detail: `Backups · MAILSVC_BACKUP_${f.key}`, href: `#/backups?setting=${f.key}` }));
  const limits: Hit[] = LIMITS.filter((l) => match(l.key, l.description, 'limit')).map((l) => ({ kind: 'setting', label: l.key, detail: `Limits · ${l.description}`, href: `#/limits?setting=${encodeURIComponent(l.key)}` }));
  return [...pages, ...backup, ...limits].slice(0, 8);
}

type Named = { items: { name?: string; address?: string }[] };

/** The domains and accounts whose names contain the text (asked on the server, 5 of each). */
async function remoteHits(text: string): Promise<Hit[]> {
  const q = text.trim().toLowerCase();
  const [domains, accounts] = await Promise.all([
    /^[a-z0-9.-]{2,253}$/.test(q) ? api<Named>('GET', `/domains${qs({ q, limit: 5 })}`).catch(() => null) : null,
    /^[a-z0-9.@_+=-]{2,254}$/.test(q) ? api<Named>('GET', `/accounts${qs({ q, limit: 5 })}`).catch(() => null) : null,
  ]);
  return [
    ...(domains?.items ?? []).map((d): Hit => ({ kind: 'domain', label: d.name ?? '', detail: 'Domain', href: `#/domains?q=${encodeURIComponent(d.name ?? '')}` })),
    ...(accounts?.items ?? []).map((a): Hit => ({ kind: 'account', label: a.address ?? '', detail: 'Account', href: `#/accounts?q=${encodeURIComponent(a.address ?? '')}` })),
  ];
}

/**
 * "Jump to": a combobox over the pages, the settings (backup keys, limits), and
 * the domains and accounts whose names contain what is typed (asked on the
 * server as one types). Arrow keys move through the list, Enter goes, Escape closes.
 */
export function Search() {
  const [text, setText] = useState('');
  const [remote, setRemote] = useState<Hit[]>([]);
  const [active, setActive] = useState(0);
  const [open, setOpen] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  // Closing on blur waits a moment (a click on an option lands first); focus or typing again cancels it,
  // so a list opened right after the focus left (a jump moves it to the new page's heading) stays open.
  const closing = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const keepOpen = () => {
    clearTimeout(closing.current);
    setOpen(true);
  };
  useEffect(() => {
    setRemote([]);
    if (text.trim().length < 2) return undefined;
    let live = true;
    const t = setTimeout(() => void remoteHits(text).then((h) => live && setRemote(h)), 150);
    return () => ((live = false), clearTimeout(t));
  }, [text]);
  const hits = [...localHits(text), ...remote];
  const shown = open && text.trim() !== '';
  const go = (h: Hit | undefined) => {
    if (!h) return;
    location.hash = h.href;
    setText('');
    setOpen(false);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpen(true);
      if (hits.length > 0) setActive((a) => (a + (e.key === 'ArrowDown' ? 1 : hits.length - 1)) % hits.length);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(hits[active] ?? hits[0]);
    } else if (e.key === 'Escape' && shown) {
      e.preventDefault();
      setOpen(false);
    }
  };
  return (
    <div class="search" role="search">
      <label for="jump" class="visually-hidden">Jump to a page, setting, domain or account</label>
      <input id="jump" ref={input} type="search" placeholder="Jump to… (domain, account, setting)" autocomplete="off" value={text}
        role="combobox" list={undefined} aria-expanded={shown ? 'true' : 'false'} aria-controls="jump-list" aria-autocomplete="list"
        aria-activedescendant={shown && hits[active] ? `jump-${active}` : undefined}
        onInput={(e) => (setText((e.currentTarget as HTMLInputElement).value), setActive(0), keepOpen())}
        onKeyDown={onKeyDown} onBlur={() => (closing.current = setTimeout(() => setOpen(false), 150))} onFocus={keepOpen} />
      <ul id="jump-list" role="listbox" aria-label="Matches" class="jump-list" hidden={!shown}>
        {hits.map((h, i) => (
          <li key={h.href} id={`jump-${i}`} role="option" aria-selected={i === active ? 'true' : 'false'} class={i === active ? 'active' : undefined}
            onMouseDown={(e) => (e.preventDefault(), go(h))}>
            <span class={`tag tag-${h.kind}`}>{h.kind}</span> {h.label} <small>{h.detail}</small>
          </li>
        ))}
        {shown && hits.length === 0 && <li role="option" aria-selected="false" aria-disabled="true" class="muted">Nothing matches “{text.trim()}”.</li>}
      </ul>
    </div>
  );
}

