import { describe, expect, it } from 'vitest';
import { dispatchQueue, QUEUES } from '../../../src/shared/contracts.js';
import { type LiveHost, routeTask } from '../../../src/shared/queue/route.js';
import { taskSpec as task } from '../../helpers/factories.js';

const codex = { cli: 'codex', order: 1, capabilities: ['code_implementation', 'testing', 'code_review'] };
const gemini = {
  cli: 'gemini',
  order: 2,
  capabilities: ['web_search', 'ui_design', 'large_analysis', 'code_review'],
};
const docs = { cli: 'docs', order: 3, capabilities: ['documentation'] };

const hostA: LiveHost = { hostId: 'host-a', clis: [gemini], internal: false };
const hostB: LiveHost = { hostId: 'host-b', clis: [codex, docs], internal: false };
const hostInternal: LiveHost = { hostId: 'host-i', clis: [], internal: true };

describe('routeTask', () => {
  it.each([
    ['exact on another host', task({ capability: 'web_search' }), [hostA, hostB], 'exact', 'web_search'],
    [
      'exact over the union of hosts',
      task({ capability: 'code_implementation' }),
      [hostA, hostB],
      'exact',
      'code_implementation',
    ],
    [
      'most matches across hosts',
      task({ capability: 'large_analysis, ui_design, testing' }),
      [hostA, hostB],
      'exact',
      'large_analysis',
    ],
    ['affinity', task({ capability: 'exotic', division: 'Marketing' }), [hostB], 'affinity', 'documentation'],
    ['internal', task({ capability: 'exotic' }), [hostA, hostInternal], 'internal', 'internal'],
    [
      'surgical implementation goes internal',
      task({ capability: 'code_implementation', controlMode: 'surgical' }),
      [hostB, hostInternal],
      'internal',
      'internal',
    ],
  ] as const)('%s', (_name, spec, hosts, how, capability) => {
    const route = routeTask(spec, hosts);
    expect(route).toMatchObject({ how, capability });
    expect(route.queue).toBe(dispatchQueue(capability));
  });

  it('names the matched CLI and its hosts in the reason', () => {
    const route = routeTask(task({ capability: 'code_review' }), [hostA, hostB]);
    // codex has the lower adapter order, wherever its host sits in the list.
    expect(route.reason).toContain('exact match: codex offers code_review');
    expect(route.reason).toContain('on host host-b');
  });

  it('joins the same CLI on several hosts', () => {
    const route = routeTask(task({ capability: 'web_search' }), [hostA, { ...hostA, hostId: 'host-c' }]);
    expect(route.reason).toContain('on hosts host-a, host-c');
  });

  it('uses the seed log line for the internal route', () => {
    const route = routeTask(task({ capability: 'exotic', division: 'Design' }), [hostB, hostInternal]);
    expect(route).toEqual({
      queue: QUEUES.internal,
      capability: 'internal',
      how: 'internal',
      reason:
        "No external CLI matched task type 'exotic' in division 'Design'. Using internal agent. (on host host-i)",
    });
  });

  it('waits when nothing matches and no host serves internal', () => {
    const route = routeTask(task({ division: 'Engineering' }), [hostA]);
    expect(route).toEqual({
      queue: dispatchQueue('code_implementation'),
      capability: 'code_implementation',
      how: 'waiting',
      reason:
        'no live host serves code_implementation (or Engineering affinity) and none serves dispatch.internal',
    });
  });

  it('waits with no live hosts at all', () => {
    expect(routeTask(task({ capability: 'testing, code_review' }), [])).toMatchObject({
      how: 'waiting',
      reason: 'no live host serves testing or code_review and none serves dispatch.internal',
    });
  });

  it('waits in surgical mode without an internal host', () => {
    expect(routeTask(task({ controlMode: 'surgical' }), [hostB])).toEqual({
      queue: QUEUES.internal,
      capability: 'internal',
      how: 'waiting',
      reason:
        'control mode surgical keeps code_implementation with the internal agent and no live host serves dispatch.internal',
    });
  });

  describe('pinned cli', () => {
    it('goes to the task capability queue when a live host has the CLI', () => {
      expect(routeTask(task({ cli: 'codex' }), [hostA, hostB])).toEqual({
        queue: dispatchQueue('code_implementation'),
        capability: 'code_implementation',
        how: 'pinned',
        reason: 'pinned to codex (on host host-b)',
        cli: 'codex',
      });
    });

    it('overrides matching, even in surgical mode', () => {
      expect(routeTask(task({ cli: 'codex', controlMode: 'surgical' }), [hostB, hostInternal]).how).toBe(
        'pinned',
      );
    });

    it("takes a queue the CLI's hosts consume when it does not list the capability", () => {
      const route = routeTask(task({ cli: 'gemini' }), [hostA, hostB]);
      expect(route).toMatchObject({
        how: 'pinned',
        capability: 'web_search',
        queue: dispatchQueue('web_search'),
      });
      expect(route.reason).toContain("gemini does not list 'code_implementation'");
    });

    it('waits, with a reason, when no live host has the CLI', () => {
      expect(routeTask(task({ cli: 'aider' }), [hostA, hostB, hostInternal])).toEqual({
        queue: dispatchQueue('code_implementation'),
        capability: 'code_implementation',
        how: 'waiting',
        reason: "pinned CLI 'aider' is on no live host (live CLIs: gemini, codex, docs)",
        cli: 'aider',
      });
    });
  });
});

describe('routeTask with requires', () => {
  const facts = (os: string, tools: Record<string, string | null> = {}) => ({
    os,
    arch: 'x64',
    tools,
    labels: {},
  });
  const onLinux: LiveHost = { ...hostB, hostId: 'linux-1', facts: facts('linux', { docker: '27.0.3' }) };
  const onDarwin: LiveHost = { ...hostB, hostId: 'mac-1', facts: facts('darwin') };
  const noFacts: LiveHost = { ...hostB, hostId: 'old-1' };

  it('routes to the queue of its requirement key over the hosts that satisfy it', () => {
    const route = routeTask(task({ capability: 'testing', requires: { os: ['darwin'] } }), [
      onLinux,
      onDarwin,
    ]);
    expect(route.how).toBe('exact');
    expect(route.requirementsKey).toMatch(/^[0-9a-f]{12}$/);
    expect(route.queue).toBe(`${dispatchQueue('testing')}~${route.requirementsKey}`);
    expect(route.reason).toContain('(on host mac-1)');
    expect(route.reason).toContain('requires os darwin');
  });

  it('waits, saying what is missing, when no live host satisfies it', () => {
    const route = routeTask(task({ capability: 'testing', requires: { tools: [{ name: 'docker' }] } }), [
      onDarwin,
      noFacts,
    ]);
    expect(route.how).toBe('waiting');
    expect(route.reason).toBe('no live host has docker; 2 hosts lack it');
    // Still its key's queue: a host with docker that joins serves it.
    expect(route.queue).toBe(`${dispatchQueue('testing')}~${route.requirementsKey}`);
  });

  it('leaves a task without requires on the plain queue', () => {
    const route = routeTask(task({ capability: 'testing' }), [onLinux]);
    expect(route.queue).toBe(dispatchQueue('testing'));
    expect(route.requirementsKey).toBeUndefined();
  });
});
