import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { described, ErrorNote, Field, FieldMessage, formErrors, useAction, useLoad } from '../ui';

type Provider = { code: string; label: string; enabled: boolean; base_url: string; client_id: string | null; has_client_secret: boolean; has_api_key: boolean; send_path: string; from_sender: string | null; route: string };
type Status = { sms_enabled: boolean; sms_phone: string | null; sms_provider: string | null } | undefined;

/** The phone and provider of SMS OTP, and the providers' settings. Secrets are write-only: never shown, only replaced or cleared. */
export function SmsSettings({ status, onChanged }: { status: Status; onChanged: () => void }) {
  const [phone, setPhone] = useState('');
  const [provider, setProvider] = useState('');
  const [enabled, setEnabled] = useState(false);
  const sms = useAction();
  useEffect(() => {
    setPhone(status?.sms_phone ?? '');
    setProvider(status?.sms_provider ?? 'provider_a');
    setEnabled(status?.sms_enabled ?? false);
  }, [status]);
  const providers = useLoad(() => api<Provider[]>('GET', '/auth/mfa/providers'), []);

  const errors = formErrors(sms.error, ['phone', 'provider', 'enabled'], { primary: 'phone' });
  const save = (e: Event) => {
    e.preventDefault();
    void sms.run(async () => (await api('PATCH', '/auth/mfa/sms', { phone: phone.trim(), provider, enabled }), onChanged()));
  };
  return (
    <>
      <h2>SMS codes</h2>
      <form onSubmit={save} aria-label="SMS second factor">
        <Field label="Phone (international, e.g. +49 30 1234567)" name="phone" value={phone} onInput={setPhone} errors={errors} inputMode="tel" />
        <div class="field">
          <label for="sms-provider">Provider</label>
          <select id="sms-provider" name="provider" value={provider} {...described('sms-provider', errors.at('provider'))} onChange={(e) => setProvider((e.currentTarget as HTMLSelectElement).value)}>
            {(providers.data ?? []).map((p) => <option key={p.code} value={p.code}>{p.label}</option>)}
          </select>
          <FieldMessage id="sms-provider" message={errors.at('provider')} />
        </div>
        <div class="field">
          <label class="choice"><input type="checkbox" id="sms-enabled" name="enabled" checked={enabled} {...described('sms-enabled', errors.at('enabled'))} onChange={(e) => setEnabled((e.currentTarget as HTMLInputElement).checked)} /> Use SMS codes at sign-in</label>
          <FieldMessage id="sms-enabled" message={errors.at('enabled')} />
        </div>
        <button type="submit" disabled={sms.busy}>Save SMS settings</button>
      </form>
      <ErrorNote error={providers.error} />
      {(providers.data ?? []).map((p) => <ProviderForm key={p.code} provider={p} onSaved={providers.reload} />)}
    </>
  );
}

function ProviderForm({ provider, onSaved }: { provider: Provider; onSaved: () => void }) {
  const [f, setF] = useState({ base_url: provider.base_url, client_id: provider.client_id ?? '', send_path: provider.send_path, from_sender: provider.from_sender ?? '', route: provider.route, client_secret: '', api_key: '' });
  const [enabled, setEnabled] = useState(provider.enabled);
  const act = useAction();
  const set = (k: keyof typeof f) => (v: string) => setF({ ...f, [k]: v });
  const save = (e: Event) => {
    e.preventDefault();
    void act.run(async () => {
      const body: Record<string, unknown> = { code: provider.code, enabled, base_url: f.base_url, client_id: f.client_id, send_path: f.send_path, from_sender: f.from_sender, route: f.route };
      // Left empty, a secret stays as stored.
      if (f.client_secret) body.client_secret = f.client_secret;
      if (f.api_key) body.api_key = f.api_key;
      await api('PUT', '/auth/mfa/providers', body);
      setF({ ...f, client_secret: '', api_key: '' });
      onSaved();
    });
  };
  const errors = formErrors(act.error, ['enabled', ...Object.keys(f)], { primary: 'base_url' });
  const idFor = `provider-${provider.code}`;
  const stored = (has: boolean) => (has ? 'stored; type a new one to replace it' : 'not set');
  return (
    <form onSubmit={save} class="card" aria-label={`Provider ${provider.label}`}>
      <h3>{provider.label}</h3>
      <div class="field">
        <label class="choice"><input type="checkbox" name="enabled" checked={enabled} {...described(`${idFor}-enabled`, errors.at('enabled'))} onChange={(e) => setEnabled((e.currentTarget as HTMLInputElement).checked)} /> Enabled</label>
        <FieldMessage id={`${idFor}-enabled`} message={errors.at('enabled')} />
      </div>
      <Field label="Base URL" name="base_url" value={f.base_url} onInput={set('base_url')} errors={errors} />
      <Field label="Send path" name="send_path" value={f.send_path} onInput={set('send_path')} errors={errors} />
      <Field label="Client ID" name="client_id" value={f.client_id} onInput={set('client_id')} errors={errors} />
      <Field label="Client secret" name="client_secret" type="password" value={f.client_secret} onInput={set('client_secret')} errors={errors} autocomplete="new-password" hint={stored(provider.has_client_secret)} />
      <Field label="API key" name="api_key" type="password" value={f.api_key} onInput={set('api_key')} errors={errors} autocomplete="new-password" hint={stored(provider.has_api_key)} />
      <Field label="Sender name" name="from_sender" value={f.from_sender} onInput={set('from_sender')} errors={errors} />
      <Field label="Route" name="route" value={f.route} onInput={set('route')} errors={errors} />
      <button type="submit" disabled={act.busy}>Save {provider.label}</button>
    </form>
  );
}
