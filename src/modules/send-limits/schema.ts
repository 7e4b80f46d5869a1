import { Type } from '@sinclair/typebox';
import type { Static, TInteger } from '@sinclair/typebox';
import { WINDOWS } from '../../shared/send-rate.js';
import type { Window } from '../../shared/send-rate.js';

export const LimitsSchema = Type.Object(
  Object.fromEntries(WINDOWS.map((w) => [w, Type.Integer({ minimum: 0, description: 'messages; 0 = no limit' })])) as Record<Window, TInteger>,
  { title: 'SendLimits' },
);
export const SyncResult = Type.Object({ accounts: Type.Integer(), defaults: LimitsSchema }, { title: 'SendLimitsSync' });
export type SyncResult = Static<typeof SyncResult>;
