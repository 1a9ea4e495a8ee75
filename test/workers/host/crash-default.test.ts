import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashMidTask } from '../../helpers/crash-scenario.js';
import { openStage, type Stage } from '../../helpers/hosts-stage.js';

/**
 * The same crash as hosts-crash.test.ts with flotilla's default lock settings (10 s lock, renewal
 * and stalled check every 2.5 s): the same outcome. The recovery time is printed for
 * docs/RECOVERY.md; bench/recovery.js measures it.
 */
describe('a host killed mid-task (default lock settings)', () => {
  let stage: Stage;

  beforeAll(async () => {
    stage = await openStage();
  });
  afterAll(async () => {
    await stage?.close();
  });

  it('recovers with the default lock settings too', async () => {
    const measured = await crashMidTask(stage, {});
    console.log(`[recovery, default lock settings] ${JSON.stringify(measured)}`);
    expect(measured.recoveryMs).toBeGreaterThan(0);
  }, 400_000);
});
