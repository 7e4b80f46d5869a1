import { describe, expect, it } from 'vitest';
import { exec, run } from './exec.js';

const NODE = process.execPath;

// The service's environment holds its database URL and keys: a child must not inherit it.
describe('exec keeps the service environment from children', () => {
  it('gives a child only PATH and LANG=C by default: the service environment does not leak', async () => {
    process.env.MAILSVC_SECRET_KEY_FOR_EXEC_TEST = 'do-not-leak';
    try {
      const r = await exec(NODE, ['-e', 'console.log(JSON.stringify(process.env))']);
      const env = JSON.parse(r.stdout) as Record<string, string>;
      expect(Object.keys(env).sort()).toEqual(['LANG', 'PATH']);
      expect(env.LANG).toBe('C');
      expect(env.PATH).toBe(process.env.PATH);
      const viaRun = JSON.parse((await run(NODE, ['-e', 'console.log(JSON.stringify(process.env))'])).stdout) as Record<string, string>;
      expect(Object.keys(viaRun).sort()).toEqual(['LANG', 'PATH']);
    } finally {
      delete process.env.MAILSVC_SECRET_KEY_FOR_EXEC_TEST;
    }
  });

});
