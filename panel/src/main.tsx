import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { onSessionEvents, session, setSession } from './api';
import type { Session } from './api';
import { SignIn } from './signin';
import { PAGES } from './pages';
import './style.css';

const routeOf = (): string => location.hash.replace(/^#\/?/, '').split('?')[0] || 'dashboard';

// Asked before the first render: one round trip less before the first page shows.
const initialSession = session<Session>('GET', '');

/** The reauth dialog's pending promise: resolved when the administrator confirmed (or gave up). */
let pendingReauth: ((ok: boolean) => void) | null = null;

function App() {
  const [state, setState] = useState<'loading' | 'out' | 'in'>('loading');
  const [route, setRoute] = useState(routeOf());
  const [reauth, setReauth] = useState(false);
  const main = useRef<HTMLElement>(null);

  useEffect(() => {
    onSessionEvents(
      () => (setSession(null), setState('out')),
      () => new Promise<boolean>((resolve) => ((pendingReauth = resolve), setReauth(true))),
    );
    // Any failure (401: not signed in; or the service unreachable) shows the sign-in.
    initialSession.then(
      (s) => (setSession(s), setState('in')),
      () => setState('out'),
    );
    const onHash = () => setRoute(routeOf());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  // Keyboard and screen-reader users land on the new page's heading.
  useEffect(() => main.current?.querySelector<HTMLElement>('h1')?.focus(), [route, state]);

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
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.querySelector<HTMLElement>('h1')?.focus())}>Skip to content</a>
      <header>
        <strong>mailsvc</strong>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map((p) => (
              <li key={p.id}><a href={`#/${p.id}`} aria-current={p.id === page.id ? 'page' : undefined}>{p.title}</a></li>
            ))}
          </ul>
        </nav>
        <button type="button" onClick={() => void signOut()}>Sign out</button>
      </header>
      <main id="main" ref={main}>
        <Current />
      </main>
      {reauth && (
        <div class="backdrop">
          <div role="dialog" aria-modal="true" aria-labelledby="reauth-title" class="dialog">
            <h2 id="reauth-title">Confirm with your second factor</h2>
            <SignIn confirming onDone={(s) => finishReauth(true, s)} />
            <button type="button" class="link" onClick={() => finishReauth(false)}>Cancel</button>
          </div>
        </div>
      )}
    </>
  );
}

render(<App />, document.getElementById('app')!);
