import { render } from 'preact';
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { dropPrefetched, onSessionEvents, session, setSession } from './api';
import type { Session } from './api';
import { SignIn } from './signin';
import { GROUPS, PAGES } from './pages';
import { Search } from './search';
import { useModal } from './dialog';
import { prefetchDashboard } from './pages/dashboard';
import './style.css';

const routeOf = (): string => location.hash.replace(/^#\/?/, '').split('?')[0] || 'dashboard';

// Asked before the first render: one round trip less before the first page shows.
const initialSession = session<Session>('GET', '');
// The dashboard's own requests go out at the same time, not after the session's answer and a render.
if (routeOf() === 'dashboard') prefetchDashboard();

/** The reauth dialog's pending promise: resolved when the administrator confirmed (or gave up). */
let pendingReauth: ((ok: boolean) => void) | null = null;

/**
 * What had the focus last outside a dialog: the dialog gives the focus back to it.
 * Kept as it happens, since by the time a dialog opens (after a native confirm,
 * an API answer) the browser may have moved the focus to the page's body.
 */
let lastFocus: HTMLElement | null = null;
document.addEventListener('focusin', (e) => {
  const el = e.target as HTMLElement;
  if (!el.closest('[role=dialog]')) lastFocus = el;
});

/**
 * A modal dialog: the page behind it is inert, the focus starts in it (at the
 * password), Tab and Shift+Tab cycle inside it, Escape cancels, and on close
 * the focus goes back to what had it (the button that asked), or to the
 * page's heading when that is gone.
 */
function Dialog({ labelledBy, onCancel, children }: { labelledBy: string; onCancel: () => void; children: ComponentChildren }) {
  const box = useRef<HTMLDivElement>(null);
  // The page behind it inert; the focus at the password field; back to what had it (useModal, ./dialog).
  const onKeyDown = useModal(box, { behind: '#app > .shell > :not(.backdrop)', first: 'input[type=password]', before: () => lastFocus, onCancel });
  return (
    <div class="backdrop">
      <div role="dialog" aria-modal="true" aria-labelledby={labelledBy} class="dialog" ref={box} onKeyDown={onKeyDown}>
        {children}
      </div>
    </div>
  );
}

function App() {
  const [state, setState] = useState<'loading' | 'out' | 'in'>('loading');
  const [route, setRoute] = useState(routeOf());
  // The whole hash: a jump to the same page with other parameters (a domain found by the search) starts it afresh.
  const [hash, setHash] = useState(location.hash);
  const [reauth, setReauth] = useState(false);
  /** The small-screen menu is open (the sidebar is always shown on a wide screen). */
  const [menu, setMenu] = useState(false);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    onSessionEvents(
      () => (setSession(null), setState('out')),
      () => new Promise<boolean>((resolve) => ((pendingReauth = resolve), setReauth(true))),
    );
    // Any failure (401: not signed in; or the service unreachable) shows the sign-in.
    initialSession.then(
      (s) => (setSession(s), setState('in')),
      () => (dropPrefetched(), setState('out')),
    );
    const onHash = () => (setRoute(routeOf()), setHash(location.hash));
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  // Keyboard and screen-reader users land on the new page's heading, unless they are typing in the search
  // box (a page that finishes drawing must not take the focus, and with it the open list, from under them).
  useEffect(() => {
    const typing = document.activeElement instanceof HTMLInputElement && document.activeElement.id === 'jump' && document.activeElement.value !== '';
    if (!typing) main.current?.querySelector<HTMLElement>('h1')?.focus();
  }, [hash, state]);

  const signedIn = (s: Session) => (setSession(s), setState('in'));
  const finishReauth = (ok: boolean, s?: Session) => {
    if (s) setSession(s);
    setReauth(false);
    pendingReauth?.(ok);
    pendingReauth = null;
  };
  const signOut = async () => {
    await session('POST', '/logout').catch(() => undefined);
    setSession(null);
    setState('out');
  };

  if (state === 'loading') return <main ref={main}><p role="status">Loading…</p></main>;
  if (state === 'out') {
    return (
      <main ref={main} class="signin">
        <h1 tabIndex={-1}>Sign in to mailsvc</h1>
        <SignIn onDone={signedIn} />
      </main>
    );
  }
  const page = PAGES.find((p) => p.id === route) ?? PAGES[0]!;
  const Current = page.component;
  const link = (p: (typeof PAGES)[number]) => (
    <li key={p.id}><a href={`#/${p.id}`} aria-current={p.id === page.id ? 'page' : undefined} onClick={() => setMenu(false)}>{p.nav ?? p.title}</a></li>
  );
  return (
    <div class={`shell${menu ? ' menu-open' : ''}`}>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.querySelector<HTMLElement>('h1')?.focus())}>Skip to content</a>
      <header class="top">
        <button type="button" class="menu-button secondary" aria-expanded={menu ? 'true' : 'false'} aria-controls="sidebar" onClick={() => setMenu(!menu)}>
          <span aria-hidden="true">☰</span> Menu
        </button>
        <strong class="brand">mailsvc</strong>
        <Search />
        <button type="button" class="secondary" onClick={() => void signOut()}>Sign out</button>
      </header>
      <nav id="sidebar" class="sidebar" aria-label="Pages">
        <ul class="nav-top">{PAGES.filter((p) => p.group === null).map(link)}</ul>
        {GROUPS.map((g) => (
          <div class="nav-group" key={g}>
            <h2 id={`nav-${g}`}>{g}</h2>
            <ul aria-labelledby={`nav-${g}`}>{PAGES.filter((p) => p.group === g).map(link)}</ul>
          </div>
        ))}
      </nav>
      <main id="main" ref={main}>
        <Current key={hash} />
      </main>
      {reauth && (
        <Dialog labelledBy="reauth-title" onCancel={() => finishReauth(false)}>
          <h2 id="reauth-title">Confirm with your second factor</h2>
          <SignIn confirming onDone={(s) => finishReauth(true, s)} />
          <button type="button" class="link" onClick={() => finishReauth(false)}>Cancel</button>
        </Dialog>
      )}
    </div>
  );
}

render(<App />, document.getElementById('app')!);
