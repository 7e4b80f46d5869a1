import { useState } from 'preact/hooks';
import { api } from '../api';
import { described, ErrorNote, FieldMessage, formErrors, JobProgress, Page, useAction, useJob, useLoad } from '../ui';

type Settings = { update_channel: 'stable' | 'nightly'; update_channel_source: 'stored' | 'default'; auto_updates: boolean; update_feeds: { stable: string; nightly: string } };
type Check = { channel: string; current_version: string; available_version: string; update_available: boolean; downgrade: boolean; downgrade_allowed: boolean; published_at: string };

/**
 * Settings → General: the update channel (stored through PATCH /admin/settings),
 * auto-updates, a check of the channel, and the update itself as a job whose
 * progress is polled from /admin/jobs/{id}. Applying asks for a fresh second
 * factor (the API marks it so).
 */
export function General() {
  const settings = useLoad(() => api<Settings>('GET', '/admin/settings'), []);
  const save = useAction();
  const check = useAction();
  const apply = useAction();
  const [result, setResult] = useState<Check | null>(null);
  const [jobId, setJobId] = useState<string | null>(null);

  const job = useJob(jobId);

  const s = settings.data;
  // A refused change shows at the choice it names (the channel, or auto-updates), else below the fieldset.
  const errors = formErrors(save.error, ['update_channel', 'auto_updates']);
  const setChannel = (channel: string) =>
    void save.run(async () => {
      await api('PATCH', '/admin/settings', { update_channel: channel });
      setResult(null);
      settings.reload();
    });
  const setAuto = (on: boolean) =>
    void save.run(async () => {
      await api('PATCH', '/admin/settings', { auto_updates: on });
      settings.reload();
    });

  return (
    <Page title="Settings → General">
      {!s ? (settings.error ? <ErrorNote error={settings.error} /> : <p role="status">Loading…</p>) : (
        <>
          <fieldset>
            <legend>Update channel</legend>
            {(['stable', 'nightly'] as const).map((c) => (
              <label key={c}>
                <input type="radio" name="update_channel" value={c} checked={s.update_channel === c} disabled={save.busy} {...described('update-channel', errors.at('update_channel'))} onChange={() => setChannel(c)} /> {c}
              </label>
            ))}
            <FieldMessage id="update-channel" message={errors.at('update_channel')} />
            <p><small>{s.update_channel_source === 'stored' ? 'Chosen here.' : 'From MAILSVC_UPDATE_CHANNEL (not changed here yet).'} Feed: {s.update_feeds[s.update_channel]}</small></p>
            <label>
              <input type="checkbox" name="auto_updates" checked={s.auto_updates} disabled={save.busy} {...described('auto-updates', errors.at('auto_updates'))} onChange={(e) => setAuto((e.currentTarget as HTMLInputElement).checked)} /> Install new releases of this channel automatically
            </label>
            <FieldMessage id="auto-updates" message={errors.at('auto_updates')} />
            <ErrorNote errors={errors} />
          </fieldset>
          <section aria-label="Update">
            <button type="button" disabled={check.busy} onClick={() => void check.run(async () => setResult(await api<Check>('POST', '/admin/settings/check-update')))}>Check for an update</button>
            <ErrorNote error={check.error} />
            {result && (
              <p role="status">
                Running {result.current_version}; the {result.channel} channel offers {result.available_version}
                {result.update_available ? ' (newer).' : result.downgrade ? ` (older${result.downgrade_allowed ? '; a downgrade is possible' : '; a downgrade is not possible'}).` : ' (up to date).'}
              </p>
            )}
            {result?.update_available && (
              <button type="button" disabled={apply.busy || (job !== null && job.state !== 'failed' && job.state !== 'succeeded')}
                onClick={() => void apply.run(async () => setJobId((await api<{ job_id: string }>('POST', '/admin/settings/apply-update')).job_id))}>
                Update to {result.available_version}
              </button>
            )}
            <ErrorNote error={apply.error} />
            <JobProgress job={job} label="Update progress" />
          </section>
        </>
      )}
    </Page>
  );
}
