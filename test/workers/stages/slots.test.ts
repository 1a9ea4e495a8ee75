import type { Job } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/shared/config.js';
import type { StageJobData, VerifyResult } from '../../../src/shared/contracts.js';
import { silentLogger } from '../../../src/shared/logger.js';
import { Semaphore } from '../../../src/shared/semaphore.js';
import type { HostContext } from '../../../src/workers/stages/context.js';
import { reviewAttempt } from '../../../src/workers/stages/critic/processor.js';
import { acquireSlots, takeSlots } from '../../../src/workers/stages/slots.js';
import { adapter, missionSpec } from '../../helpers/factories.js';

/** Whether a semaphore hands out a slot within a short wait (a leaked slot never comes back). */
async function hasFreeSlot(semaphore: Semaphore): Promise<boolean> {
  try {
    const release = await semaphore.acquire(AbortSignal.timeout(500));
    release();
    return true;
  } catch {
    return false;
  }
}

describe('acquireSlots', () => {
  it('gives the host slot back when the wait for the CLI slot is aborted', async () => {
    const slots = new Semaphore(1);
    const cliSlot = new Semaphore(1);
    const holdCli = await cliSlot.acquire();
    const controller = new AbortController();
    const pending = acquireSlots({ slots, cliSlots: new Map([['x', cliSlot]]) }, 'x', controller.signal);
    controller.abort('shutdown');
    await expect(pending).rejects.toBe('shutdown');
    expect(await hasFreeSlot(slots)).toBe(true);
    holdCli();
  });

  it('releases both with one call, once', async () => {
    const slots = new Semaphore(1);
    const cliSlot = new Semaphore(1);
    const release = await acquireSlots({ slots, cliSlots: new Map([['x', cliSlot]]) }, 'x', undefined);
    expect(await hasFreeSlot(slots)).toBe(false);
    release();
    release();
    expect(await hasFreeSlot(slots)).toBe(true);
    expect(await hasFreeSlot(cliSlot)).toBe(true);
  });
});

/**
 * The critic's processor on a host context built by hand: a builder CLI and another reviewer
 * CLI, a mission whose repository does not exist (so the checkout throws), no Redis needed.
 */
function reviewContext(reviewerSlots: number): { ctx: HostContext; marks: string[] } {
  const spec = missionSpec({ t: [] }, { critic: true });
  const builder = adapter({ cli: 'builder', config: { capabilities: ['code_implementation'] } });
  const reviewer = adapter({ cli: 'reviewer', order: 1, config: { capabilities: ['code_review'] } });
  const marks: string[] = [];
  const store = {
    isCancelled: async () => false,
    // No other host: a review with no free slot waits for one here.
    liveHosts: async () => [],
    mark: async (_id: string, _task: string, _attempt: number, status: string) => {
      marks.push(status);
      return true;
    },
  };
  const ctx = {
    hostId: 'h',
    config: loadConfig({ FLOTILLA_HOME: '/nonexistent/flotilla-home' }),
    secret: undefined,
    logger: silentLogger,
    store,
    clis: [{ adapter: builder }, { adapter: reviewer }],
    slots: new Semaphore(1),
    cliSlots: new Map([
      ['builder', new Semaphore(1)],
      ['reviewer', new Semaphore(reviewerSlots)],
    ]),
    cacheDir: '/nonexistent/flotilla-cache',
    workRoot: '/nonexistent/flotilla-work',
    disabled: new Map(),
    coolingUntil: new Map(),
    onAdvertisedChange: async () => {},
    missions: new Map([['m', { spec, meta: { repo: '/nonexistent/repo.git' } }]]),
  } as unknown as HostContext;
  return { ctx, marks };
}

function criticJob(): Job<StageJobData> {
  const verify: VerifyResult = {
    run: {
      outcome: 'done',
      cli: 'builder',
      host: 'h',
      branch: 'flotilla/m.t.a1',
      resultStatus: 'success',
      summary: 'done',
      durationMs: 1,
    },
    ran: true,
    passed: true,
    criteria: [{ command: 'true', exitCode: 0, timedOut: false, tail: '' }],
  };
  return {
    id: 'm.t.a1.critic',
    name: 'critic',
    data: { missionId: 'm', taskId: 't', attempt: 1 },
    getChildrenValues: async () => ({ 'verify:m.t.a1.verify': verify }),
    getIgnoredChildrenFailures: async () => ({}),
  } as unknown as Job<StageJobData>;
}

describe('the critic holds its slots in one finally', () => {
  it('gives the host slot back when the checkout before the review throws', async () => {
    const { ctx } = reviewContext(1);
    await expect(reviewAttempt(ctx, criticJob(), undefined, undefined)).rejects.toThrow();
    expect(await hasFreeSlot(ctx.slots)).toBe(true);
    expect(await hasFreeSlot(ctx.cliSlots.get('reviewer') as Semaphore)).toBe(true);
  });

  it("waits for the reviewer CLI's max_concurrent slot before it starts", async () => {
    const { ctx, marks } = reviewContext(1);
    const holdReviewer = await (ctx.cliSlots.get('reviewer') as Semaphore).acquire();
    const controller = new AbortController();
    const review = reviewAttempt(ctx, criticJob(), undefined, controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 200));
    controller.abort('shutdown');
    // It never got past the reviewer's slot: no checkout was tried, nothing was marked reviewing.
    await expect(review).rejects.toBe('shutdown');
    expect(marks).toEqual([]);
    expect(await hasFreeSlot(ctx.slots)).toBe(true);
    holdReviewer();
  });
});

describe('Semaphore', () => {
  it('refuses at once a wait whose signal was aborted before it began', async () => {
    const semaphore = new Semaphore(1);
    const hold = await semaphore.acquire();
    await expect(semaphore.acquire(AbortSignal.abort('gone'))).rejects.toBe('gone');
    hold();
    expect(await hasFreeSlot(semaphore)).toBe(true);
  });

  it('takes a slot now or says none is free, and tells its listener of each take and give-back', () => {
    const changes: number[] = [];
    const semaphore: Semaphore = new Semaphore(1, () => changes.push(semaphore.free));
    const hold = semaphore.tryAcquire();
    expect(hold).not.toBeNull();
    expect(semaphore.tryAcquire()).toBeNull();
    hold?.();
    hold?.();
    expect(changes).toEqual([0, 1]);
  });
});

describe('takeSlots', () => {
  it('takes the host slot and the CLI slot together, or neither', () => {
    const ctx = { slots: new Semaphore(2), cliSlots: new Map([['builder', new Semaphore(1)]]) };
    const first = takeSlots(ctx, 'builder');
    expect(first).not.toBeNull();
    // The CLI's one slot is taken: the host slot the second try took is given back at once.
    expect(takeSlots(ctx, 'builder')).toBeNull();
    expect(ctx.slots.free).toBe(1);
    first?.();
    expect([ctx.slots.free, ctx.cliSlots.get('builder')?.free]).toEqual([2, 1]);
  });

  it('takes nothing when the host has no slot free', () => {
    const ctx = { slots: new Semaphore(1), cliSlots: new Map([['builder', new Semaphore(1)]]) };
    const hold = ctx.slots.tryAcquire();
    expect(takeSlots(ctx, 'builder')).toBeNull();
    expect(ctx.cliSlots.get('builder')?.free).toBe(1);
    hold?.();
  });
});
