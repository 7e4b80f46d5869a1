import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';
import { skipNotice } from '../../../test/helpers/services.js';
import { isolatedRedisUrl, redisAvailable } from '../../../test/helpers/redis.js';
import { SCHEMAS, autodiscoverProtocols, parsePlist, thunderbirdServers, validateXml, xmllintMissing } from '../../../test/helpers/autoconfig.js';

/**
 * The public autoconfiguration routes on the service as `serve` builds it
 * (SQLite), answering from deploy/'s Postfix and Dovecot files: the answers
 * validate against the documented schemas (xmllint), the Apple profile
 * parses with plistlib, unknown and inactive domains get one 404, existing
 * and made-up mailboxes get the same answer, and the per-address limit holds.
 */
const noXmllint = xmllintMissing();
if (noXmllint) skipNotice('xmllint', noXmllint);

const HOST = 'mail.example.org';
const request = (address: string) => readFileSync(join(SCHEMAS, 'autodiscover-request.xml'), 'utf8').replace('ADDRESS', address);

describe('autoconfiguration routes', { timeout: 60_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_HOST: HOST, MAILSVC_AUTOCONFIG_PER_MINUTE: '1000' });
    await t.ctx.domains.create('example.org');
    await t.ctx.domains.create('sleepy.example');
    await t.ctx.domains.setActive('sleepy.example', false);
    await t.ctx.accounts.create({ address: 'alice@example.org', password: 'alice-primary-pw' });
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });
  const pox = (body: string, contentType = 'text/xml') => t.app.inject({ method: 'POST', url: '/autodiscover/autodiscover.xml', headers: { 'content-type': contentType }, payload: body });

  it.skipIf(noXmllint !== null)('Thunderbird: config-v1.1.xml valid against the format definition, implicit TLS first, the ports deploy/ serves', async () => {
    for (const url of ['/mail/config-v1.1.xml?emailaddress=alice%40example.org', '/.well-known/autoconfig/mail/config-v1.1.xml?emailaddress=alice%40example.org']) {
      const r = await get(url);
      expect(r.statusCode).toBe(200);
      expect(r.headers['content-type']).toMatch(/^application\/xml/);
      const v = await validateXml(r.body, 'config-v1.1.xsd');
      expect(v.output).toContain('validates');
      expect(v.ok).toBe(true);
      const { incoming, outgoing } = thunderbirdServers(r.body);
      expect(incoming).toEqual([
        { type: 'imap', hostname: HOST, port: 993, socketType: 'SSL', username: '%EMAILADDRESS%' },
        { type: 'imap', hostname: HOST, port: 143, socketType: 'STARTTLS', username: '%EMAILADDRESS%' },
      ]);
      expect(outgoing).toEqual([
        { type: 'smtp', hostname: HOST, port: 465, socketType: 'SSL', username: '%EMAILADDRESS%' },
        { type: 'smtp', hostname: HOST, port: 587, socketType: 'STARTTLS', username: '%EMAILADDRESS%' },
      ]);
    }
    // Without the address: the domain from the host asked for (autoconfig.<domain>, or the domain itself).
    const byHost = await get('/mail/config-v1.1.xml', { host: 'autoconfig.example.org' });
    expect(byHost.statusCode).toBe(200);
    expect(byHost.body).toBe((await get('/mail/config-v1.1.xml?emailaddress=bob%40example.org')).body);
    expect((await get('/.well-known/autoconfig/mail/config-v1.1.xml', { host: 'example.org' })).statusCode).toBe(200);
  });

  it.skipIf(noXmllint !== null)('Outlook POX: the request fixture and the answer validate against the documented schemas; IMAP and SMTP, implicit TLS first', async () => {
    expect((await validateXml(request('alice@example.org'), 'autodiscover-request.xsd')).ok).toBe(true);
    const r = await pox(request('alice@example.org'));
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/xml/);
    const v = await validateXml(r.body, 'autodiscover-response.xsd');
    expect(v.output).toContain('validates');
    expect(v.ok).toBe(true);
    const protocols = autodiscoverProtocols(r.body).map((p) => [p.Type, p.Server, p.Port, p.Encryption, p.LoginName]);
    expect(protocols).toEqual([
      ['IMAP', HOST, '993', 'SSL', 'alice@example.org'],
      ['IMAP', HOST, '143', 'TLS', 'alice@example.org'],
      ['SMTP', HOST, '465', 'SSL', 'alice@example.org'],
      ['SMTP', HOST, '587', 'TLS', 'alice@example.org'],
    ]);
    expect((await pox(request('alice@example.org'), 'application/xml; charset=utf-8')).body).toBe(r.body);
  });

  it('an existing and a non-existing mailbox of a known domain get the same answers (the address sent is the only difference)', async () => {
    const asked = async (address: string) => {
      const e = encodeURIComponent(address);
      const answers = [
        (await pox(request(address))).body,
        (await get(`/autodiscover/autodiscover.json?Email=${e}&Protocol=AutodiscoverV1`)).body,
        (await get(`/autodiscover/autodiscover.json/v1.0/${e}?Protocol=AutodiscoverV1`)).body,
        (await get(`/mail/config-v1.1.xml?emailaddress=${e}`)).body,
      ];
      const profile = (await get(`/autoconfig/apple.mobileconfig?emailaddress=${e}`)).body;
      return { answers: answers.map((a) => a.split(address).join('<address>')), profile };
    };
    const existing = await asked('alice@example.org');
    const missing = await asked('nobody-here@example.org');
    expect(missing.answers).toEqual(existing.answers);
    expect(existing.answers[1]).toBe(JSON.stringify({ Protocol: 'AutodiscoverV1', Url: 'https://autodiscover.example.org/autodiscover/autodiscover.xml' }));
    // The profile's identifiers derive from the address; its shape does not depend on the mailbox.
    const [a, b] = [await parsePlist(existing.profile), await parsePlist(missing.profile)];
    expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
  });

  it('unknown and inactive domains: one 404, the same body, naming no address', async () => {
    const bodies: string[] = [];
    for (const domain of ['nowhere.example', 'sleepy.example']) {
      const address = `alice@${domain}`;
      const e = encodeURIComponent(address);
      for (const r of [
        await pox(request(address)),
        await get(`/autodiscover/autodiscover.json?Email=${e}&Protocol=AutodiscoverV1`),
        await get(`/mail/config-v1.1.xml?emailaddress=${e}`),
        await get('/mail/config-v1.1.xml', { host: `autoconfig.${domain}` }),
        await get(`/autoconfig/apple.mobileconfig?emailaddress=${e}`),
      ]) {
        expect(r.statusCode).toBe(404);
        expect(r.body).not.toContain('alice');
        bodies.push(r.json<{ detail: string }>().detail);
      }
    }
    expect(new Set(bodies).size).toBe(1);
  });

  it('bad input is a 4xx (400, 413, 415, 422) and never a 5xx', async () => {
    expect((await get('/mail/config-v1.1.xml?emailaddress=not-an-address')).statusCode).toBe(400);
    expect((await get('/mail/config-v1.1.xml', { host: 'localhost' })).statusCode).toBe(400);
    expect((await get('/autodiscover/autodiscover.json?Email=alice%40example.org&Protocol=ActiveSync')).statusCode).toBe(400);
    expect((await get('/autodiscover/autodiscover.json?Protocol=AutodiscoverV1')).statusCode).toBe(422);
    expect((await pox('<Autodiscover><Request>')).statusCode).toBe(400);
    expect((await pox('')).statusCode).toBe(400);
    expect((await pox('<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "alice@example.org">]><Autodiscover><Request><EMailAddress>&x;</EMailAddress></Request></Autodiscover>')).statusCode).toBe(400);
    expect((await pox(request('alice@example.org').replace('outlook/responseschema/2006a', 'mobilesync/responseschema/2006'))).statusCode).toBe(400);
    expect((await pox('<Autodiscover><Request><EMailAddress>x</EMailAddress></Request></Autodiscover>')).statusCode).toBe(400);
    expect((await pox(request('alice@example.org'), 'text/plain')).statusCode).toBe(415);
    expect((await pox(`${request('alice@example.org')}${' '.repeat(20_000)}`)).statusCode).toBe(413);
  });

  it('Outlook XML: deep nesting is a 400, a JSON or other body a 415 that names XML, a large one a 413 that names 16 KiB', async () => {
    // Well-formed and within 16 KiB, nested deeper than any Autodiscover request: a 500 with a stack trace before.
    const deep = `<Autodiscover>${'<a>'.repeat(1500)}${'</a>'.repeat(1500)}</Autodiscover>`;
    expect(deep.length).toBeLessThan(16 * 1024);
    const nested = await pox(deep);
    expect(nested.statusCode).toBe(400);
    expect(nested.json()).toMatchObject({ detail: expect.stringMatching(/nested/) });
    for (const [type, payload] of [['application/json', '{"EMailAddress":"alice@example.org"}'], ['text/plain', request('alice@example.org')], ['application/x-www-form-urlencoded', 'a=b']] as const) {
      const r = await pox(payload, type);
      expect(r.statusCode, type).toBe(415);
      expect(r.json().detail, type).toMatch(/text\/xml or application\/xml/);
      expect(r.json().detail, type).not.toMatch(/application\/json/);
    }
    const large = await pox(`${request('alice@example.org')}${' '.repeat(20_000)}`);
    expect(large.statusCode).toBe(413);
    expect(large.json().detail).toMatch(/16 KiB/);
  });

  it('Apple profile: a property list with IMAP and SMTP on the preferred ports and no password', async () => {
    const r = await get('/autoconfig/apple.mobileconfig?emailaddress=alice%40example.org');
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toMatch(/^application\/x-apple-aspen-config/);
    const p = await parsePlist(r.body);
    expect(p.PayloadType).toBe('Configuration');
    const [mail] = p.PayloadContent as Array<Record<string, unknown>>;
    expect(mail).toMatchObject({
      PayloadType: 'com.apple.mail.managed',
      EmailAccountType: 'EmailTypeIMAP',
      EmailAddress: 'alice@example.org',
      IncomingMailServerHostName: HOST,
      IncomingMailServerPortNumber: 993,
      IncomingMailServerUseSSL: true,
      IncomingMailServerUsername: 'alice@example.org',
      OutgoingMailServerHostName: HOST,
      OutgoingMailServerPortNumber: 465,
      OutgoingMailServerUseSSL: true,
    });
    expect(mail).not.toHaveProperty('IncomingPassword');
    expect(mail).not.toHaveProperty('OutgoingPassword');
  });

  it('the administrator\'s profile with a fresh app password: the password inside works for the mail login, is listed by name, and is never in the audit log', async () => {
    const r = await t.app.inject({ method: 'POST', url: '/accounts/alice@example.org/mobileconfig', headers: { authorization: t.basic() }, payload: { app_password: { name: 'iPhone' } } });
    expect(r.statusCode).toBe(200);
    const [mail] = (await parsePlist(r.body)).PayloadContent as Array<Record<string, unknown>>;
    const password = String(mail?.IncomingPassword);
    expect(mail?.OutgoingPassword).toBe(password);
    expect(await t.ctx.mailAuth.check({ user: 'alice@example.org', password, protocol: 'imap', remoteIp: '127.0.0.1' })).toMatchObject({ ok: true, via: 'app_password' });
    expect((await t.ctx.appPasswords.list('alice@example.org')).map((a) => a.name)).toEqual(['iPhone']);
    const audit = await t.app.inject({ method: 'GET', url: '/admin/audit?limit=5', headers: { authorization: t.basic() } });
    expect(audit.body).toContain('/mobileconfig');
    expect(audit.body).not.toContain(password.split('.')[1] ?? password);
    // Without credentials: 401, and no app password made.
    const anon = await t.app.inject({ method: 'POST', url: '/accounts/alice@example.org/mobileconfig', payload: { app_password: { name: 'x' } } });
    expect(anon.statusCode).toBe(401);
    expect(await t.ctx.appPasswords.list('alice@example.org')).toHaveLength(1);
    // Without app_password: a profile without one.
    const plain = await t.app.inject({ method: 'POST', url: '/accounts/alice@example.org/mobileconfig', headers: { authorization: t.basic() } });
    expect(plain.statusCode).toBe(200);
    const [noPassword] = (await parsePlist(plain.body)).PayloadContent as Array<Record<string, unknown>>;
    expect(noPassword).not.toHaveProperty('IncomingPassword');
    expect(noPassword).not.toHaveProperty('OutgoingPassword');
  });
});

