/**
 * The layout rule of docs/ARCHITECTURE.md, checked by `npm run lint`:
 *
 *   cli, index.ts, client.ts   compose everything below them
 *   board                      shared (store, contracts), and the producer's client
 *   producer    workers        the two halves: each imports only shared/, never the other
 *   shared                     imports nothing above it
 *
 * Inside workers: host → stages → {agent, workspace}; agent may use workspace's file monitors.
 * Inside shared: queue → store → the flat modules. Nothing imports in a circle.
 * test/layout.test.ts checks that a wrong import fails these rules.
 */
const rule = (name, from, allowed, comment) => ({
  name,
  comment: comment ?? `${from} may import only from: ${allowed.join(', ') || 'itself'}`,
  severity: 'error',
  from: { path: `^src/${from}` },
  to: {
    path: '^src/',
    pathNot: [`^src/${from}`, ...allowed.map((a) => `^src/${a}`)],
  },
});

/** The flat modules of shared/: every file directly in src/shared/ and its validation/ folder. */
const SHARED_BASE = ['shared/[^/]+$', 'shared/validation/'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    rule('shared-base', 'shared/[^/]+$', SHARED_BASE, 'the flat modules of shared/ import only one another'),
    rule('shared-store', 'shared/store/', SHARED_BASE),
    rule('shared-queue', 'shared/queue/', [...SHARED_BASE, 'shared/store/']),
    rule('producer', 'producer/', ['shared/'], 'the producer imports only shared/, never workers/'),
    rule('workers-workspace', 'workers/workspace/', ['shared/']),
    rule('workers-agent', 'workers/agent/', ['shared/', 'workers/workspace/']),
    rule('workers-stages', 'workers/stages/', ['shared/', 'workers/agent/', 'workers/workspace/']),
    rule('workers-host', 'workers/host/', ['shared/', 'workers/']),
    rule('board', 'board/', ['shared/', 'producer/'], 'the board reads shared/ and may use the producer, never workers/'),
    rule('sim', 'sim/', ['shared/'], 'the stand-in agent is its own program: shared/ only'),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
