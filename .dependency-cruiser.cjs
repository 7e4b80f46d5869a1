/**
 * The import boundaries of mailsvc (docs/architecture.md), checked by
 * `npm run lint`. Arrows point one way:
 *   cli, http, main -> app -> modules -> infra -> config, db, adapters -> shared
 */
const SRC = '^src/';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'No import cycles anywhere in src/ (and so none between modules).',
      from: { path: SRC },
      to: { circular: true },
    },
    {
      name: 'shared-imports-only-shared',
      severity: 'error',
      comment: 'shared/ is the bottom layer: it imports only shared/.',
      from: { path: '^src/shared/' },
      to: { path: SRC, pathNot: '^src/shared/' },
    },
    {
      name: 'lower-layers-never-import-modules',
      severity: 'error',
      comment: 'config/, adapters/, db/ and infra/ never import modules/ (nor anything above them).',
      from: { path: '^src/(config|adapters|db|infra)/' },
      to: { path: '^src/(modules|app|http|cli)/|^src/main\\.ts$' },
    },
    {
      name: 'helper-stays-small',
      severity: 'error',
      comment: 'The root helper imports only shared/, config/ and adapters/: nothing of the service runs as root.',
      from: { path: '^src/helper/' },
      to: { path: '^src/(modules|app|http|cli|infra|db)/|^src/main\\.ts$' },
    },
    {
      name: 'config-adapters-db-stay-low',
      severity: 'error',
      comment: 'config/, adapters/ and db/ import only each other and shared/ (never infra/ or helper/).',
      from: { path: '^src/(config|adapters|db)/' },
      to: { path: '^src/(infra|helper)/' },
    },
    {
      name: 'modules-never-import-http-cli-app',
      severity: 'error',
      comment: 'A module never imports http/, cli/ or the composition root (app/, main.ts).',
      from: { path: '^src/modules/' },
      to: { path: '^src/(http|cli|app|helper)/|^src/main\\.ts$' },
    },
    {
      name: 'modules-meet-through-index',
      severity: 'error',
      comment: 'A module imports another module only through its index.ts.',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/[^/]+/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index\\.ts$'] },
    },
    {
      name: 'outside-reaches-modules-through-their-doors',
      severity: 'error',
      comment: 'Outside modules/, code reaches a module through its index.ts (or, for the module list, its module.ts).',
      from: { path: '^src/', pathNot: '^src/modules/' },
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
      comment: 'http/ and cli/ are two front doors; neither imports the other.',
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
