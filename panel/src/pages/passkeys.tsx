import { useEffect, useState } from 'preact/hooks';
import { startRegistration } from '@simplewebauthn/browser';
import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/browser';
import { api, ApiError } from '../api';
import { PageDialog } from '../dialog';
import { described, ErrorNote, Field, FieldMessage, formErrors, useAction, useLoad, when } from '../ui';

type Passkey = { id: string; name: string; created_at: string; last_used_at: string | null; transports: string[]; backed_up: boolean; device_type: 'single_device' | 'multi_device' };
type Policy = { passwordless: boolean; required: 'no' | 'panel' | 'all'; configured: boolean; origin: string | null; rp_id: string | null; user_verification: string };
type Open = { kind: 'add' } | { kind: 'rename'; key: Passkey } | { kind: 'remove'; key: Passkey } | null;

const TRANSPORT: Record<string, string> = { internal: 'this device', usb: 'USB', nfc: 'NFC', ble: 'Bluetooth', hybrid: 'phone (hybrid)', cable: 'phone (hybrid)', 'smart-card': 'smart card' };

/** The passkeys of the Security page: list, add (a fresh second factor first), rename, remove, and the passkey settings. */
export function Passkeys({ onChanged }: { onChanged: () => void }) {
  const keys = useLoad(() => api<{ items: Passkey[] }>('GET', '/auth/mfa/passkeys'), []);
  const policy = useLoad(() => api<Policy>('GET', '/auth/mfa/passkeys/policy'), []);
  const [open, setOpen] = useState<Open>(null);
  const changed = () => (setOpen(null), keys.reload(), policy.reload(), onChanged());
  const p = policy.data;
  return (
    <>
      <h2>Passkeys</h2>
      <p>A passkey cannot be phished: your browser gives it only to this panel's address.</p>
      <ErrorNote error={keys.error ?? policy.error} />
      {p && !p.configured && <p class="error" role="alert">Passkeys are off: the service needs MAILSVC_PANEL_ORIGIN, the address of this panel.</p>}
      {keys.data && keys.data.items.length === 0 && <p>No passkey yet.</p>}
      {keys.data && keys.data.items.length > 0 && (
        <table aria-label="Passkeys">
          <thead><tr><th scope="col">Name</th><th scope="col">Added</th><th scope="col">Last used</th><th scope="col">Connects by</th><th scope="col">Kind</th><th scope="col">Actions</th></tr></thead>
          <tbody>
            {keys.data.items.map((k) => (
              <tr key={k.id} data-testid="passkey-row">
                <td>{k.name}</td>
                <td>{when(k.created_at)}</td>
                <td>{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
                <td>{k.transports.length > 0 ? k.transports.map((t) => TRANSPORT[t] ?? t).join(', ') : '—'}</td>
                <td>{k.backed_up ? 'synced (backed up)' : k.device_type === 'multi_device' ? 'may be synced, not yet backed up' : 'bound to this authenticator'}</td>
                <td>
                  <button type="button" onClick={() => setOpen({ kind: 'rename', key: k })} aria-label={`Rename ${k.name}`}>Rename</button>
                  <button type="button" class="danger" onClick={() => setOpen({ kind: 'remove', key: k })} aria-label={`Remove ${k.name}`}>Remove</button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {p?.configured && <button type="button" onClick={() => setOpen({ kind: 'add' })}>Add a passkey</button>}
      {p && keys.data && <PolicyForm policy={p} haveKeys={keys.data.items.length > 0} onSaved={policy.reload} />}
      {open?.kind === 'add' && <AddDialog onDone={changed} onCancel={() => setOpen(null)} />}
      {open?.kind === 'rename' && <RenameDialog passkey={open.key} onDone={changed} onCancel={() => setOpen(null)} />}
      {open?.kind === 'remove' && <RemoveDialog passkey={open.key} onDone={changed} onCancel={() => setOpen(null)} />}
    </>
  );
}

/** What the browser said when the ceremony did not finish, in words. */
export function ceremonyError(e: unknown): ApiError {
  const name = (e as { name?: string }).name;
  if (name === 'NotAllowedError' || name === 'AbortError') return new ApiError(0, 'The passkey request was cancelled or timed out: try again');
  if (name === 'InvalidStateError') return new ApiError(0, 'This authenticator holds a passkey for this panel already');
  return new ApiError(0, e instanceof Error ? e.message : String(e));
}

function AddDialog({ onDone, onCancel }: { onDone: () => void; onCancel: () => void }) {
  const [name, setName] = useState('');
  const action = useAction();
  const add = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const started = await api<{ registration_id: string; options: PublicKeyCredentialCreationOptionsJSON }>('POST', '/auth/mfa/passkeys/options');
      let credential;
      try {
        credential = await startRegistration({ optionsJSON: started.options });
      } catch (err) {
        throw ceremonyError(err);
      }
      await api('POST', '/auth/mfa/passkeys', { registration_id: started.registration_id, name: name.trim(), credential });
      onDone();
    });
  };
  return (
    <PageDialog labelledBy="passkey-add-title" onCancel={onCancel}>
      <h2 id="passkey-add-title">Add a passkey</h2>
      <form onSubmit={add} aria-label="Add a passkey">
        <Field label="Name" name="name" value={name} onInput={setName} errors={formErrors(action.error, ['name'], { primary: 'name' })} hint="So you can tell your passkeys apart, e.g. “laptop” or “security key”" required />
        <p>Your browser then asks your authenticator (this device, a security key or your phone) to make the passkey.</p>
        <button type="submit" disabled={action.busy}>Create passkey</button>
        <button type="button" class="link" onClick={onCancel}>Cancel</button>
      </form>
    </PageDialog>
  );
}

function RenameDialog({ passkey, onDone, onCancel }: { passkey: Passkey; onDone: () => void; onCancel: () => void }) {
  const [name, setName] = useState(passkey.name);
  const action = useAction();
  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => (await api('PATCH', `/auth/mfa/passkeys/${encodeURIComponent(passkey.id)}`, { name: name.trim() }), onDone()));
  };
  return (
    <PageDialog labelledBy="passkey-rename-title" onCancel={onCancel}>
      <h2 id="passkey-rename-title">Rename passkey</h2>
      <form onSubmit={save} aria-label="Rename passkey">
        <Field label="Name" name="name" value={name} onInput={setName} errors={formErrors(action.error, ['name'], { primary: 'name' })} required />
        <button type="submit" disabled={action.busy}>Save</button>
        <button type="button" class="link" onClick={onCancel}>Cancel</button>
      </form>
    </PageDialog>
  );
}

function RemoveDialog({ passkey, onDone, onCancel }: { passkey: Passkey; onDone: () => void; onCancel: () => void }) {
  const action = useAction();
  const remove = () => void action.run(async () => (await api('DELETE', `/auth/mfa/passkeys/${encodeURIComponent(passkey.id)}`), onDone()));
  return (
    <PageDialog labelledBy="passkey-remove-title" onCancel={onCancel}>
      <h2 id="passkey-remove-title">Remove passkey “{passkey.name}”?</h2>
      <p>It can no longer sign in. The passkey stays on the authenticator: remove it there too.</p>
      <ErrorNote error={action.error} />
      <button type="button" class="danger" onClick={remove} disabled={action.busy}>Remove</button>
      <button type="button" class="link" onClick={onCancel}>Cancel</button>
    </PageDialog>
  );
}

function PolicyForm({ policy, haveKeys, onSaved }: { policy: Policy; haveKeys: boolean; onSaved: () => void }) {
  const [passwordless, setPasswordless] = useState(policy.passwordless);
  const [required, setRequired] = useState(policy.required);
  const action = useAction();
  useEffect(() => (setPasswordless(policy.passwordless), setRequired(policy.required)), [policy]);
  const errors = formErrors(action.error, ['passwordless', 'required'], { primary: 'required' });
  const save = (e: Event) => {
    e.preventDefault();
    void action.run(async () => (await api('PATCH', '/auth/mfa/passkeys/policy', { passwordless, required }), onSaved()));
  };
  return (
    <form onSubmit={save} aria-label="Passkey settings">
      <div class="field">
        <label class="choice"><input type="checkbox" id="passkey-passwordless" name="passwordless" checked={passwordless} disabled={!haveKeys && !passwordless} {...described('passkey-passwordless', errors.at('passwordless'))} onChange={(e) => setPasswordless((e.currentTarget as HTMLInputElement).checked)} /> Sign in with a passkey alone (no password; the authenticator checks your PIN or fingerprint)</label>
        <FieldMessage id="passkey-passwordless" message={errors.at('passwordless')} />
      </div>
      <div class="field">
        <label for="passkey-required">Require a passkey</label>
        <select id="passkey-required" name="required" value={required} {...described('passkey-required', errors.at('required'))} onChange={(e) => setRequired((e.currentTarget as HTMLSelectElement).value as Policy['required'])}>
          <option value="no">No: codes (TOTP, SMS, recovery) also sign in</option>
          <option value="panel">In the panel: codes only for API sign-in</option>
          <option value="all">Everywhere: panel and API</option>
        </select>
        <FieldMessage id="passkey-required" message={errors.at('required')} />
      </div>
      <button type="submit" disabled={action.busy}>Save passkey settings</button>
    </form>
  );
}
