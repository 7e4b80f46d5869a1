import type { Command, Option } from 'commander';
import { leafCommands } from '../app/commands.js';
import type { RouteEntry } from '../http/route-catalog.js';
import { isAudited, notAuditedBecause, READS_ONLY } from '../modules/command-types.js';
import type { AnyModuleManifest } from '../modules/module-types.js';
import type { Catalog } from './collect.js';

/*
 * The tables of README.md and docs/audit.md that are derived from the routes
 * and commands, rendered as Markdown: each goes between the markers
 *   <!-- BEGIN GENERATED: <name> (npm run docs:generate) -->
 *   <!-- END GENERATED: <name> -->
 */

const cell = (s: string): string => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string): string => `\`${s}\``;
/** The OpenAPI form of a path: `/domains/{domain}`. */
const openApiPath = (url: string): string => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
/** A link to a module's page, from a file in `from` (`.` or `docs`). */
const link = (doc: string | undefined, from: '.' | 'docs'): string => (doc ? `[${doc}](${from === 'docs' ? doc.replace(/^docs\//, '') : doc})` : '');

/** The routes of the modules that the OpenAPI document shows (HEAD, /docs and /openapi.json left out). */
const documented = (routes: readonly RouteEntry[]): RouteEntry[] => routes.filter((r) => r.module !== null && !r.hidden && r.method !== 'HEAD');

function auth(r: RouteEntry): string {
  const who = r.access === 'none' ? 'none' : r.access === 'setup' ? 'admin (setup path)' : 'admin';
  return [who, ...(r.scope ? [`API key scope ${code(r.scope)}`] : []), ...(r.mfaVerified ? ['MFA-verified token'] : [])].join(', ');
}

function docOf(c: Catalog, name: string | null): string | undefined {
  return c.manifests.find((m) => m.name === name)?.doc;
}

export function endpointsTable(c: Catalog): string {
  const rows = documented(c.routes).map((r) => `| ${r.method} | ${cell(code(openApiPath(r.url)))} | ${cell(r.summary ?? '')} | ${auth(r)} | ${link(docOf(c, r.module), '.')} |`);
  return ['| Method | Path | What it does | Auth | More |', '|---|---|---|---|---|', ...rows].join('\n');
}

const pathOf = (cmd: Command): string => {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
};

function optionUsage(o: Option): string {
  return o.mandatory ? o.flags.replace(/^-\w, /, '') : `[${o.flags.replace(/^-\w, /, '')}]`;
}

/** `mailsvc accounts add <address> [--name <display>] … [--json]`, as its --help says it. */
export function commandUsage(cmd: Command): string {
  const args = cmd.registeredArguments.map((a) => {
    const name = `${a.name()}${a.variadic ? '...' : ''}`;
    return a.required ? `<${name}>` : `[${name}]`;
  });
  const opts = cmd.options.filter((o) => o.long !== '--help' && !o.hidden).map(optionUsage);
  return ['mailsvc', pathOf(cmd), ...args, ...opts].join(' ');
}

export function commandsTable(c: Catalog): string {
  const rows = leafCommands(c.program).map((cmd) => `| ${cell(code(commandUsage(cmd)))} | ${cell(cmd.description())} | ${link(c.owners.get(cmd)?.doc, '.')} |`);
  return ['| Command | What it does | More |', '|---|---|---|', ...rows].join('\n');
}

/** Items grouped by the module they belong to, one bullet per module, in the order of the module list. */
function byModule<T>(items: readonly T[], moduleOf: (t: T) => string | null, show: (t: T) => string): string {
  const groups = new Map<string, string[]>();
  for (const t of items) {
    const key = moduleOf(t) ?? 'mailsvc';
    groups.set(key, [...(groups.get(key) ?? []), show(t)]);
  }
  return [...groups].map(([m, shown]) => `- ${m}: ${shown.join(', ')}`).join('\n');
}

/** The API actions recorded: `<METHOD> <route>` as the audit record's `action` holds them. */
export function auditedApi(c: Catalog): string {
  const recorded = documented(c.routes).filter((r) => r.audited);
  return byModule(recorded, (r) => r.module, (r) => code(`${r.method} ${r.url}`));
}

/** Routes that change something and are not recorded: `config: { audit: false }`, or public (no administrator to record). */
export function notAuditedApi(c: Catalog): string {
  const never = documented(c.routes).filter((r) => !r.audited && !['GET', 'HEAD', 'OPTIONS'].includes(r.method));
  return byModule(never, (r) => r.module, (r) => code(`${r.method} ${r.url}`));
}

/** What modules record themselves (their manifest's `audits`). */
export function otherRecords(c: Catalog): string {
  return c.manifests.flatMap((m: AnyModuleManifest) => (m.audits ?? []).map((a) => `- ${code(a.action)} (${m.name}): ${a.when}`)).join('\n');
}

export function auditedCommands(c: Catalog): string {
  return byModule(leafCommands(c.program).filter(isAudited), (cmd) => c.owners.get(cmd)?.name ?? null, (cmd) => code(pathOf(cmd)));
}

export function notAuditedCommands(c: Catalog): string {
  const leaves = leafCommands(c.program);
  const changing = leaves.filter((cmd) => !isAudited(cmd) && notAuditedBecause(cmd) !== READS_ONLY).map((cmd) => `- ${code(pathOf(cmd))}: ${notAuditedBecause(cmd) ?? ''}`);
  const reads = leaves.filter((cmd) => notAuditedBecause(cmd) === READS_ONLY).map((cmd) => code(pathOf(cmd)));
  return [...changing, `- reads only: ${reads.join(', ')}`].join('\n');
}

/** Every generated section, by file and name. */
export function renderSections(c: Catalog): Record<string, Record<string, string>> {
  return {
    'README.md': { endpoints: endpointsTable(c), commands: commandsTable(c) },
    'docs/audit.md': {
      'audited-api': auditedApi(c),
      'not-audited-api': notAuditedApi(c),
      'other-records': otherRecords(c),
      'audited-commands': auditedCommands(c),
      'not-audited-commands': notAuditedCommands(c),
    },
  };
}

/** `text` with each section between its markers replaced; a missing marker is an error naming it. */
export function replaceSections(file: string, text: string, sections: Record<string, string>): string {
  let out = text;
  for (const [name, body] of Object.entries(sections)) {
    const begin = `<!-- BEGIN GENERATED: ${name} (npm run docs:generate) -->`;
    const end = `<!-- END GENERATED: ${name} -->`;
    const a = out.indexOf(begin);
    const b = out.indexOf(end);
    if (a < 0 || b < a) throw new Error(`${file}: the markers of the generated section "${name}" are missing: ${begin} … ${end}`);
    out = `${out.slice(0, a + begin.length)}\n${body}\n${out.slice(b)}`;
  }
  return out;
}
