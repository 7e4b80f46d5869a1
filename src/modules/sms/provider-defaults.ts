export const PROVIDER_CODES = ['provider_a', 'provider_b'] as const;
export type ProviderCode = (typeof PROVIDER_CODES)[number];
export const DEFAULT_PROVIDER: ProviderCode = 'provider_a';

export function isProviderCode(code: string): code is ProviderCode {
  return (PROVIDER_CODES as readonly string[]).includes(code);
}

/**
 * Built-in defaults, in provider-defaults order. The spec leaves the real base
 * addresses open; these placeholders must be replaced through PUT
 * /auth/mfa/providers or MAILSVC_SMS_<CODE>_BASE_URL before a send can work.
 */
export const PROVIDER_DEFAULTS: Readonly<Record<ProviderCode, { baseUrl: string; sendPath: string }>> = {
  provider_a: { baseUrl: 'https://api.provider-a.example', sendPath: '/api/v1/modules/sms/send' },
  provider_b: { baseUrl: 'https://api.provider-b.example', sendPath: '/api/v1/modules/provider_b/send' },
};
