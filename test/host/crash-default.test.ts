import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashMidTask } from '../helpers/crash-scenario.js';
import { openStage, type Stage } from '../helpers/hosts-stage.js';

/**
 * The same crash as hosts-crash.test.ts with flotilla's default lock (30 s lock, 30 s stalled
 * check): slower to recover, the same outcome. The recovery time is printed for docs/RECOVERY.md.
 */
describe('a host killed mid-task (default 30 s lock)', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('recovers with the default lock settings too', async () => {
    const measured = await crashMidTask(stage, {});
    console.log(`[recovery, default 30 s lock] ${JSON.stringify(measured)}`);
    expect(measured.recoveryMs).toBeGreaterThan(0);
  }, 400_000);
});
