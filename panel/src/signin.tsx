import { useEffect, useRef, useState } from 'preact/hooks';
import { startAuthentication } from '@simplewebauthn/browser';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/browser';
import { ApiError, session } from './api';
import type { Session } from './api';
import { ErrorNote, Field, formErrors, useAction } from './ui';

type Challenge = { mfa_required: true; challenge_id: string; methods: ('totp' | 'sms' | 'recovery' | 'webauthn')[]; expires_in: number };
type Method = Challenge['methods'][number];
type PasskeyOptions = { challenge_id: string; options: PublicKeyCredentialRequestOptionsJSON };

const METHOD_LABEL: Record<Method, string> = { webauthn: 'Passkey', totp: 'Authenticator app (TOTP)', sms: 'SMS code', recovery: 'Recovery code' };

/** Asks the browser for the passkey; what it says when it does not finish, in words. */
async function assertion(options: PublicKeyCredentialRequestOptionsJSON) {
  try {
    return await startAuthentication({ optionsJSON: options });
  } catch (e) {
    const name = (e as { name?: string }).name;
    throw new ApiError(0, name === 'NotAllowedError' || name === 'AbortError' ? 'The passkey request was cancelled or timed out: try again' : e instanceof Error ? e.message : String(e));
  }
}

/**
 * Password, then the challenge /auth/login answers (a passkey, TOTP, "send
 * SMS" then the code, or a recovery code), then a session; or, when turned on,
 * a passkey alone. Used for the first sign-in and to confirm a destructive
 * action with a fresh second factor.
 */
export function SignIn({ onDone, confirming = false }: { onDone: (s: Session) => void; confirming?: boolean }) {
  const [username, setUsername] = useState('admin');
  const [password, setPassword] = useState('');
  const [challenge, setChallenge] = useState<Challenge | null>(null);
  const [method, setMethod] = useState<Method>('totp');
  const [code, setCode] = useState('');
  const [smsHint, setSmsHint] = useState<string | null>(null);
  const [passwordless, setPasswordless] = useState(false);
  const action = useAction();
  const second = useRef<HTMLFormElement>(null);
  // The password form is gone: the focus goes to the code, or to the passkey button (not lost to the page), so the keyboard carries on.
  useEffect(() => {
    if (challenge) second.current?.querySelector<HTMLElement>('input[name=code], button[type=submit]')?.focus();
  }, [challenge]);
  useEffect(() => {
    session<{ passwordless: boolean }>('GET', '/options').then((o) => setPasswordless(o.passwordless), () => setPasswordless(false));
  }, []);

  const login = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const answer = await session<Session | Challenge>('POST', '/login', { username, password });
      if ('challenge_id' in answer) {
        setChallenge(answer);
        // A passkey first when there is one: it is the factor that cannot be phished.
        setMethod(answer.methods.includes('webauthn') ? 'webauthn' : answer.methods[0] ?? 'totp');
        setCode('');
      } else onDone(answer);
    });
  };
  const sendSms = () =>
    void action.run(async () => {
      const sent = await session<{ phone_hint: string }>('POST', '/sms', { challenge_id: challenge?.challenge_id });
      setSmsHint(sent.phone_hint);
    });
  const verify = (e: Event) => {
    e.preventDefault();
    if (method === 'webauthn') {
      void action.run(async () => {
        const started = await session<PasskeyOptions>('POST', '/webauthn/options', { challenge_id: challenge?.challenge_id });
        const credential = await assertion(started.options);
        onDone(await session<Session>('POST', '/webauthn/verify', { challenge_id: started.challenge_id, credential }));
      });
      return;
    }
    void action.run(async () => onDone(await session<Session>('POST', '/verify', { challenge_id: challenge?.challenge_id, method, code: code.trim() })));
  };
  const passkeyAlone = () =>
    void action.run(async () => {
      const started = await session<PasskeyOptions>('POST', '/passkey/options');
      const credential = await assertion(started.options);
      onDone(await session<Session>('POST', '/passkey/verify', { challenge_id: started.challenge_id, credential }));
    });

  if (!challenge) {
    const errors = formErrors(action.error, ['username', 'password'], { primary: 'password' });
    return (
      <form onSubmit={login} aria-label={confirming ? 'Confirm your sign-in' : 'Sign in'}>
        {confirming && <p>This action changes something that is hard to undo: sign in again with your second factor to confirm it.</p>}
        <Field label="Username" name="username" value={username} onInput={setUsername} errors={errors} autocomplete="username" required />
        <Field label="Password" name="password" type="password" value={password} onInput={setPassword} errors={errors} autocomplete="current-password" required />
        <button type="submit" disabled={action.busy}>{confirming ? 'Continue' : 'Sign in'}</button>
        {passwordless && (
          <p>
            <button type="button" onClick={passkeyAlone} disabled={action.busy}>{confirming ? 'Confirm with a passkey' : 'Sign in with a passkey'}</button>
          </p>
        )}
      </form>
    );
  }
  // challenge_id and method are the form's own: what is wrong with them shows with the code.
  const errors = formErrors(action.error, ['code'], { primary: 'code' });
  return (
    <form onSubmit={verify} aria-label="Second factor" ref={second}>
      <fieldset>
        <legend>Second factor</legend>
        {challenge.methods.map((m) => (
          <label class="choice" key={m}>
            <input type="radio" name="method" value={m} checked={method === m} onChange={() => setMethod(m)} /> {METHOD_LABEL[m]}
          </label>
        ))}
      </fieldset>
      {method === 'sms' && (
        <p>
          <button type="button" onClick={sendSms} disabled={action.busy}>Send SMS</button>
          {smsHint && <span role="status"> Sent to the phone ending in {smsHint}.</span>}
        </p>
      )}
      {method === 'webauthn' ? (
        <>
          <p>Your browser asks your authenticator for the passkey.</p>
          <ErrorNote error={action.error} />
        </>
      ) : (
        <Field
          label={method === 'recovery' ? 'Recovery code' : 'Code'}
          name="code"
          value={code}
          onInput={setCode}
          errors={errors}
          autocomplete="one-time-code"
          inputMode={method === 'recovery' ? 'text' : 'numeric'}
          required
        />
      )}
      <button type="submit" disabled={action.busy}>{method === 'webauthn' ? 'Use passkey' : 'Verify'}</button>
      <button type="button" class="link" onClick={() => (setChallenge(null), action.clear())}>Start over</button>
    </form>
  );
}
