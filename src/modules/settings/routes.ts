import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { JobStartedSchema } from '../jobs/index.js';
import { ApplyUpdateBody, UpdateCheckSchema } from '../updates/index.js';
import type { ApplyUpdateInput, UpdateCheck } from '../updates/index.js';
import { SettingsPatch, SettingsSchema } from './schema.js';
import type { SettingsPatchInput } from './schema.js';
import type { SettingsService } from './settings.service.js';

export type SettingsRouteDeps = {
  service: SettingsService;
  checkUpdate(): Promise<UpdateCheck>;
  startUpdate(input: ApplyUpdateInput): Promise<{ job_id: string }>;
};

/** /admin/settings: run-time settings, the update check and the update job. API-key scope `settings`. */
export function settingsRoutes(app: FastifyInstance, deps: SettingsRouteDeps, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const tags = ['settings'];
  const config = { scope: 'settings' as const };

  r.get('/admin/settings', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'The run-time settings: update channel, auto-updates, feeds',
      description: 'The update channel (stored, else MAILSVC_UPDATE_CHANNEL) and where it came from, whether auto-updates are on, both feed URLs and the running version.',
      response: { 200: SettingsSchema, ...errors(401, 403, 429) },
    },
    handler: () => deps.service.get(),
  });

  r.patch('/admin/settings', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Change the update channel or auto-updates', body: SettingsPatch,
      description: 'Any subset of update_channel (stable or nightly) and auto_updates; stored in the database, where it wins over MAILSVC_UPDATE_CHANNEL and MAILSVC_ENABLE_AUTO_UPDATES. A bad value is 422 and nothing is stored.',
      response: { 200: SettingsSchema, ...errors(400, 401, 403, 413, 422, 429) },
    },
    handler: (req) => deps.service.update(req.body as SettingsPatchInput),
  });

  r.post('/admin/settings/check-update', {
    onRequest: hooks.admin,
    config: { ...config, bodyOptional: true },
    schema: {
      tags, security, summary: "Check the selected channel's signed feed for a newer release",
      description: "Fetches the channel's version.json and its Ed25519 signature through the outbound guard, verifies it with the key the installed release ships, and compares versions. 502 when the signature or the feed is bad, 503 when the feed cannot be reached.",
      response: { 200: UpdateCheckSchema, ...errors(400, 401, 403, 429, 502, 503) },
    },
    handler: async () => {
      const { feed: _feed, ...check } = (await deps.checkUpdate()) as UpdateCheck & { feed?: unknown };
      return check;
    },
  });

  r.post('/admin/settings/apply-update', {
    onRequest: hooks.admin,
    // From the panel, an update asks for a fresh second factor.
    config: { ...config, bodyOptional: true, reauth: true },
    schema: {
      tags, security, summary: 'Install the newer release of the selected channel as a job that rolls itself back',
      description: 'Checks first (409 when nothing newer is offered, or a downgrade is not allowed), then queues the update job and starts mailsvc-update.service through the helper: download, sha256 and signature, unpack, database snapshot, migrations, switch, restart, health check; any failure switches back and restores the snapshot. Follow it with GET /admin/jobs/{id}.',
      body: ApplyUpdateBody,
      response: { 202: JobStartedSchema, ...errors(400, 401, 403, 409, 413, 422, 429, 502, 503) },
    },
    handler: async (req, reply) => reply.status(202).send(await deps.startUpdate((req.body ?? {}) as ApplyUpdateInput)),
  });
}
