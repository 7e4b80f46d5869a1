import type { Static } from '@sinclair/typebox';
import type { ProviderEnv } from '../../config/settings.js';
import type { ProviderRecord, ProviderUpdateBody } from './schema.js';
import type { SecretBox } from '../../shared/secret-box.js';
import type { Clock } from '../../shared/clock.js';
import { badRequest } from '../../shared/errors.js';
import { refuseControlChars } from '../../shared/mail-names.js';
import { checkPublicHttpsUrl } from '../../adapters/outbound/address-policy.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { ProviderRepository, ProviderRow } from './provider.repository.js';
import { PROVIDER_CODES, PROVIDER_DEFAULTS, isProviderCode } from './provider-defaults.js';
import type { ProviderCode } from './provider-defaults.js';

/** The SMS provider record of the spec, as the API shows it: no secret, ever. */
export type ProviderView = Omit<Static<typeof ProviderRecord>, 'code'> & { code: ProviderCode };

export type ProviderUpdate = Static<typeof ProviderUpdateBody>;

/** What a send needs, with the secrets opened; never leaves the process. */
export type ProviderSendConfig = {
  code: ProviderCode;
  baseUrl: string;
  sendPath: string;
  clientId: string | null;
  clientSecret: string | null;
  apiKey: string | null;
  from: string | null;
  route: string;
};

import { sealContext } from '../../db/sealed-columns.js';

const ctx = (code: string, field: string): string => sealContext('sms_providers', code, field);

export class ProviderService {
  constructor(
    private readonly repo: ProviderRepository,
    private readonly box: SecretBox,
    private readonly clock: Clock,
    private readonly env: Readonly<Record<ProviderCode, ProviderEnv>>,
    private readonly outbound: OutboundPolicy,
  ) {}

  private defaults(code: ProviderCode): ProviderRow {
    return {
      code,
      enabled: 0,
      base_url: this.env[code].baseUrl ?? PROVIDER_DEFAULTS[code].baseUrl,
      client_id: null,
      client_secret: null,
      api_key: null,
      send_path: PROVIDER_DEFAULTS[code].sendPath,
      from_sender: null,
      route: 'internal',
      label: null,
      updated_at: this.clock.now(),
    };
  }

  private view(code: ProviderCode, row: ProviderRow | undefined): ProviderView {
    const r = row ?? this.defaults(code);
    const env = this.env[code];
    return {
      code,
      enabled: r.enabled === 1,
      base_url: r.base_url,
      client_id: r.client_id ?? env.clientId ?? null,
      has_client_secret: r.client_secret !== null || env.clientSecret !== undefined,
      has_api_key: r.api_key !== null || env.apiKey !== undefined,
      send_path: r.send_path,
      from_sender: r.from_sender ?? env.from ?? null,
      route: r.route,
      label: r.label ?? code,
    };
  }

  async list(): Promise<ProviderView[]> {
    const rows = new Map((await this.repo.list()).map((r) => [r.code, r]));
    return PROVIDER_CODES.map((code) => this.view(code, rows.get(code)));
  }

  async get(code: ProviderCode): Promise<ProviderView> {
    return this.view(code, await this.repo.get(code));
  }

  /** "Configured with credentials": a client secret or an API key, stored or from the environment. */
  async hasCredentials(code: ProviderCode): Promise<boolean> {
    const v = await this.get(code);
    return v.has_client_secret || v.has_api_key;
  }

  async put(body: ProviderUpdate): Promise<ProviderView> {
    const code = body.code;
    if (!isProviderCode(code)) throw badRequest('Unknown provider');
    for (const field of ['base_url', 'client_id', 'send_path', 'from_sender', 'route', 'client_secret', 'api_key'] as const) refuseControlChars(field, body[field]);
    if (body.base_url !== undefined) {
      const check = await checkPublicHttpsUrl(body.base_url, this.outbound);
      if (!check.ok) throw badRequest(`Invalid base_url: ${check.reason}`);
    }
    if (body.send_path !== undefined && !body.send_path.startsWith('/')) {
      throw badRequest('Invalid send_path: must start with "/"');
    }
    const changes: Partial<Omit<ProviderRow, 'code'>> = { updated_at: this.clock.now() };
    if (body.enabled !== undefined) changes.enabled = body.enabled ? 1 : 0;
    if (body.base_url !== undefined) changes.base_url = body.base_url.replace(/\/+$/, '');
    if (body.client_id !== undefined) changes.client_id = body.client_id;
    if (body.send_path !== undefined) changes.send_path = body.send_path;
    if (body.from_sender !== undefined) changes.from_sender = body.from_sender;
    if (body.route !== undefined) changes.route = body.route;
    if (body.clear_secrets === true) {
      changes.client_secret = null;
      changes.api_key = null;
    }
    if (body.client_secret) changes.client_secret = this.box.seal(body.client_secret, ctx(code, 'client_secret'));
    if (body.api_key) changes.api_key = this.box.seal(body.api_key, ctx(code, 'api_key'));
    const row = await this.repo.createThenUpdate(this.defaults(code), changes);
    return this.view(code, row);
  }

  async sendConfig(code: ProviderCode): Promise<ProviderSendConfig> {
    const row = (await this.repo.get(code)) ?? this.defaults(code);
    const env = this.env[code];
    const open = (v: string | null, field: string): string | null => (v === null ? null : this.box.open(v, ctx(code, field)));
    return {
      code,
      baseUrl: row.base_url,
      sendPath: row.send_path,
      clientId: row.client_id ?? env.clientId ?? null,
      clientSecret: open(row.client_secret, 'client_secret') ?? env.clientSecret ?? null,
      apiKey: open(row.api_key, 'api_key') ?? env.apiKey ?? null,
      from: row.from_sender ?? env.from ?? null,
      route: row.route,
    };
  }
}
