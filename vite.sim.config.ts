import { defineConfig } from 'vite';

// flotilla-sim as one file (plus the chunk of its sim language), for examples/bin/flotilla-sim;
// `npm run build` runs `vite build --config vite.sim.config.ts --configLoader runner` after tsc (the
// runner loads this file in memory, where the default loader writes a copy into node_modules).
// The demo, tests and benchmarks start the sim thousands of times, and Node 20 loading yaml and
// zod from their ~180 files cost a run more than everything else it does (docs/BENCHMARKS.md,
// "The stand-in agent's start-up"). The code is dist/sim's, unchanged; src/sim/run.ts's lazy import
// of steps.js stays a chunk of its own, so `--version` still loads neither yaml nor zod.
export default defineConfig({
  publicDir: false,
  logLevel: 'warn',
  build: {
    ssr: 'dist/sim/main.js',
    outDir: 'dist/sim/bundle',
    emptyOutDir: true,
    target: 'node20',
    minify: false,
    sourcemap: false,
    rollupOptions: { output: { entryFileNames: 'main.js', chunkFileNames: '[name].js' } },
  },
  // Inline every dependency: the point is that a run reads no module from node_modules.
  ssr: { target: 'node', noExternal: true },
});
