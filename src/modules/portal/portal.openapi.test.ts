import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConfig, lintFromString } from '@redocly/openapi-core';
import { createTestDatabase } from '../../../test/helpers/dialects.js';
import type { TestDatabase } from '../../../test/helpers/dialects.js';
import { startTestApp } from '../../../test/helpers/app.js';
import type { TestApp } from '../../../test/helpers/app.js';

type Operation = { summary?: string; description?: string; security?: unknown[]; responses: Record<string, unknown> };

// The default document has no portal routes (MAILSVC_ENABLE_USER_PORTAL is off);
// with it on, the document still passes the linter the main document passes.
describe('the OpenAPI document with the user portal on', () => {
  let db: TestDatabase;
  let t: TestApp;
  let text: string;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    t = await startTestApp(db.url, { MAILSVC_ENABLE_USER_PORTAL: 'yes' });
    text = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).body;
  });
  afterAll(async () => {
    await t?.close();
    await db?.drop();
  });

  it('passes Redocly\'s recommended rules; each portal operation has its own description, no admin credentials, and documents 401', async () => {
    const problems = await lintFromString({ source: text, absoluteRef: 'openapi.json', config: await createConfig({ extends: ['recommended'] }) });
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? '?'}`)).toEqual([]);
    const paths = (JSON.parse(text) as { paths: Record<string, Record<string, Operation>> }).paths;
    const ops = Object.entries(paths).filter(([p]) => p.startsWith('/portal/api/')).flatMap(([p, m]) => Object.entries(m).map(([v, op]) => [`${v} ${p}`, op] as const));
    expect(ops.length).toBeGreaterThan(10);
    for (const [name, op] of ops) {
      expect(op.description, name).toBeTruthy();
      expect(op.description, name).not.toBe(op.summary);
      expect(op.security ?? [], name).toEqual([]);
      expect(Object.keys(op.responses), name).toContain('401');
    }
  });
});
