import { describe, expect, it } from 'vitest';
import { type FetchState, planFetching, type QueueState } from '../../../src/workers/host/fetch-plan.js';

const q = (queue: string, clis: string[], inProcessor = 0, held = false): QueueState => ({
  queue,
  clis,
  inProcessor,
  held,
});

function plan(
  state: Omit<FetchState, 'cliFree'> & { cliFree: Record<string, number> },
): Record<string, string> {
  const result = planFetching({ ...state, cliFree: new Map(Object.entries(state.cliFree)) });
  return Object.fromEntries(
    [...result].map(([queue, f]) => [
      queue,
      `${f.fetch ? 'fetch' : 'stop'} c${f.concurrency} s${f.startable}`,
    ]),
  );
}

describe('planFetching', () => {
  const cases: Array<{
    name: string;
    state: Parameters<typeof plan>[0];
    expected: Record<string, string>;
  }> = [
    {
      name: 'an idle host with room for three and a CLI for three fetches three',
      state: { hostFree: 3, hostTaken: 0, cliFree: { a: 3 }, slotJobs: 0, queues: [q('code', ['a'])] },
      expected: { code: 'fetch c3 s3' },
    },
    {
      name: 'a CLI that runs one at a time: the queue fetches one, not the host slot count',
      state: { hostFree: 3, hostTaken: 0, cliFree: { a: 1 }, slotJobs: 0, queues: [q('code', ['a'])] },
      expected: { code: 'fetch c1 s1' },
    },
    {
      name: 'that CLI busy: its queue stops fetching while the running job is held',
      state: { hostFree: 2, hostTaken: 1, cliFree: { a: 0 }, slotJobs: 1, queues: [q('code', ['a'], 1)] },
      expected: { code: 'stop c1 s0' },
    },
    {
      name: 'two queues of one CLI: the one busy with the other queue stops too',
      state: {
        hostFree: 2,
        hostTaken: 1,
        cliFree: { a: 0 },
        slotJobs: 1,
        queues: [q('code', ['a'], 1), q('testing', ['a'])],
      },
      expected: { code: 'stop c1 s0', testing: 'stop c1 s0' },
    },
    {
      name: 'every host slot taken: nothing is fetched though the CLIs have room',
      state: {
        hostFree: 0,
        hostTaken: 2,
        cliFree: { a: 2, b: 4 },
        slotJobs: 2,
        queues: [q('code', ['a', 'b'], 2), q('review', ['b'])],
      },
      expected: { code: 'stop c2 s0', review: 'stop c1 s0' },
    },
    {
      name: 'the free slots of every CLI of a queue count, bounded by the host',
      state: {
        hostFree: 3,
        hostTaken: 1,
        cliFree: { a: 1, b: 4 },
        slotJobs: 1,
        queues: [q('code', ['a', 'b'], 1), q('review', ['b'])],
      },
      expected: { code: 'fetch c4 s3', review: 'fetch c3 s3' },
    },
    {
      name: 'a job fetched and not yet on its slot counts against what is free',
      state: { hostFree: 2, hostTaken: 0, cliFree: { a: 2 }, slotJobs: 1, queues: [q('code', ['a'], 1)] },
      expected: { code: 'fetch c2 s1' },
    },
    {
      name: 'the last free slot promised to a job not yet on it: stop',
      state: { hostFree: 1, hostTaken: 1, cliFree: { a: 1 }, slotJobs: 2, queues: [q('code', ['a'], 2)] },
      expected: { code: 'stop c2 s0' },
    },
    {
      name: 'a hold for dependents stops the queue whatever is free',
      state: {
        hostFree: 3,
        hostTaken: 0,
        cliFree: { a: 3 },
        slotJobs: 0,
        queues: [q('code', ['a'], 0, true)],
      },
      expected: { code: 'stop c3 s3' },
    },
    {
      name: 'a queue no usable CLI serves (all disabled) fetches nothing',
      state: { hostFree: 3, hostTaken: 0, cliFree: { a: 3 }, slotJobs: 0, queues: [q('code', [])] },
      expected: { code: 'stop c1 s0' },
    },
    {
      name: 'a CLI named twice is counted once',
      state: { hostFree: 4, hostTaken: 0, cliFree: { a: 1 }, slotJobs: 0, queues: [q('code', ['a', 'a'])] },
      expected: { code: 'fetch c1 s1' },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(plan(c.state)).toEqual(c.expected);
    });
  }
});