describe('autoconfiguration limits and setup', { timeout: 60_000 }, () => {
  let db: TestDatabase;
  let t: TestApp;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_HOST: HOST, MAILSVC_AUTOCONFIG_PER_MINUTE: '3' });
    await t.ctx.domains.create('example.org');
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('at most MAILSVC_AUTOCONFIG_PER_MINUTE answers per client address, 404s included; another address has its own budget', async () => {
    const ask = (ip: string, address = 'alice@example.org') => t.app.inject({ method: 'GET', url: `/mail/config-v1.1.xml?emailaddress=${encodeURIComponent(address)}`, remoteAddress: ip });
    expect((await ask('192.0.2.1')).statusCode).toBe(200);
    expect((await ask('192.0.2.1', 'x@nowhere.example')).statusCode).toBe(404);
    expect((await ask('192.0.2.1')).statusCode).toBe(200);
    const over = await ask('192.0.2.1');
    expect(over.statusCode).toBe(429);
    expect(over.body).toContain('at most 3 a minute');
    const pox = await t.app.inject({ method: 'POST', url: '/autodiscover/autodiscover.xml', headers: { 'content-type': 'text/xml' }, payload: request('alice@example.org'), remoteAddress: '192.0.2.1' });
    expect(pox.statusCode).toBe(429);
    expect((await ask('192.0.2.2')).statusCode).toBe(200);
  });
});

