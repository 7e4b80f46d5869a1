import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The panel is served by the API under /panel/ from dist/panel (see docs/panel.md).
// JSX is compiled for Preact by Vite's own transformer: no plugin needed.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/panel/',
  logLevel: 'warn',
  // The production JSX runtime whatever NODE_ENV says (the test run builds with NODE_ENV=test): the browser tests load what ships.
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact', development: false } },
  build: {
    outDir: fileURLToPath(new URL('../dist/panel', import.meta.url)),
    emptyOutDir: true,
    // Everything in files of this origin: the CSP allows no inline script, and data: only for the QR image.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
    reportCompressedSize: false,
  },
});
