/**
 * The import boundaries of mailsvc (docs/architecture.md), checked by
 * `npm run lint`, which prints each broken rule with its comment: the comment
 * says what to do instead. Arrows point one way:
 *   cli, http, main -> app -> modules -> infra -> config, db, adapters -> shared
 */
const SRC = '^src/';
/** The composition root and the two front doors: the only code that may import app/. */
const TOP = '^src/(app|http|cli|doc-tables)/|^src/main\\.ts$';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment:
        'An import cycle (type-only imports count). Break it: what two modules both need goes into a small interface ' +
        "the owner exports from its index.ts; a module that must react to another's change listens to its event " +
        '(module.ts `listens`). A cycle through app/, http/ or cli/ is not reported here: the import that points up is, by its own rule.',
      from: { path: SRC, pathNot: TOP },
      to: { circular: true, viaOnly: { pathNot: TOP } },
    },
    {
      name: 'no-cycles-in-composition-root',
      severity: 'error',
      comment: 'An import cycle inside app/, http/ or cli/. Break it: move what both files need into a third file they both import.',
      from: { path: TOP },
      to: { circular: true, viaOnly: { path: TOP } },
    },
    {
      name: 'shared-imports-only-shared',
      severity: 'error',
      comment: 'shared/ is the bottom layer and imports only shared/. Move the code that needs more up into the layer that has it, or pass the value in as a parameter.',
      from: { path: '^src/shared/' },
      to: { path: SRC, pathNot: '^src/shared/' },
    },
    {
      name: 'lower-layers-never-import-modules',
      severity: 'error',
      comment:
        'config/, adapters/, db/ and infra/ never import modules/ (nor app/, http/, cli/, main.ts). Turn it around: ' +
        'the module calls the adapter and hands it what it needs (argv in, typed result out).',
      from: { path: '^src/(config|adapters|db|infra)/' },
      to: { path: '^src/(modules|app|http|cli)/|^src/main\\.ts$' },
    },
    {
      name: 'helper-stays-small',
      severity: 'error',
      comment: 'The root helper imports only shared/, config/ and adapters/: nothing of the service runs as root. Put the check in an adapter or in shared/, and add a verb to the helper (docs/helper.md).',
      from: { path: '^src/helper/' },
      to: { path: '^src/(modules|app|http|cli|infra|db)/|^src/main\\.ts$' },
    },
    {
      name: 'config-adapters-db-stay-low',
      severity: 'error',
      comment: 'config/, adapters/ and db/ import only each other and shared/ (never infra/ or helper/). Take the part of Infra you need as a parameter (the caller builds it).',
      from: { path: '^src/(config|adapters|db)/' },
      to: { path: '^src/(infra|helper)/' },
    },
    {
      name: 'modules-never-import-http-cli-app',
      severity: 'error',
      comment:
        'A module never imports http/, cli/, app/ or main.ts. Another module: ctx.get(...) in your module.ts build, handing your ' +
        'create…Module what it needs; route hooks and error schemas: the RouteKit your routes receive; running a command: the ' +
        'CommandKit your commands receive; an error for HTTP or the CLI: throw AppError (src/shared/errors.ts).',
      from: { path: '^src/modules/' },
      to: { path: '^src/(http|cli|app|helper)/|^src/main\\.ts$' },
    },
    {
      name: 'modules-meet-through-index',
      severity: 'error',
      comment: "A module imports another module only through its index.ts. Ask the owner to export what you need there (a small interface such as DomainLookup), never its repository or service file.",
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'outside-reaches-modules-through-their-doors',
      severity: 'error',
      comment: "Outside modules/, code reaches a module through its index.ts (the module list: its module.ts). Export what you need from the module's index.ts.",
      from: { path: SRC, pathNot: '^src/modules/' },
      to: { path: '^src/modules/[^/]+/', pathNot: '^src/modules/[^/]+/(index|module)\\.ts$' },
    },
    {
      name: 'doc-tables-stay-a-tool',
      severity: 'error',
      comment: 'doc-tables/ renders the generated tables of README.md and docs/audit.md (npm run docs:generate): nothing of the service imports it.',
      from: { path: SRC, pathNot: '^src/doc-tables/' },
      to: { path: '^src/doc-tables/' },
    },
    {
      name: 'http-cli-not-into-each-other',
      severity: 'error',
      comment: 'http/ and cli/ are two front doors; http/ never imports cli/. What both need goes into app/ or a module.',
      from: { path: '^src/http/' },
      to: { path: '^src/cli/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
