import { describe, expect, it } from 'vitest';
import { describeStop } from '../../../src/workers/host/shutdown.js';

describe('describeStop: what a stopped worker says, and its exit code', () => {
  it.each([
    ['clean stop', { abandoned: [], redisReachable: true }, false, { code: 0 }],
    [
      'second signal: the operator abandoned the CLIs',
      { abandoned: ['m.t.a1.run'], redisReachable: true },
      true,
      { code: 0 },
    ],
    [
      'grace period over with a job running',
      { abandoned: ['m.t.a1.run'], redisReachable: true },
      false,
      {
        code: 1,
        line: "flotilla worker: grace period over; abandoned 1 running job(s) to BullMQ's stalled-job recovery (m.t.a1.run)",
      },
    ],
    [
      'Redis unreachable, nothing running',
      { abandoned: [], redisReachable: false },
      false,
      {
        code: 3,
        line: 'flotilla worker: stopped with Redis unreachable; no job was running; this host was not unregistered',
      },
    ],
    [
      'Redis unreachable, second signal, two jobs',
      { abandoned: ['a.t.a1.run', 'b.u.a2.verify'], redisReachable: false },
      true,
      {
        code: 3,
        line: "flotilla worker: stopped with Redis unreachable; abandoned 2 running job(s) to BullMQ's stalled-job recovery (a.t.a1.run, b.u.a2.verify); this host was not unregistered",
      },
    ],
  ] as const)('%s', (_name, outcome, forced, expected) => {
    expect(describeStop(outcome, forced)).toEqual(expected);
  });
});
