/** The Autodiscover response schemas ([MS-OXDSCLI]): the service checks a request against them without loading the renderers. */
export const AUTODISCOVER_RESPONSE_NS = 'http://schemas.microsoft.com/exchange/autodiscover/responseschema/2006';
export const OUTLOOK_RESPONSE_NS = 'http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a';
