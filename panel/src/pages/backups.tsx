import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { bytes, ErrorNote, formErrors, JobProgress, Page, useAction, useJob, useLoad, when, useFocusSetting } from '../ui';
import type { FormErrors } from '../ui';
import type { ApiError } from '../api';
import { List, useVersion } from '../list';
import { BACKUP_FIELDS as KEYS } from './backup-fields';
import { bodySchema, SchemaControl } from '../controls';

export type BackupRecord = { id: string; path: string; type: 'full' | 'incremental'; parent: string | null; created_at: string; completed_at: string; size: number; files: number; verified_at: string | null; verify_ok: boolean | null };
export type VerifyReport = { backup: string | null; chain: string[]; verified_at: string; ok: boolean; problems: string[] };
type Settings = Record<string, string | number>;
export type BackupShow = { settings: Settings; sources: Record<string, string>; last_backup: BackupRecord | null; last_verify: VerifyReport | null };


/** Where the settings form shows the API's message: at the key it names as a field, or whose MAILSVC_BACKUP_<KEY> its detail names. */
const settingErrors = (error: ApiError | null): FormErrors =>
  formErrors(error, KEYS.map((k) => k.key), { primary: (e) => KEYS.find(({ key }) => new RegExp(`(MAILSVC_BACKUP_${key}\\b|^${key}:)`).test(e.detail))?.key });

const verifyText = (b: BackupRecord): string => (b.verify_ok === null ? 'not verified' : b.verify_ok ? `verified ${when(b.verified_at)}` : `verify FAILED ${when(b.verified_at)}`);

/** Backups: the last run and verify, a run (full or as the settings say) and a verify with their jobs' progress, the list of chains, the settings. */
export function Backups() {
  const [version, reload] = useVersion();
  const show = useLoad(() => api<BackupShow>('GET', '/admin/backups/settings'), [version]);
  const [full, setFull] = useState(false);
  const [runId, setRunId] = useState<string | null>(null);
  const [verifyId, setVerifyId] = useState<string | null>(null);
  const run = useAction();
  const verify = useAction();
  const [thenVerify, setThenVerify] = useState(true);
  // A backup that ends well is verified at once when asked: one click from "run" to "verified".
  const runJob = useJob<BackupRecord>(runId, (j) => {
    reload();
    if (j.state === 'succeeded' && thenVerify) void verify.run(async () => setVerifyId((await api<{ job_id: string }>('POST', '/admin/backups/verify')).job_id));
  });
  const verifyJob = useJob<VerifyReport>(verifyId, reload);
  const busy = (j: typeof runJob | typeof verifyJob) => j !== null && (j.state === 'queued' || j.state === 'running');
  const s = show.data;

  return (
    <Page title="Backups">
      <ErrorNote error={show.error} />
      <div class="cards">
        <div class="card">
          <h2>Last backup</h2>
          {s && (s.last_backup ? (
            <dl>
              <dt>Backup</dt><dd data-testid="last-backup">{s.last_backup.id}</dd>
              <dt>Type</dt><dd>{s.last_backup.type}</dd>
              <dt>Finished</dt><dd>{when(s.last_backup.completed_at)}</dd>
              <dt>Size</dt><dd>{bytes(s.last_backup.size)}, {s.last_backup.files} mail files</dd>
            </dl>
          ) : <p class="muted">No backup yet.</p>)}
        </div>
        <div class="card">
          <h2>Last verify</h2>
          {s && (s.last_verify ? (
            <>
              <p class={s.last_verify.ok ? 'ok' : 'error'} data-testid="last-verify">{s.last_verify.ok ? 'OK' : 'FAILED'}: {s.last_verify.backup ?? '—'} at {when(s.last_verify.verified_at)}</p>
              {s.last_verify.problems.length > 0 && <ul>{s.last_verify.problems.map((p) => <li key={p}>{p}</li>)}</ul>}
            </>
          ) : <p class="muted">Never verified.</p>)}
        </div>
      </div>

      <h2>Run a backup</h2>
      <fieldset>
        <legend>Kind</legend>
        <label class="choice"><input type="radio" name="backup-kind" checked={!full} onChange={() => setFull(false)} /> As the settings say ({s ? String(s.settings.TYPE) : '…'})</label>
        <label class="choice"><input type="radio" name="backup-kind" checked={full} onChange={() => setFull(true)} /> Full</label>
      </fieldset>
      <label class="switch">
        <input type="checkbox" role="switch" checked={thenVerify} onChange={(e) => setThenVerify((e.currentTarget as HTMLInputElement).checked)} />
        <span class="track" aria-hidden="true" /> Verify it when it is done <span class="switch-state">{thenVerify ? 'on' : 'off'}</span>
      </label>
      <br />
      <button type="button" disabled={run.busy || busy(runJob) || busy(verifyJob)} onClick={() => void run.run(async () => setRunId((await api<{ job_id: string }>('POST', '/admin/backups', full ? { full: true } : {})).job_id))}>
        Run backup now
      </button>
      <button type="button" class="secondary" disabled={verify.busy || busy(runJob) || busy(verifyJob)} onClick={() => void verify.run(async () => setVerifyId((await api<{ job_id: string }>('POST', '/admin/backups/verify')).job_id))}>
        Verify the newest chain
      </button>
      <ErrorNote error={run.error ?? verify.error} />
      <JobProgress job={runJob} label="Backup progress" />
      {runJob?.state === 'succeeded' && runJob.result && <p class="ok" role="status">Backup {runJob.result.id} ({runJob.result.type}) done: {bytes(runJob.result.size)}.</p>}
      <JobProgress job={verifyJob} label="Verify progress" />
      {verifyJob?.state === 'succeeded' && verifyJob.result && (
        <p class={verifyJob.result.ok ? 'ok' : 'error'} role="status" data-testid="verify-result">
          {verifyJob.result.ok ? `The chain ${verifyJob.result.chain.join(' → ')} restores and matches its manifests.` : `Verify found problems: ${verifyJob.result.problems.join('; ')}`}
        </p>
      )}

      <h2>Backups</h2>
      <List<BackupRecord>
        label="Backups"
        path="/admin/backups"
        version={version}
        rowKey={(b) => b.id}
        empty="No backups yet: run the first one above."
        columns={[
          { title: 'Backup', cell: (b) => <span class="break">{b.id}</span> },
          { title: 'Chain', cell: (b) => (b.type === 'full' ? 'full (starts a chain)' : <>incremental of <span class="break">{b.parent}</span></>) },
          { title: 'Finished', cell: (b) => when(b.completed_at) },
          { title: 'Size', cell: (b) => bytes(b.size) },
          { title: 'Mail files', cell: (b) => b.files },
          { title: 'Verify', cell: (b) => <span class={b.verify_ok === false ? 'error' : b.verify_ok ? 'ok' : 'muted'}>{verifyText(b)}</span> },
        ]}
      />
      {s && <BackupSettings settings={s.settings} sources={s.sources} />}
    </Page>
  );
}

