import type { Logger } from 'pino';
import { sendSms, SmsSendFailure } from '../../adapters/sms-http/sms-http.adapter.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { ProviderService } from './provider.service.js';
import type { ProviderCode } from './provider-defaults.js';

export type SendFn = typeof sendSms;

/**
 * Sends a sign-in code through a provider; the code goes into the message only.
 * A failed send is logged with the provider code, the HTTP status and a short
 * reason: never a credential, the phone number, the code or the provider's answer.
 */
export class SmsSender {
  constructor(
    private readonly providers: ProviderService,
    private readonly outbound: OutboundPolicy,
    private readonly log: () => Logger,
    private readonly send: SendFn = sendSms,
  ) {}

  async sendCode(provider: ProviderCode, phone: string, code: string): Promise<void> {
    const cfg = await this.providers.sendConfig(provider);
    try {
      await this.send(
        {
          baseUrl: cfg.baseUrl,
          sendPath: cfg.sendPath,
          clientId: cfg.clientId,
          clientSecret: cfg.clientSecret,
          apiKey: cfg.apiKey,
          to: phone,
          message: `Your mailsvc sign-in code is ${code}`,
          from: cfg.from,
          route: cfg.route,
        },
        this.outbound,
      );
    } catch (err) {
      const cause = (err as { cause?: unknown }).cause;
      const failure = cause instanceof SmsSendFailure ? cause : null;
      this.log().warn(
        { provider, status: failure?.status ?? null, reason: failure?.message ?? 'unexpected error' },
        `SMS send through ${provider} failed: ${failure?.message ?? 'unexpected error'}`,
      );
      throw err;
    }
  }
}
