import { Type } from '@sinclair/typebox';

const address = (description: string) => Type.String({ minLength: 3, maxLength: 320, description });

export const EmailAddressQuery = Type.Object({ emailaddress: address('the address to configure, e.g. alice@example.org') });
export const OptionalEmailAddressQuery = Type.Object({ emailaddress: Type.Optional(address('the address to configure (Thunderbird sends it); without it the domain is taken from the host asked for')) });

export const AutodiscoverJsonQuery = Type.Object({
  Email: address('the address to configure'),
  Protocol: Type.String({ maxLength: 64, description: 'AutodiscoverV1 (the only one offered)' }),
});
export const AutodiscoverJsonParams = Type.Object({ email: address('the address to configure') });

export const AutodiscoverJsonSchema = Type.Object(
  {
    Protocol: Type.Literal('AutodiscoverV1'),
    Url: Type.String({ description: 'https://autodiscover.<domain>/autodiscover/autodiscover.xml: where Outlook posts its POX request' }),
  },
  { title: 'AutodiscoverJson' },
);

export const AccountParam = Type.Object({ id: Type.String({ maxLength: 320, description: 'id or address' }) });

export const MobileconfigBody = Type.Object(
  {
    app_password: Type.Optional(
      Type.Object(
        {
          name: Type.String({ maxLength: 255, description: 'the app password\'s name, e.g. "iPhone"' }),
          expires_at: Type.Optional(Type.String({ maxLength: 64, description: 'when it stops working (ISO 8601); none: never' })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
