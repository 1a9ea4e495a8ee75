import { describe, expect, it } from 'vitest';
import { formatEventLine } from '../../src/index.js';
import type { MissionEvent } from '../../src/shared/contracts.js';

/** The library's event line (the README's snippet prints it): the mission's own events have no task. */
describe('formatEventLine', () => {
  const at = '2026-12-07T09:30:05.123Z';

  it('names the mission, not undefined, for the mission-level events', () => {
    const events: MissionEvent[] = [
      { at, missionId: 'm', type: 'submitted', message: 'mission submitted: stats' },
      { at, missionId: 'm', type: 'log', message: 'cancel requested: 0 running task(s) being stopped' },
      { at, missionId: 'm', type: 'mission', status: 'done', message: 'done: 1/1 tasks\nmore lines' },
    ];
    expect(events.map(formatEventLine)).toEqual([
      `09:30:05 ${'mission'.padEnd(18)} ${'submitted'.padEnd(10)} mission submitted: stats`,
      `09:30:05 ${'mission'.padEnd(18)} ${'log'.padEnd(10)} cancel requested: 0 running task(s) being stopped`,
      `09:30:05 ${'mission'.padEnd(18)} ${'done'.padEnd(10)} done: 1/1 tasks`,
    ]);
  });

  it('names the task and its attempt for a task event', () => {
    const line = formatEventLine({
      at,
      missionId: 'm',
      taskId: 'mean',
      attempt: 2,
      type: 'task',
      status: 'running',
      message: 'running on h1 with flotilla-sim',
    });
    expect(line).toBe(
      `09:30:05 ${'mean a2'.padEnd(18)} ${'running'.padEnd(10)} running on h1 with flotilla-sim`,
    );
  });
});
