import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import { badRequest } from '../../shared/errors.js';
import type { RouteKit } from '../route-types.js';
import type { PasskeyService, RegistrationCeremonies } from './passkey.service.js';
import { CreationOptions, Passkey, PasskeyList, PasskeyPolicy, PasskeyPolicyPatch, RegisterBody, RenameBody } from './passkey.schema.js';

export type PasskeyRouteDeps = {
  passkeys: PasskeyService;
  ceremonies: () => Promise<RegistrationCeremonies>;
  onFactorEnrolled: () => Promise<unknown>;
};

const security = [{ bearer: [] }];
const Params = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** Who a registration belongs to: the token that asked for it (Basic only before any factor is enrolled). */
const ownerOf = (req: FastifyRequest): string => (req.admin?.tokenId ? `token:${req.admin.tokenId}` : `basic:${req.admin?.subject ?? ''}`);

/**
 * The administrator's passkeys under /auth/mfa/passkeys. Once a factor is
 * enrolled only a token earned with it reaches them; adding and removing one
 * from the panel needs a fresh second factor, as disabling TOTP does.
 */
export function passkeyRoutes(app: FastifyInstance, deps: PasskeyRouteDeps, kit: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const { hooks, errors } = kit;
  const { passkeys } = deps;
  const tags = ['mfa'];
  const common = errors(401, 403, 429);

  r.get('/auth/mfa/passkeys', {
    onRequest: hooks.setup,
    config: { mfaVerified: true },
    schema: { tags, security, summary: 'The registered passkeys', description: 'Each passkey with its name, when it was registered and last used, its transports and whether it is backed up (synced) or bound to one device. Never a key.', response: { 200: PasskeyList, ...common } },
    handler: async () => {
      const items = await passkeys.list();
      return { items, total: items.length };
    },
  });

  r.post('/auth/mfa/passkeys/options', {
    onRequest: hooks.setup,
    config: { mfaVerified: true, reauth: 'every-client', bodyOptional: true },
    schema: {
      tags, security, summary: 'Start registering a passkey: the options for navigator.credentials.create()',
      description: 'Answers the creation options (attestation none, a discoverable credential preferred, user verification as MAILSVC_WEBAUTHN_USER_VERIFICATION, the registered passkeys excluded) and a registration_id; the challenge is single use and lives MAILSVC_WEBAUTHN_TIMEOUT seconds. 400 when MAILSVC_PANEL_ORIGIN is not set.',
      response: { 200: CreationOptions, ...common, ...errors(400) },
    },
    handler: async (req) => {
      const options = await passkeys.registrationOptions();
      const ceremonies = await deps.ceremonies();
      const id = await ceremonies.start(ownerOf(req), options.challenge, passkeys.timeoutSeconds);
      return { registration_id: id, expires_in: passkeys.timeoutSeconds, options: options as unknown as Record<string, unknown> };
    },
  });

  r.post('/auth/mfa/passkeys', {
    onRequest: hooks.setup,
    config: { mfaVerified: true, reauth: 'every-client' },
    schema: {
      tags, security, summary: 'Register a passkey: the browser\'s answer to the creation options',
      description: 'Checks the answer (challenge of this registration_id, once; origin MAILSVC_PANEL_ORIGIN; RP ID; user verification as configured) and stores the public key under the name given. Tokens issued without a second factor are revoked, as when TOTP is enabled.',
      body: RegisterBody,
      response: { 201: Passkey, ...common, ...errors(400, 409, 413, 422) },
    },
    handler: async (req, reply) => {
      const ceremonies = await deps.ceremonies();
      const challenge = await ceremonies.take(req.body.registration_id, ownerOf(req));
      if (challenge === null) throw badRequest('Unknown or expired registration: start again (POST /auth/mfa/passkeys/options)');
      const created = await passkeys.register(req.body.name, req.body.credential as unknown as RegistrationResponseJSON, challenge);
      await deps.onFactorEnrolled();
      return reply.status(201).send(created);
    },
  });

  r.patch('/auth/mfa/passkeys/:id', {
    onRequest: hooks.setup,
    config: { mfaVerified: true },
    schema: { tags, security, summary: 'Rename a passkey', description: 'Changes the name shown in the list (1 to 64 characters); nothing else about the passkey changes.', params: Params, body: RenameBody, response: { 200: Passkey, ...common, ...errors(404, 413, 422) } },
    handler: (req) => passkeys.rename(req.params.id, req.body.name),
  });

  r.delete('/auth/mfa/passkeys/:id', {
    onRequest: hooks.setup,
    config: { mfaVerified: true, reauth: 'every-client' },
    schema: {
      tags, security, summary: 'Remove a passkey',
      description: 'The passkey can no longer sign in. From the panel this needs a fresh second factor, as disabling TOTP does. The last passkey cannot go while the passkey policy requires one (400).',
      params: Params,
      response: { 204: Type.Null(), ...common, ...errors(400, 404) },
    },
    handler: async (req, reply) => {
      await passkeys.remove(req.params.id);
      return reply.status(204).send(null);
    },
  });

  r.get('/auth/mfa/passkeys/policy', {
    onRequest: hooks.setup,
    config: { mfaVerified: true },
    schema: { tags, security, summary: 'The passkey settings: passwordless sign-in, the passkey policy, origin and RP ID', description: 'Whether passwordless sign-in is on and where passkeys are required (each stored or the MAILSVC_WEBAUTHN_* default), whether MAILSVC_PANEL_ORIGIN is set, the RP ID, user verification and the attestation asked for (none).', response: { 200: PasskeyPolicy, ...common } },
    handler: () => passkeys.policy(),
  });

  r.patch('/auth/mfa/passkeys/policy', {
    onRequest: hooks.setup,
    config: { mfaVerified: true, reauth: 'every-client' },
    schema: {
      tags, security, summary: 'Turn passwordless sign-in on or off, or require passkeys (panel, or everywhere)',
      description: 'Stored in the database, where it wins over MAILSVC_WEBAUTHN_PASSWORDLESS and MAILSVC_WEBAUTHN_REQUIRED. Turning either on needs a registered passkey (400).',
      body: PasskeyPolicyPatch,
      response: { 200: PasskeyPolicy, ...common, ...errors(400, 413, 422) },
    },
    handler: (req) => passkeys.setPolicy(req.body),
  });
}
