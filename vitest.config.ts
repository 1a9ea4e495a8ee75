import { defineConfig } from 'vitest/config';

// Integration tests start real redis-server processes and real git repos; on a shared 2-core
// machine they need generous timeouts and limited parallelism, not tight timing.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A private Watchman daemon for the suite (test/helpers/watchman-global.ts) and a FLOTILLA_HOME
    // of its own, so no test touches the user's home or its Redis (test/helpers/home-global.ts).
    globalSetup: ['test/helpers/watchman-global.ts', 'test/helpers/home-global.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    maxWorkers: 2,
    fileParallelism: true,
    reporters: ['default'],
  },
});
