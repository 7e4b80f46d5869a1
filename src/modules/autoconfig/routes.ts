import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import type { AutoconfigService } from './autoconfig.service.js';
import type { AccountLookup } from '../accounts/index.js';
import type { AppPasswordService } from '../app-passwords/index.js';
import { AutodiscoverJsonSchema, EmailAddressQuery, MobileconfigBody, OptionalEmailAddressQuery, AutodiscoverJsonQuery, AutodiscoverJsonParams, AccountParam } from './schema.js';

/** A client error with its status, for the API's error handler (it shows a 4xx's message). */
const httpError = (statusCode: number, message: string): Error => Object.assign(new Error(message), { statusCode });

/** The XML request body of Outlook's POX Autodiscover: small, text only. */
const XML_BODY_LIMIT = 16 * 1024;
const XML = 'application/xml; charset=utf-8';
const MOBILECONFIG = 'application/x-apple-aspen-config; charset=utf-8';
const tags = ['autoconfig'];

export type AutoconfigRouteDeps = { service: AutoconfigService; accounts: Pick<AccountLookup, 'resolve'>; appPasswords: Pick<AppPasswordService, 'create'> };

/**
 * The public autoconfiguration routes (no credentials, rate-limited per
 * client address, never audited: nothing changes) and the administrator's
 * profile-with-app-password route. docs/mail-clients.md.
 */