describe('autoconfiguration limits shared through Redis', { timeout: 60_000 }, async () => {
  const available = await redisAvailable();
  const redis = isolatedRedisUrl(11);
  it.skipIf(!available)('two instances on one Redis share each client address\'s budget', async () => {
    const db = await createTestDatabase('sqlite');
    const env = { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_HOST: HOST, MAILSVC_AUTOCONFIG_PER_MINUTE: '2', MAILSVC_REDIS_URL: redis };
    const [a, b] = [await startTestApp(db.url, env), await startTestApp(db.url, env)];
    try {
      await a.ctx.domains.create('example.org');
      // An address of this run only: Redis keeps counts across runs for the minute.
      const ip = `2001:db8::${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}`;
      const ask = (t: TestApp) => t.app.inject({ method: 'GET', url: '/mail/config-v1.1.xml?emailaddress=alice%40example.org', remoteAddress: ip });
      expect((await ask(a)).statusCode).toBe(200);
      expect((await ask(b)).statusCode).toBe(200);
      expect((await ask(a)).statusCode).toBe(429);
      expect((await ask(b)).statusCode).toBe(429);
    } finally {
      await a.close();
      await b.close();
      await db.drop();
    }
  });
});

describe('autoconfiguration without its setup', { timeout: 60_000 }, () => {
  it('unreadable daemon configuration: 503 naming the file, for every answer', async () => {
    const db = await createTestDatabase('sqlite');
    const t = await startTestApp(db.url, { MAILSVC_MFA_REQUIRED: 'no', MAILSVC_MAIL_HOST: HOST, MAILSVC_POSTFIX_MASTER_CF: '/nonexistent/master.cf' });
    try {
      await t.ctx.domains.create('example.org');
      const r = await t.app.inject({ method: 'GET', url: '/mail/config-v1.1.xml?emailaddress=alice%40example.org' });
      expect(r.statusCode).toBe(503);
      expect(r.body).toContain('/nonexistent/master.cf');
      const profile = await t.app.inject({ method: 'POST', url: '/accounts/1/mobileconfig', headers: { authorization: t.basic() }, payload: { app_password: { name: 'x' } } });
      expect([404, 503]).toContain(profile.statusCode);
    } finally {
      await t.close();
      await db.drop();
    }
  });
});
