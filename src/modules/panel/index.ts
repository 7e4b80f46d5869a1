import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { Infra } from '../../infra/index.js';
import { packageRoot } from '../../config/layout.js';
import type { AuthService, TokenService } from '../auth/index.js';
import type { RouteKit } from '../route-types.js';
import { PanelCallMarker } from './panel-call.js';
import { PanelSessionRepository } from './session.repository.js';
import { PanelSessionService } from './session.service.js';

export { PANEL_CALL_HEADER, REAUTH_DETAIL, REAUTH_HEADER, PanelCallMarker } from './panel-call.js';
export { SESSION_COOKIE, DEV_SESSION_COOKIE } from './cookies.js';
export { PANEL_CSP } from './static-routes.js';

/** Where `npm run build` puts the built panel. */
export const panelBuildDir = (): string => join(packageRoot(), 'dist', 'panel');

/**
 * The web panel: its static files, its server-side sessions and the proxy
 * through which it calls the API. Built only when MAILSVC_ENABLE_WEB_PANEL=yes.
 */
export function createPanelModule(infra: Pick<Infra, 'db' | 'box' | 'clock' | 'settings'>, deps: { auth: AuthService; tokens: TokenService; enrolled: () => Promise<boolean>; recordLogout: (ip: string, tokenId: string) => Promise<void> }) {
  const { settings } = infra;
  const sessions = new PanelSessionService(new PanelSessionRepository(infra.db), infra.box, infra.box.derive('panel-csrf'), infra.clock, {
    idleSeconds: settings.panelSessionIdle,
    maxSeconds: settings.panelSessionMax,
    reauthSeconds: settings.panelReauthWindow,
  });
  const marker = new PanelCallMarker();
  return {
    sessions,
    marker,
    routes: async (app: FastifyInstance, kit: RouteKit) =>
      (await import('./routes.js')).panelRoutes(app, { auth: deps.auth, tokens: deps.tokens, enrolled: deps.enrolled, username: settings.adminUsername, recordLogout: deps.recordLogout, sessions, marker, devHttp: settings.panelDevHttp, panelDir: panelBuildDir() }, kit.errors),
  };
}
export type PanelModule = ReturnType<typeof createPanelModule>;
