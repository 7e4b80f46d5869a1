import { Type } from '@sinclair/typebox';
import type { Static } from '@sinclair/typebox';

export const NoteSchema = Type.Object(
  { id: Type.Integer(), domain: Type.String(), text: Type.String(), created_at: Type.String({ format: 'date-time' }) },
  { title: 'DomainNote' },
);
export type NoteView = Static<typeof NoteSchema>;

/**
 * Path parameters are always text: the service turns types off (no "1" for 1),
 * so a number in the path is a string with a pattern, read by the service.
 */
export const DomainParams = Type.Object({ domain: Type.String({ maxLength: 253, description: 'the domain: id or name' }) });
export const NoteParams = Type.Object({ ...DomainParams.properties, id: Type.String({ pattern: '^[0-9]{1,9}$', description: 'the note id' }) });

/** Every body object refuses unknown fields: a typo is a 422 naming it. */
export const NoteBody = Type.Object({ text: Type.String({ minLength: 1, maxLength: 500 }) }, { additionalProperties: false });