/**
 * The settings form, built from the API's own schema of PATCH
 * /admin/backups/settings: each key's control (enum → segmented or select,
 * yes/no → switch, days → number with its unit, OnCalendar → the calendar
 * picker with the next runs, a list → chips), its default and help come from
 * it, and where the value in force comes from from GET's `sources`. A change
 * is stored and takes effect as the answer's next step says.
 */
function BackupSettings({ settings: inForce, sources: inForceSources }: { settings: Settings; sources: Record<string, string> }) {
  const schema = useLoad(() => bodySchema('patch', '/admin/backups/settings'), []);
  const [settings, setSettings] = useState(inForce);
  const [sources, setSources] = useState(inForceSources);
  const initial = () => Object.fromEntries(KEYS.map(({ key }) => [key, String(settings[key] ?? '')]));
  const [draft, setDraft] = useState<Record<string, string>>(initial);
  const [note, setNote] = useState<string | null>(null);
  const save = useAction();
  useEffect(() => setDraft(initial()), [JSON.stringify(settings)]);
  const props = schema.data?.properties ?? {};
  const fields = KEYS.filter(({ key }) => props[key] !== undefined);
  const changed = fields.filter(({ key }) => draft[key] !== String(settings[key] ?? '')).map((k) => k.key);
  const submit = (e: Event) => {
    e.preventDefault();
    setNote(null);
    void save.run(async () => {
      const patch = Object.fromEntries(changed.map((k) => [k, k === 'RETENTION_DAYS' && /^\d+$/.test(draft[k]!.trim()) ? Number(draft[k]!.trim()) : draft[k]!.trim()]));
      const answer = await api<{ settings: Settings; sources: Record<string, string>; changed: string[]; next_step: string }>('PATCH', '/admin/backups/settings', patch);
      setSettings(answer.settings);
      setSources(answer.sources);
      setNote(`Saved ${answer.changed.join(', ') || 'nothing'}; to take effect: ${answer.next_step}`);
    });
  };
  const errors = settingErrors(save.error);
  useFocusSetting('backup-', schema.data !== undefined);
  return (
    <form onSubmit={submit} aria-label="Backup settings">
      <h2>Settings</h2>
      <p class="muted">Remote credentials and the backup encryption key are kept sealed on the server; they are set with <code>mailsvc backup remote-credential</code> and <code>mailsvc backup encryption-key</code> and never shown here.</p>
      <ErrorNote error={schema.error} />
      {!schema.data && !schema.error && <p role="status" class="muted">Loading…</p>}
      {fields.map(({ key, label }) => (
        <SchemaControl key={key} id={`backup-${key}`} label={label} schema={props[key]!} value={draft[key] ?? ''} source={sources[key]} error={errors.at(key)}
          onChange={(v) => setDraft((d) => ({ ...d, [key]: v }))} />
      ))}
      <p class="muted">Set by root only (the environment or the settings file): backups go to <code>{String(settings.LOCAL_DIR)}</code>; mail storage backed up: <code>{String(settings.MAIL_STORAGE)}</code></p>
      <button type="submit" disabled={save.busy || changed.length === 0}>Save {changed.length || ''} change(s)</button>
      <ErrorNote errors={errors} />
      {note && <p class="ok" role="status">{note}</p>}
    </form>
  );
}
