import type { FastifyInstance, FastifyReply } from 'fastify';

/**
 * The portal's page: one HTML file, one script, one style sheet, kept in the
 * bundle (no build step of their own, no file on disk). The script writes
 * only text nodes (never HTML), and the CSP allows nothing but these files.
 */
export const PORTAL_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Your mailbox</title>
<link rel="stylesheet" href="/portal/portal.css">
<script type="module" src="/portal/portal.js"></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header><p class="brand">Your mailbox</p><button type="button" id="signout" hidden>Sign out</button></header>
<main id="main" tabindex="-1">
<p id="status" role="status" aria-live="polite"></p>
<p id="error" role="alert"></p>
<section id="signin" aria-labelledby="signin-h">
  <h1 id="signin-h">Sign in to your mailbox</h1>
  <form id="signin-form">
    <label for="si-address">Email address</label>
    <input id="si-address" name="address" type="email" autocomplete="username" required>
    <label for="si-password">Mailbox password</label>
    <input id="si-password" name="password" type="password" autocomplete="current-password" required>
    <label for="si-code">Authenticator code (only if you turned it on)</label>
    <input id="si-code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6">
    <button type="submit">Sign in</button>
  </form>
  <p class="hint">App passwords do not work here: use your mailbox password.</p>
</section>
<div id="home" hidden>
  <h1 id="home-h" tabindex="-1">Your mailbox</h1>
  <section aria-labelledby="usage-h"><h2 id="usage-h">Storage</h2><p id="usage">…</p></section>
  <section aria-labelledby="pw-h"><h2 id="pw-h">Change your password</h2>
    <form id="pw-form">
      <label for="pw-current">Current password</label><input id="pw-current" type="password" autocomplete="current-password" required>
      <label for="pw-new">New password (at least 10 characters)</label><input id="pw-new" type="password" autocomplete="new-password" minlength="10" required>
      <button type="submit">Change password</button>
    </form>
  </section>
  <section aria-labelledby="ap-h"><h2 id="ap-h">App passwords</h2>
    <p>One per mail client or device. Each is shown once, when you make it.</p>
    <ul id="ap-list"></ul>
    <form id="ap-form">
      <label for="ap-name">Name (e.g. phone)</label><input id="ap-name" maxlength="255" required>
      <label for="ap-expires">Expires on (optional)</label><input id="ap-expires" type="date">
      <button type="submit">Make an app password</button>
    </form>
    <p id="ap-new" class="secret" hidden></p>
    <form id="profile-form" hidden>
      <label for="profile-name">Device profile for Apple devices: name of the app password inside</label><input id="profile-name" maxlength="255" value="iPhone">
      <button type="submit">Download profile</button>
    </form>
  </section>
  <section aria-labelledby="fw-h"><h2 id="fw-h">Forwarding</h2>
    <form id="fw-form">
      <label for="fw-to">Forward all mail to (empty: no forwarding)</label><input id="fw-to" type="email">
      <div class="check"><input id="fw-keep" type="checkbox" checked><label for="fw-keep">Keep a copy here</label></div>
      <button type="submit">Save forwarding</button>
    </form>
  </section>
  <section aria-labelledby="vac-h"><h2 id="vac-h">Out-of-office reply</h2>
    <form id="vac-form">
      <div class="check"><input id="vac-on" type="checkbox"><label for="vac-on">Send an automatic reply</label></div>
      <label for="vac-subject">Subject</label><input id="vac-subject" maxlength="200">
      <label for="vac-body">Message</label><textarea id="vac-body" rows="5" maxlength="4000"></textarea>
      <label for="vac-start">From (optional)</label><input id="vac-start" type="date">
      <label for="vac-end">Until (optional)</label><input id="vac-end" type="date">
      <label for="vac-days">Reply to the same sender at most every … days</label><input id="vac-days" type="number" min="1" max="30" value="7">
      <button type="submit">Save reply</button>
    </form>
  </section>
  <section aria-labelledby="totp-h"><h2 id="totp-h">Authenticator app</h2>
    <p id="totp-state"></p>
    <button type="button" id="totp-start">Turn on</button>
    <div id="totp-enrol" hidden>
      <p>Add this key to your authenticator app, then enter the code it shows.</p>
      <p class="secret" id="totp-secret"></p>
    </div>
    <form id="totp-form" hidden>
      <label for="totp-code">Code from the app</label><input id="totp-code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]{6}" maxlength="6" required>
      <button type="submit" id="totp-submit">Confirm</button>
    </form>
  </section>
