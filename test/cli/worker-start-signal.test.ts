import { existsSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStage, type Stage } from '../helpers/hosts-stage.js';
import { BIN_BUILDER, startWorker, until } from '../helpers/worker-process.js';

/**
 * A SIGTERM that reaches `flotilla worker` while it is still starting (here: while its agent CLI's
 * detection runs) is kept and acted on once the host has started: it drains and exits 0, as it
 * would a moment later. Before, the signal killed the process outright — nothing drained, no exit
 * code — and a supervisor that stops a host right after its "serving" line raced the same way.
 */
describe('flotilla worker signalled while it starts', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('drains and exits 0 once started, instead of dying of the signal', async () => {
    const bin = join(stage.dir, 'slow-bin');
    const marker = join(stage.dir, 'detecting');
    await mkdir(bin, { recursive: true });
    // The builder CLI, whose --version (its detection) takes a few seconds and says when it began.
    await writeFile(
      join(bin, 'sim-builder'),
      `#!/bin/sh\nif [ "$1" = "--version" ]; then : > ${JSON.stringify(marker)}; sleep 3; fi\nexec ${JSON.stringify(join(BIN_BUILDER, 'sim-builder'))} "$@"\n`,
    );
    await chmod(join(bin, 'sim-builder'), 0o755);
    const worker = await startWorker(stage.cluster, {
      hostId: 'early',
      home: stage.home('early'),
      path: [bin],
    });
    await until('detection to run', () => (existsSync(marker) ? true : undefined), 60_000, 50);
    worker.signal('SIGTERM');
    const exit = await worker.exited;
    expect(exit, worker.lines.map((l) => l.msg).join('\n')).toEqual({ code: 0, signal: null });
    expect(worker.hasLog(/serving \d+ CLI/)).toBe(true);
    expect(worker.hasLog(/SIGTERM: draining/)).toBe(true);
  }, 120_000);
});
