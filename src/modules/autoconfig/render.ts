import { createHash } from 'node:crypto';
import { XMLBuilder } from 'fast-xml-parser';
import type { MailService, MailServices } from '../../adapters/mail-services.js';
import { AUTODISCOVER_RESPONSE_NS, OUTLOOK_RESPONSE_NS } from './namespaces.js';

/**
 * The answers mail clients read, built from the mail host and the services
 * Postfix and Dovecot serve (src/adapters/mail-services.ts). Pure: the same
 * input gives the same bytes. None of them depends on whether the mailbox
 * exists: the address only fills in the login name.
 */

/** What every answer is built from. */
export type ClientSettings = { mailHost: string; services: MailServices };

const builder = new XMLBuilder({ ignoreAttributes: false, attributeNamePrefix: '@', format: true, indentBy: '  ', suppressEmptyNode: false });
const XML_DECL = '<?xml version="1.0" encoding="UTF-8"?>\n';

/** Thunderbird's words for a service's security. */
const socketType = (s: MailService): string => (s.security === 'tls' ? 'SSL' : 'STARTTLS');

/**
 * Mozilla's autoconfig file (config-v1.1.xml): every offered service,
 * implicit TLS first. The login is the whole address (%EMAILADDRESS%, filled
 * in by the client), the password sent as is over TLS (Dovecot's mechanisms
 * are PLAIN and LOGIN).
 */
export function thunderbirdConfig(domain: string, s: ClientSettings): string {
  const server = (svc: MailService) => ({
    hostname: s.mailHost,
    port: svc.port,
    socketType: socketType(svc),
    authentication: 'password-cleartext',
    username: '%EMAILADDRESS%',
  });
  const doc = {
    clientConfig: {
      '@version': '1.1',
      emailProvider: {
        '@id': domain,
        domain,
        displayName: `${domain} mail`,
        displayShortName: domain,
        incomingServer: [
          ...s.services.imap.map((svc) => ({ '@type': 'imap', ...server(svc) })),
          ...s.services.pop3.map((svc) => ({ '@type': 'pop3', ...server(svc) })),
        ],
        outgoingServer: s.services.submission.map((svc) => ({ '@type': 'smtp', ...server(svc) })),
      },
    },
  };
  return XML_DECL + (builder.build(doc) as string);
}


/**
 * Outlook's POX Autodiscover answer ([MS-OXDSCLI] 2.2.4, the "outlook"
 * response schema 2006a): an email account, IMAP and POP3 and SMTP protocols,
 * implicit TLS first (Outlook takes the first of each type). `Encryption`
 * says SSL (implicit) or TLS (STARTTLS), which newer Outlook reads in place
 * of the older `SSL` on/off.
 */
export function autodiscoverXml(address: string, s: ClientSettings): string {
  const protocol = (type: string) => (svc: MailService) => ({
    Type: type,
    Server: s.mailHost,
    Port: svc.port,
    LoginName: address,
    DomainRequired: 'off',
    SPA: 'off',
    SSL: 'on',
    Encryption: svc.security === 'tls' ? 'SSL' : 'TLS',
    AuthRequired: 'on',
  });
  const doc = {
    Autodiscover: {
      '@xmlns': AUTODISCOVER_RESPONSE_NS,
      Response: {
        '@xmlns': OUTLOOK_RESPONSE_NS,
        Account: {
          AccountType: 'email',
          Action: 'settings',
          Protocol: [
            ...s.services.imap.map(protocol('IMAP')),
            ...s.services.pop3.map(protocol('POP3')),
            ...s.services.submission.map(protocol('SMTP')),
          ],
        },
      },
    },
  };
  return XML_DECL + (builder.build(doc) as string);
}

/** The JSON Autodiscover answer (AutodiscoverV1): where the POX endpoint is. */
export function autodiscoverJson(domain: string): { Protocol: 'AutodiscoverV1'; Url: string } {
  return { Protocol: 'AutodiscoverV1', Url: `https://autodiscover.${domain}/autodiscover/autodiscover.xml` };
}

// ---- Apple configuration profiles ----

