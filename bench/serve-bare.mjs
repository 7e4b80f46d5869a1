// The baseline: a bare Fastify 5 app (no logger, no hooks, no schema, no
// database) with one JSON route, served the same way as serve-mailsvc.mjs.
// The body has the shape and size of GET /auth/mfa's, so the comparison is
// about what mailsvc does per request, not about payload bytes.
import Fastify from 'fastify';
import { serveOverIpc } from './lib/ipc.mjs';

const app = Fastify({ logger: false });
app.get('/bare', async () => ({
  totp_enabled: false,
  totp_pending: false,
  totp_confirmed_at: null,
  sms_enabled: false,
  sms_phone: null,
  sms_provider: null,
  methods: [],
  mfa_required: false,
}));
await app.listen({ host: '127.0.0.1', port: 0 });
serveOverIpc(app.server.address().port, () => app.close());
