import { sendSms } from '../../adapters/sms-http/sms-http.adapter.js';
import type { OutboundPolicy } from '../../adapters/outbound/address-policy.js';
import type { ProviderService } from './provider.service.js';
import type { ProviderCode } from './provider-defaults.js';

export type SendFn = typeof sendSms;

/** Sends a sign-in code through a provider; the code goes into the message only. */
export class SmsSender {
  constructor(
    private readonly providers: ProviderService,
    private readonly outbound: OutboundPolicy,
    private readonly send: SendFn = sendSms,
  ) {}

  async sendCode(provider: ProviderCode, phone: string, code: string): Promise<void> {
    const cfg = await this.providers.sendConfig(provider);
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
  }
}