export async function autoconfigRoutes(app: FastifyInstance, deps: AutoconfigRouteDeps, { hooks, errors }: RouteKit): Promise<void> {
  const { service } = deps;
  const limited = async (req: FastifyRequest) => service.consume(req.clientIp);
  const xml = (reply: FastifyReply, text: string) => reply.type(XML).header('cache-control', 'no-store').send(text);
  const publicErrors = errors(400, 404, 422, 429, 503);

  // Thunderbird asks both: the domain's own /.well-known/ path and autoconfig.<domain>/mail/.
  for (const url of ['/.well-known/autoconfig/mail/config-v1.1.xml', '/mail/config-v1.1.xml']) {
    app.withTypeProvider<TypeBoxTypeProvider>().get(url, {
      onRequest: limited,
      schema: {
        tags,
        summary: 'Thunderbird autoconfig (config-v1.1.xml) for a domain of this server',
        description: 'Mozilla\'s autoconfiguration file: the IMAP (and POP3, when offered) and SMTP submission servers with the ports and TLS modes Dovecot and Postfix serve, implicit TLS first. The domain is the one of `emailaddress`, else the host asked for (`autoconfig.<domain>` or the domain). Unknown and inactive domains answer 404; the answer never depends on whether the mailbox exists. Public, limited per client address (MAILSVC_AUTOCONFIG_PER_MINUTE).',
        querystring: OptionalEmailAddressQuery,
        response: { 200: Type.String({ description: 'application/xml: clientConfig version 1.1' }), ...publicErrors },
      },
      handler: async (req, reply) => xml(reply, await service.thunderbird(req.query.emailaddress, req.headers.host)),
    });
  }

  // Outlook's POX request is XML: a parser for this route only (the rest of the API takes JSON only).
  await app.register(async (scope) => {
    scope.addContentTypeParser(['application/xml', 'text/xml'], { parseAs: 'string', bodyLimit: XML_BODY_LIMIT }, (_req, body, done) => {
      done(null, typeof body === 'string' ? body : body.toString('utf8'));
    });
    // This route takes XML only: a JSON body (which the API's own parser would read) or any other type is 415,
    // said before the body is read, and the size refused is this route's, not the API's 1 MiB.
    scope.addHook('preParsing', async (req) => {
      if (!/^(text|application)\/xml\s*(;|$)/i.test(req.headers['content-type'] ?? '')) throw httpError(415, 'Unsupported content type: send the Autodiscover request as text/xml or application/xml');
    });
    scope.setErrorHandler((err: FastifyError) => {
      if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') throw httpError(413, `Autodiscover request too large: the limit is ${XML_BODY_LIMIT / 1024} KiB`);
      throw err;
    });
    scope.withTypeProvider<TypeBoxTypeProvider>().post('/autodiscover/autodiscover.xml', {
      onRequest: limited,
      bodyLimit: XML_BODY_LIMIT,
      config: { audit: false },
      schema: {
        tags,
        summary: 'Outlook Autodiscover (POX): IMAP/POP3/SMTP settings for an address',
        description: 'Body: the POX Autodiscover request (`text/xml` or `application/xml`, at most 16 KiB, no DOCTYPE) with `Request/EMailAddress` and `AcceptableResponseSchema` http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a. Answers the Autodiscover response (outlook schema 2006a) with the servers Dovecot and Postfix serve, implicit TLS first. The same answer for an existing and a non-existing mailbox of a known domain (the login name is the address sent); unknown and inactive domains answer 404. Public, limited per client address.',
        consumes: ['text/xml', 'application/xml'],
        body: Type.String({ description: 'the Autodiscover request XML', maxLength: XML_BODY_LIMIT }),
        response: { 200: Type.String({ description: 'application/xml: the Autodiscover response' }), ...errors(400, 404, 413, 415, 422, 429, 503) },
      },
      handler: async (req, reply) => xml(reply, await service.autodiscover(req.body)),
    });
  });

  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/autodiscover/autodiscover.json', {
    onRequest: limited,
    schema: {
      tags,
      summary: 'Outlook Autodiscover (JSON, AutodiscoverV1): where the POX endpoint is',
      description: 'Answers `{"Protocol": "AutodiscoverV1", "Url": "https://autodiscover.<domain>/autodiscover/autodiscover.xml"}` for an address of an active domain; any other Protocol is 400. Unknown and inactive domains answer 404. Public, limited per client address.',
      querystring: AutodiscoverJsonQuery,
      response: { 200: AutodiscoverJsonSchema, ...publicErrors },
    },
    handler: (req) => service.autodiscoverJson(req.query.Email, req.query.Protocol),
  });
  r.get('/autodiscover/autodiscover.json/v1.0/:email', {
    onRequest: limited,
    schema: {
      tags,
      summary: 'Outlook Autodiscover (JSON, address in the path)',
      description: 'The form Outlook sends: the same answer as /autodiscover/autodiscover.json?Email=…&Protocol=AutodiscoverV1.',
      params: AutodiscoverJsonParams,
      querystring: Type.Object({ Protocol: Type.String({ maxLength: 64 }) }),
      response: { 200: AutodiscoverJsonSchema, ...publicErrors },
    },
    handler: (req) => service.autodiscoverJson(req.params.email, req.query.Protocol),
  });

  r.get('/autoconfig/apple.mobileconfig', {
    onRequest: limited,
    schema: {
      tags,
      summary: 'Apple configuration profile for an address (no password inside)',
      description: 'An unsigned .mobileconfig (XML property list, `application/x-apple-aspen-config`) with one mail account: IMAP and SMTP on the preferred ports Dovecot and Postfix serve; the device asks for the password. The same profile for an existing and a non-existing mailbox of a known domain; unknown and inactive domains answer 404. Public, limited per client address. A profile with an app password inside: POST /accounts/{id}/mobileconfig (administrator) or the self-service portal.',
      querystring: EmailAddressQuery,
      response: { 200: Type.String({ description: 'application/x-apple-aspen-config' }), ...publicErrors },
    },
    handler: async (req, reply) => reply.type(MOBILECONFIG).header('content-disposition', 'attachment; filename="mail.mobileconfig"').send(await service.publicMobileconfig(req.query.emailaddress)),
  });

  r.post('/accounts/:id/mobileconfig', {
    onRequest: hooks.admin,
    config: { scope: 'accounts', bodyOptional: true },
    schema: {
      tags: ['accounts'],
      security,
      summary: 'Apple configuration profile of an account, optionally with a new app password inside',
      description: 'With `app_password` the account gets a new app password (named, optionally expiring, like POST /accounts/{id}/app-passwords) and the profile carries it for IMAP and SMTP: the password is in this answer only, so hand the file to the device and delete it. Without, the profile has no password. The answer is `application/x-apple-aspen-config`.',
      params: AccountParam,
      body: MobileconfigBody,
      response: { 200: Type.String({ description: 'application/x-apple-aspen-config' }), ...errors(400, 401, 403, 404, 413, 422, 429, 503) },
    },
    handler: async (req, reply) => {
      const account = await deps.accounts.resolve(req.params.id);
      // The profile can be made (active domain, mail host, daemons' files) before a password is made for it.
      await service.address(account.address);
      await service.clientSettings();
      const wanted = req.body.app_password;
      const appPassword = wanted === undefined ? undefined : (await deps.appPasswords.create(account.id, wanted)).password;
      const text = await service.renderMobileconfig({ address: account.address, appPassword });
      return reply.type(MOBILECONFIG).header('cache-control', 'no-store').header('content-disposition', 'attachment; filename="mail.mobileconfig"').send(text);
    },
  });
}
