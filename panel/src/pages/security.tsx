import { useState } from 'preact/hooks';
import { renderSVG } from 'uqr';
import { api } from '../api';
import { ErrorNote, Field, formErrors, Page, ShownOnce, useAction, useLoad, when } from '../ui';
import { SmsSettings } from './sms';
import { Passkeys } from './passkeys';

type MfaStatus = { passkeys: number; totp_enabled: boolean; totp_pending: boolean; totp_confirmed_at: string | null; sms_enabled: boolean; sms_phone: string | null; sms_provider: string | null; methods: string[]; mfa_required: boolean; recovery_codes_remaining: number };
type Enrollment = { secret: string; provisioning_uri: string; issuer: string };

/** The QR code is drawn here, in the browser: the secret never goes to another service. */
const qrImage = (uri: string): string => `data:image/svg+xml;base64,${btoa(renderSVG(uri, { border: 2 }))}`;

export function Security() {
  const status = useLoad(() => api<MfaStatus>('GET', '/auth/mfa'), []);
  const [enrollment, setEnrollment] = useState<Enrollment | null>(null);
  const [code, setCode] = useState('');
  const [recovery, setRecovery] = useState<string[] | null>(null);
  const totp = useAction();
  const s = status.data;

  const enroll = () => void totp.run(async () => (setRecovery(null), setEnrollment(await api<Enrollment>('POST', '/auth/mfa/totp/enroll'))));
  const confirmTotp = (e: Event) => {
    e.preventDefault();
    void totp.run(async () => {
      const done = await api<MfaStatus & { recovery_codes?: string[] }>('POST', '/auth/mfa/totp/confirm', { code: code.trim() });
      setEnrollment(null);
      setCode('');
      setRecovery(done.recovery_codes ?? []);
    });
  };
  const disable = () => confirm('Turn TOTP off and erase its secret?') && void totp.run(async () => (await api('DELETE', '/auth/mfa/totp'), status.reload()));

  return (
    <Page title="Security">
      <ErrorNote error={status.error} />
      {s && (
        <div class="card">
          <h2>Second factors</h2>
          <dl>
            <dt>TOTP</dt><dd data-testid="totp-state">{s.totp_enabled ? `enabled since ${when(s.totp_confirmed_at)}` : s.totp_pending ? 'enrolment pending' : 'off'}</dd>
            <dt>SMS</dt><dd>{s.sms_enabled ? `on, ${s.sms_phone ?? ''} via ${s.sms_provider ?? ''}` : 'off'}</dd>
            <dt>Passkeys</dt><dd data-testid="passkey-count">{s.passkeys}</dd>
            <dt>Required by policy</dt><dd>{s.mfa_required ? 'yes' : 'no'}</dd>
            <dt>Recovery codes left</dt><dd>{s.recovery_codes_remaining}</dd>
          </dl>
        </div>
      )}
      <h2>Authenticator app (TOTP)</h2>
      {recovery && (
        <div>
          <p class="ok" role="status">TOTP is on. Sessions signed in without it have ended: you will sign in again with a code.</p>
          {recovery.length > 0 && <ShownOnce label="Recovery codes" value={recovery.join(' ')} />}
          <button type="button" onClick={() => (setRecovery(null), status.reload())}>I have saved them</button>
        </div>
      )}
      {!recovery && !enrollment && s && !s.totp_enabled && <button type="button" onClick={enroll} disabled={totp.busy}>Set up TOTP</button>}
      {!recovery && s?.totp_enabled && <button type="button" class="danger" onClick={disable} disabled={totp.busy}>Disable TOTP</button>}
      {enrollment && (
        <form onSubmit={confirmTotp} aria-label="Confirm TOTP">
          <p>Scan this code with your authenticator app, or type the secret. Then enter the code it shows.</p>
          <img class="qr" src={qrImage(enrollment.provisioning_uri)} alt="QR code of the TOTP secret for your authenticator app" />
          <ShownOnce label="TOTP secret" value={enrollment.secret} />
          <Field label="Code from the app" name="code" value={code} onInput={setCode} errors={formErrors(totp.error, ['code'], { primary: 'code' })} inputMode="numeric" autocomplete="one-time-code" required />
          <button type="submit" disabled={totp.busy}>Confirm</button>
        </form>
      )}
      {!enrollment && <ErrorNote error={totp.error} />}
      <SmsSettings status={s} onChanged={status.reload} />
      <Passkeys onChanged={status.reload} />
    </Page>
  );
}
