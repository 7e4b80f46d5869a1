import type { Db } from '../../db/database.js';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import { refuseControlChars } from '../../shared/mail-names.js';
import type { DomainLookup } from '../domains/index.js';
import type { NoteRepository, NoteRow } from './note.repository.js';
import type { NoteView } from './schema.js';

const present = (r: NoteRow, domain: string): NoteView => ({ id: r.id, domain, text: r.text, created_at: new Date(r.created_at).toISOString() });

/** The rules; they throw AppError(code, detail), and http/ and cli/ turn that into a status or an exit code. */
export class NoteService {
  constructor(private readonly repo: NoteRepository, private readonly domains: DomainLookup, private readonly clock: Clock) {}

  async add(domain: string, text: string): Promise<NoteView> {
    refuseControlChars('text', text);
    if (text.trim() === '' || text.length > 500) throw new AppError('validation', 'text: 1 to 500 characters', { errors: [{ path: 'body.text', message: '1 to 500 characters' }] });
    // The domains module's door: a domain that does not exist is its 404.
    const d = await this.domains.resolve(domain);
    const now = this.clock.now();
    const id = await this.repo.insert(d.id, text, now);
    return present({ id, domain_id: d.id, text, created_at: now }, d.name);
  }

  async list(domain: string): Promise<NoteView[]> {
    const d = await this.domains.resolve(domain);
    return (await this.repo.list(d.id)).map((r) => present(r, d.name));
  }

  async remove(domain: string, id: string | number): Promise<void> {
    const d = await this.domains.resolve(domain);
    if (!(await this.repo.delete(d.id, Number(id)))) throw new AppError('not_found', `Note ${String(id)} of ${d.name} not found`);
  }

  /** `domain.deleting`: the domain's notes go in the transaction that deletes it. */
  forgetDomain(tx: Db, domainId: number): Promise<void> {
    return this.repo.removeForDomain(tx, domainId);
  }
}