</div>
</main>
</body>
</html>
`;

const CSS = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,sans-serif;color:#1a1a1a;background:#fff}
header{display:flex;justify-content:space-between;align-items:center;padding:.5rem 1rem;background:#0b3d63;color:#fff}
.brand{margin:0;font-weight:600}
main{max-width:40rem;margin:0 auto;padding:1rem}
section{margin:1.5rem 0;padding-top:.5rem;border-top:1px solid #ccc}
label{display:block;margin-top:.75rem}
input,textarea{width:100%;padding:.5rem;font:inherit;border:1px solid #555;border-radius:4px}
.check{display:flex;gap:.5rem;align-items:center;margin-top:.75rem}.check input{width:auto}.check label{margin:0}
button{margin-top:.75rem;padding:.5rem 1rem;font:inherit;border:0;border-radius:4px;background:#0b3d63;color:#fff;cursor:pointer}
header button{margin:0;background:#fff;color:#0b3d63}
li button{margin:0 0 0 .5rem;padding:.25rem .5rem;background:#8a1c1c}
:focus-visible{outline:3px solid #d97706;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;color:#0b3d63;padding:.5rem}
.secret{font-family:ui-monospace,monospace;word-break:break-all;background:#f3f3f3;padding:.5rem}
#error{color:#8a1c1c}#error:empty,#status:empty{display:none}
.hint{color:#444}
`;

