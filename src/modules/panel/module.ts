import { defineModule } from '../module-types.js';
import type { PanelModule } from './index.js';

declare module '../module-types.js' {
  interface ModuleRegistry {
    panel: PanelModule;
  }
}

export default defineModule({
  name: 'panel',
  doc: 'docs/panel.md',
  // Served only with MAILSVC_ENABLE_WEB_PANEL=yes.
  http: (settings) => settings.enableWebPanel,
  audits: [{ action: 'POST /panel/session/logout', when: 'the panel signed out (its session and access token end), as the API\'s logout is' }],
  build: async (ctx) => {
    const [{ createPanelModule }, auth, mfa, audit] = await Promise.all([import('./index.js'), ctx.get('auth'), ctx.get('mfa'), ctx.get('audit')]);
    return createPanelModule(ctx.infra, {
      auth: auth.auth,
      tokens: auth.tokens,
      enrolled: async () => (await mfa.service.enrolledMethods()).length > 0,
      recordLogout: async (ip, tokenId) => {
        await audit.service.record({ actor: ctx.infra.settings.adminUsername, tokenId, source: ip, action: 'POST /panel/session/logout', target: null, summary: {}, result: 'ok' });
      },
    });
  },
});
