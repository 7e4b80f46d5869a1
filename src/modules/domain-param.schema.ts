import { Type } from '@sinclair/typebox';

/**
 * The `:domain` path parameter (an id or a name) of the domains' routes and of
 * the routes other modules hang under a domain (dns). Here rather than in the
 * domains module's index.ts: that index is what a domains command builds, and
 * a schema there would load TypeBox into every such command.
 */
export const DomainParam = Type.Object({ domain: Type.String({ maxLength: 253, description: 'id or name' }) });