type PlistValue = string | number | boolean | PlistValue[] | { [key: string]: PlistValue };

const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function plistValue(v: PlistValue, indent: string): string {
  if (typeof v === 'string') return `${indent}<string>${escapeXml(v)}</string>`;
  if (typeof v === 'number') return `${indent}<integer>${Math.trunc(v)}</integer>`;
  if (typeof v === 'boolean') return `${indent}<${v ? 'true' : 'false'}/>`;
  if (Array.isArray(v)) return [`${indent}<array>`, ...v.map((x) => plistValue(x, `${indent}  `)), `${indent}</array>`].join('\n');
  const keys = Object.keys(v).sort();
  return [`${indent}<dict>`, ...keys.flatMap((k) => [`${indent}  <key>${escapeXml(k)}</key>`, plistValue(v[k] as PlistValue, `${indent}  `)]), `${indent}</dict>`].join('\n');
}

/** A UUID (version 4 layout) derived from text: the same mailbox gets the same profile identity, so a new profile replaces the old one. */
function stableUuid(text: string): string {
  const h = createHash('sha256').update(text).digest();
  h[6] = ((h[6] ?? 0) & 0x0f) | 0x40;
  h[8] = ((h[8] ?? 0) & 0x3f) | 0x80;
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`.toUpperCase();
}

export type MobileconfigInput = {
  /** The mailbox address (already normalized). */
  address: string;
  /** A fresh app password to put in the profile (IMAP and SMTP); without it the device asks for the password. */
  appPassword?: string | undefined;
};

/**
 * An Apple configuration profile (.mobileconfig, an XML property list) with
 * one com.apple.mail.managed payload: IMAP and SMTP, each on its preferred
 * service (implicit TLS when offered). Apple profiles know no STARTTLS/TLS
 * distinction: `UseSSL` is true either way and the device negotiates. A
 * password is inside only when `appPassword` is given.
 */
export function mobileconfig(input: MobileconfigInput, s: ClientSettings): string {
  const imap = s.services.imap[0];
  const smtp = s.services.submission[0];
  if (!imap || !smtp) throw new Error('mobileconfig needs an IMAP and a submission service');
  const { address } = input;
  const id = `mailsvc.${s.mailHost}.${address}`;
  const withPassword = input.appPassword !== undefined;
  const account: Record<string, PlistValue> = {
    EmailAccountDescription: address,
    EmailAccountType: 'EmailTypeIMAP',
    EmailAddress: address,
    IncomingMailServerAuthentication: 'EmailAuthPassword',
    IncomingMailServerHostName: s.mailHost,
    IncomingMailServerPortNumber: imap.port,
    IncomingMailServerUseSSL: true,
    IncomingMailServerUsername: address,
    OutgoingMailServerAuthentication: 'EmailAuthPassword',
    OutgoingMailServerHostName: s.mailHost,
    OutgoingMailServerPortNumber: smtp.port,
    OutgoingMailServerUseSSL: true,
    OutgoingMailServerUsername: address,
    OutgoingPasswordSameAsIncomingPassword: true,
    PayloadDescription: `Mail account ${address}`,
    PayloadDisplayName: address,
    PayloadIdentifier: `${id}.mail`,
    PayloadType: 'com.apple.mail.managed',
    PayloadUUID: stableUuid(`${id}.mail`),
    PayloadVersion: 1,
  };
  if (withPassword && input.appPassword !== undefined) {
    account.IncomingPassword = input.appPassword;
    account.OutgoingPassword = input.appPassword;
  }
  const profile: Record<string, PlistValue> = {
    PayloadContent: [account],
    PayloadDescription: `Sets up ${address} (IMAP and SMTP on ${s.mailHost})${withPassword ? ' with an app password made for this device' : '; the device asks for the password'}.`,
    PayloadDisplayName: `Mail: ${address}`,
    PayloadIdentifier: id,
    PayloadRemovalDisallowed: false,
    PayloadType: 'Configuration',
    PayloadUUID: stableUuid(id),
    PayloadVersion: 1,
  };
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">',
    '<plist version="1.0">',
    plistValue(profile, ''),
    '</plist>',
    '',
  ].join('\n');
}
