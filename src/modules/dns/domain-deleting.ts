import { AppError } from '../../shared/errors.js';
import type { DomainDeleting } from '../domains/index.js';
import type { DeletionListener } from '../module-types.js';
import type { DkimService } from './dkim.service.js';

const text = (e: unknown): string => (e instanceof AppError ? e.detail : e instanceof Error ? e.message : String(e));

/**
 * The dns module's part in deleting a domain (`domain.deleting`): first
 * Rspamd stops signing for it and its key files go (root helper), refusing the
 * delete when the helper cannot do its part (503/502/409 saying what to do);
 * then, in the delete's transaction, its keys are marked retired and its
 * rotation and DNS provider settings dropped. When the delete fails after
 * that, Rspamd signs for it again as stored.
 */
export function retireDomainKeys(dkim: Pick<DkimService, 'stopSigning' | 'forgetDomain' | 'syncSigning'>): DeletionListener<DomainDeleting> {
  return {
    before: async ({ name }) => {
      try {
        await dkim.stopSigning(name);
      } catch (err) {
        if (err instanceof AppError) {
          const what = err.code === 'unavailable' ? 'start the root helper (systemctl enable --now mailsvc-helper.socket) and delete it again' : "fix what Rspamd's check says and delete it again";
          throw new AppError(err.code, `Domain ${name} was not deleted: Rspamd still signs its mail (${err.detail}); ${what}`);
        }
        throw err;
      }
    },
    within: (tx, { name }) => dkim.forgetDomain(tx, name),
    undo: async ({ name }) => {
      try {
        await dkim.syncSigning();
      } catch (err) {
        throw new AppError('upstream', `Rspamd no longer signs for ${name} and could not be put back (${text(err)}): run mailsvc dns sync-signing`);
      }
    },
  };
}
