/**
 * The layer rule of docs/ARCHITECTURE.md, checked by `npm run lint`:
 *   cli → {mission, host, board} → stages → {agent, workspace, queue, store} → shared
 * A module imports only from its own layer's folder or from layers below it; the three
 * top-level services do not import one another; nothing imports in a circle.
 */
const layer = (name, allowed) => ({
  name: `layer-${name}`,
  comment: `src/${name} may import only from: ${allowed.join(', ') || 'itself'}`,
  severity: 'error',
  from: { path: `^src/${name}/` },
  to: {
    path: '^src/',
    pathNot: [`^src/${name}/`, ...allowed.map((a) => `^src/${a}/`)],
  },
});

const BASE = ['shared'];
const LOW = ['agent', 'workspace', 'queue', 'store'];

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    layer('shared', []),
    layer('store', BASE),
    layer('agent', BASE),
    layer('workspace', BASE),
    layer('queue', [...BASE, 'store']),
    layer('stages', [...BASE, ...LOW]),
    layer('mission', [...BASE, ...LOW, 'stages']),
    layer('host', [...BASE, ...LOW, 'stages']),
    layer('board', [...BASE, ...LOW, 'stages']),
    layer('sim', BASE),
    layer('cli', [...BASE, ...LOW, 'stages', 'mission', 'host', 'board']),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^(dist|node_modules)/' },
  },
};