const JS = `const $ = (id) => document.getElementById(id);
let csrf = '';
const say = (t) => { $('status').textContent = t; $('error').textContent = ''; };
const fail = (t) => { $('error').textContent = t; $('status').textContent = ''; };
async function api(method, path, body) {
  const headers = { accept: 'application/json' };
  if (method !== 'GET') headers['x-portal-csrf'] = csrf;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch('/portal/api/' + path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 204) return null;
  const type = res.headers.get('content-type') || '';
  const data = type.includes('json') ? await res.json() : await res.blob();
  if (!res.ok) {
    if (res.status === 401 && path !== 'session') show(false);
    throw new Error((data && data.detail) || 'The request failed (' + res.status + ')');
  }
  return data;
}
const guard = (fn) => async (ev) => { ev.preventDefault(); try { await fn(ev); } catch (e) { fail(e.message); } };
function show(signedIn) {
  $('signin').hidden = signedIn; $('home').hidden = !signedIn; $('signout').hidden = !signedIn;
  (signedIn ? $('home-h') : $('si-address')).focus();
}
const mib = (b) => (b / 1048576).toFixed(1) + ' MiB';
async function load() {
  const me = await api('GET', 'me');
  $('home-h').textContent = me.address;
  $('profile-form').hidden = !me.profiles;
  $('totp-state').textContent = me.totp_enabled ? 'On: signing in here asks for a code.' : 'Off.';
  $('totp-start').textContent = me.totp_enabled ? 'Turn off' : 'Turn on';
  $('totp-start').dataset.on = me.totp_enabled ? '1' : '';
  api('GET', 'usage').then((u) => { $('usage').textContent = mib(u.storage_bytes) + ' used' + (u.storage_limit_bytes ? ' of ' + mib(u.storage_limit_bytes) : ' (no limit)') + ', ' + u.messages + ' messages.'; }, () => { $('usage').textContent = 'Usage is not available right now.'; });
  await loadAppPasswords();
  const fw = await api('GET', 'forwarding');
  $('fw-to').value = fw.to || ''; $('fw-keep').checked = fw.keep_copy;
  const v = await api('GET', 'vacation');
  $('vac-on').checked = v.enabled; $('vac-subject').value = v.subject; $('vac-body').value = v.body;
  $('vac-start').value = v.start || ''; $('vac-end').value = v.end || ''; $('vac-days').value = String(v.days);
}
async function loadAppPasswords() {
  const list = $('ap-list'); list.replaceChildren();
  for (const p of await api('GET', 'app-passwords')) {
    const li = document.createElement('li');
    li.textContent = p.name + (p.expires_at ? ' (until ' + p.expires_at.slice(0, 10) + ')' : '') + (p.active ? '' : ' (expired)');
    const b = document.createElement('button'); b.type = 'button'; b.textContent = 'Revoke';
    b.setAttribute('aria-label', 'Revoke ' + p.name);
    b.addEventListener('click', guard(async () => { await api('DELETE', 'app-passwords/' + encodeURIComponent(p.id)); await loadAppPasswords(); $('ap-name').focus(); say('Revoked ' + p.name + '.'); }));
    li.append(b); list.append(li);
  }
}
$('signin-form').addEventListener('submit', guard(async () => {
  const body = { address: $('si-address').value, password: $('si-password').value };
  if ($('si-code').value) body.code = $('si-code').value;
  const s = await api('POST', 'session', body);
  csrf = s.csrf; $('si-password').value = ''; $('si-code').value = '';
  say('Signed in.'); show(true); await load();
}));
$('signout').addEventListener('click', guard(async () => { await api('DELETE', 'session'); csrf = ''; say('Signed out.'); show(false); }));
$('pw-form').addEventListener('submit', guard(async () => {
  await api('POST', 'password', { current_password: $('pw-current').value, new_password: $('pw-new').value });
  $('pw-current').value = ''; $('pw-new').value = ''; say('Password changed. Mail clients that used the old one must sign in again.');
}));
$('ap-form').addEventListener('submit', guard(async () => {
  const body = { name: $('ap-name').value };
  if ($('ap-expires').value) body.expires_at = $('ap-expires').value + 'T23:59:59Z';
  const p = await api('POST', 'app-passwords', body);
  $('ap-new').hidden = false; $('ap-new').textContent = 'New app password for ' + p.name + ': ' + p.password + ' (copy it now: it is not shown again)';
  $('ap-name').value = ''; await loadAppPasswords(); say('App password made.');
}));
$('profile-form').addEventListener('submit', guard(async () => {
  const blob = await api('POST', 'device-profile', { app_password_name: $('profile-name').value });
  const a = document.createElement('a'); a.href = URL.createObjectURL(blob); a.download = 'mail.mobileconfig'; a.click();
  await loadAppPasswords(); say('Profile downloaded; it holds a new app password.');
}));
$('fw-form').addEventListener('submit', guard(async () => {
  const to = $('fw-to').value.trim();
  await api('PUT', 'forwarding', { to: to || null, keep_copy: $('fw-keep').checked });
  say(to ? 'Forwarding saved.' : 'Forwarding off.');
}));
$('vac-form').addEventListener('submit', guard(async () => {
  await api('PUT', 'vacation', { enabled: $('vac-on').checked, subject: $('vac-subject').value, body: $('vac-body').value,
    start: $('vac-start').value || null, end: $('vac-end').value || null, days: Number($('vac-days').value) });
  say($('vac-on').checked ? 'Out-of-office reply saved.' : 'Out-of-office reply off.');
}));
$('totp-start').addEventListener('click', guard(async () => {
  $('totp-form').hidden = false; $('totp-submit').textContent = 'Confirm';
  if ($('totp-start').dataset.on) { $('totp-enrol').hidden = true; $('totp-form').dataset.mode = 'disable'; $('totp-code').focus(); return; }
  const t = await api('POST', 'totp');
  $('totp-secret').textContent = t.secret; $('totp-enrol').hidden = false; $('totp-form').dataset.mode = 'confirm'; $('totp-code').focus();
}));
$('totp-form').addEventListener('submit', guard(async () => {
  await api('POST', $('totp-form').dataset.mode === 'disable' ? 'totp/disable' : 'totp/confirm', { code: $('totp-code').value });
  $('totp-code').value = ''; $('totp-form').hidden = true; $('totp-enrol').hidden = true; await load(); say('Authenticator setting saved.');
}));
api('GET', 'session').then(async (s) => { csrf = s.csrf; show(true); await load(); }, () => { $('signin').hidden = false; });
`;

function send(reply: FastifyReply, type: string, body: string) {
  return reply
    .header('content-type', type)
    .header('content-security-policy', PORTAL_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cache-control', 'no-cache')
    .send(body);
}

/** GET /portal/ and its two files. */
export function registerPortalPage(app: FastifyInstance): void {
  app.get('/portal', { schema: { hide: true } }, (_req, reply) => reply.redirect('/portal/', 302));
  app.get('/portal/', { schema: { hide: true } }, (_req, reply) => send(reply, 'text/html; charset=utf-8', HTML));
  app.get('/portal/portal.js', { schema: { hide: true } }, (_req, reply) => send(reply, 'text/javascript; charset=utf-8', JS));
  app.get('/portal/portal.css', { schema: { hide: true } }, (_req, reply) => send(reply, 'text/css; charset=utf-8', CSS));
}
