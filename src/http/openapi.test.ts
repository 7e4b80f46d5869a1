import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { createTestDatabase } from '../../test/helpers/dialects.js';
import type { TestDatabase } from '../../test/helpers/dialects.js';
import { startTestApp } from '../../test/helpers/app.js';
import type { TestApp } from '../../test/helpers/app.js';

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: unknown[];
  requestBody?: { required?: boolean; content: Record<string, { schema: { additionalProperties?: boolean; type?: string } }> };
  responses: Record<string, unknown>;
};
type Doc = { paths: Record<string, Record<string, Operation>> };

describe('the OpenAPI document', () => {
  let db: TestDatabase;
  let t: TestApp;
  let text: string;
  let ops: [string, Operation][];
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url);
    text = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).body;
    const doc = JSON.parse(text) as Doc;
    ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([verb, op]) => [`${verb.toUpperCase()} ${path}`, op] as [string, Operation]));
  });
  afterAll(async () => {
    await t.close();
    await db.drop();
  });

  it('passes the Redocly linter (recommended rules, OpenAPI 3.1) without one error or warning', async () => {
    const config = await createConfig({ extends: ['recommended'] });
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config });
    const shown = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`);
    expect(shown).toEqual([]);
  });

  it('every operation has a unique operationId and a written description besides its summary', () => {
    const ids = ops.map(([, op]) => op.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [name, op] of ops) {
      expect(op.summary, name).toBeTruthy();
      expect(op.description, name).toBeTruthy();
      expect(op.description, name).not.toBe(op.summary);
    }
  });

  it('public operations need no credentials; every other one names Bearer and Basic and lists 401, 429 and 503', () => {
    const publicOps = [
      'POST /auth/login', 'POST /auth/mfa/sms', 'POST /auth/mfa/verify', 'POST /auth/mfa/webauthn/options', 'POST /auth/mfa/webauthn/verify', 'POST /auth/passkey/options', 'POST /auth/passkey/verify', 'POST /auth/logout', 'GET /health',
      // Mail clients' autoconfiguration (docs/mail-clients.md): public, rate-limited per client address.
      'GET /.well-known/autoconfig/mail/config-v1.1.xml', 'GET /mail/config-v1.1.xml', 'POST /autodiscover/autodiscover.xml',
      'GET /autodiscover/autodiscover.json', 'GET /autodiscover/autodiscover.json/v1.0/{email}', 'GET /autoconfig/apple.mobileconfig',
    ];
    for (const [name, op] of ops) {
      if (publicOps.includes(name)) {
        expect(op.security, name).toEqual([]);
        continue;
      }
      // Bearer, and Basic where the route does not demand a token earned with the second factor.
      expect([[{ bearer: [] }, { basic: [] }], [{ bearer: [] }]], name).toContainEqual(op.security);
      expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['401', '429', '503']));
    }
  });

  it('an operation with a body lists 400, 408, 413, 415 and 422, and refuses unknown fields', () => {
    const withBody = ops.filter(([, op]) => op.requestBody !== undefined);
    expect(withBody.length).toBeGreaterThan(10);
    for (const [name, op] of withBody) {
      expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['400', '408', '413', '415', '422']));
      const schema = op.requestBody?.content['application/json']?.schema;
      if (schema?.type === 'object') expect(schema.additionalProperties, name).toBe(false);
    }
  });

  it('the logout body is optional; the others are required', () => {
    const bodies = Object.fromEntries(ops.filter(([, op]) => op.requestBody !== undefined).map(([name, op]) => [name, op.requestBody?.required]));
    expect(bodies['POST /auth/logout']).toBe(false);
    expect(bodies['POST /domains']).toBe(true);
  });
});
