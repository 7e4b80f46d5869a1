import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ADMIN_SECURITY as security } from '../route-types.js';
import type { RouteKit } from '../route-types.js';
import { pageOf } from '../paging.schema.js';
import { BounceQuery, QueueActionSchema, QueueBatchBody, QueueBatchSchema, QueueBulkQuery, QueueCountSchema, QueueCountsSchema, QueueIdParam, QueueListQuery, QueuePageSchema } from './schema.js';
import { durationSeconds } from './queue.service.js';
import type { QueueService } from './queue.service.js';

export function queueRoutes(app: FastifyInstance, queue: QueueService, { hooks, errors }: RouteKit): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  const tags = ['queue'];
  const config = { scope: 'queue' as const };
  r.get('/admin/queue', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'List the mail queue, filtered by queue, sender or recipient (an address, or @domain)',
      description: "Read from postqueue -j as it streams, so memory stays flat however long the queue; a page of {items, total, limit, offset}, in postqueue's order. With `sort` only the best offset+limit entries are kept while it streams (ties by queue id), so memory grows with the page asked for, not with the queue.",
      querystring: QueueListQuery, response: { 200: QueuePageSchema, ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => queue.list({ queue: req.query.queue, sender: req.query.sender, recipient: req.query.recipient }, pageOf(req.query), req.query.sort),
  });
  r.get('/admin/queue/counts', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, summary: 'How many messages each queue holds', description: 'Counts of the active, deferred, hold and incoming queues, read from postqueue -j.', response: { 200: QueueCountsSchema, ...errors(401, 403, 502, 503) } },
    handler: () => queue.counts(),
  });
  r.post('/admin/queue/:id/hold', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, summary: 'Put a message on hold', description: 'postsuper -h through the privileged helper; an id not in the queue is 404, one already on hold 409.', params: QueueIdParam, response: { 200: QueueActionSchema, ...errors(400, 401, 403, 404, 409, 422, 502, 503) } },
    handler: (req) => queue.hold(req.params.id),
  });
  r.post('/admin/queue/:id/release', {
    onRequest: hooks.admin,
    config,
    schema: { tags, security, summary: 'Release a message from hold', description: 'postsuper -H through the privileged helper; an id not in the queue is 404, one not on hold 409.', params: QueueIdParam, response: { 200: QueueActionSchema, ...errors(400, 401, 403, 404, 409, 422, 502, 503) } },
    handler: (req) => queue.release(req.params.id),
  });
  r.post('/admin/queue/batch', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Hold, release or delete several messages named by id',
      description: 'One postsuper run through the privileged helper for all the ids (as hold, release and delete of one message do, without reauthentication: the ids are named one by one). Answers how many distinct ids were asked for and how many messages postsuper changed; ids no longer in the queue, or already in that state, are not counted. A malformed id is 422 and nothing runs.',
      body: QueueBatchBody, response: { 200: QueueBatchSchema, ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => queue.batch(req.body.action, req.body.ids),
  });
  r.delete('/admin/queue/:id', {
    onRequest: hooks.admin,
    config,
    schema: {
      tags, security, summary: 'Delete a message silently, or with bounce=true return it to its sender',
      description: 'postsuper -d drops the message; bounce=true expires it instead so that Postfix returns it to its sender with a notice.',
      params: QueueIdParam, querystring: BounceQuery, response: { 200: QueueActionSchema, ...errors(400, 401, 403, 404, 422, 502, 503) },
    },
    handler: (req) => queue.delete(req.params.id, { bounce: req.query.bounce === 'true' }),
  });
  r.delete('/admin/queue', {
    onRequest: hooks.admin,
    config: { ...config, reauth: true },
    schema: {
      tags, security,
      summary: 'Delete (or with bounce=true return to their senders) every message matching the filter; dry_run=true only counts them',
      description: 'At least one filter is required. Answers {count}: the messages matched (dry_run) or acted on.',
      querystring: QueueBulkQuery, response: { 200: QueueCountSchema, ...errors(400, 401, 403, 422, 502, 503) },
    },
    handler: (req) => {
      const q = req.query;
      const filter = { queue: q.queue, sender: q.sender, recipient: q.recipient, olderThanSeconds: q.older_than === undefined ? undefined : durationSeconds('older_than', q.older_than) };
      return queue.deleteMatching(filter, { dryRun: q.dry_run === 'true', bounce: q.bounce === 'true' });
    },
  });
}
