import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  type HostFacts,
  noHostSatisfies,
  parseToolRequirement,
  parseVersion,
  type Requirements,
  requirementQueue,
  requirementsKey,
  splitRequirementQueue,
  unmet,
} from '../../src/shared/host-facts.js';

const linux: HostFacts = {
  os: 'linux',
  arch: 'x64',
  tools: { node: '20.20.2', git: '2.39.5', docker: null, python3: '' },
  labels: { region: 'eu', gpu: 'a100' },
};

describe('parseToolRequirement', () => {
  it.each([
    ['docker', { name: 'docker' }],
    ['node>=20', { name: 'node', op: '>=', version: '20' }],
    ['python3 = 3.11', { name: 'python3', op: '=', version: '3.11' }],
    ['g++<13.1', { name: 'g++', op: '<', version: '13.1' }],
    ['node>=', null],
    ['>=20', null],
    ['node>=twenty', null],
    ['', null],
  ])('%j', (text, expected) => {
    expect(parseToolRequirement(text)).toEqual(expected);
  });
});

describe('versions', () => {
  it.each([
    ['v20.11.1', '20.11.1'],
    ['Docker version 27.0.3, build 7d4bcd8', '27.0.3'],
    ['git version 2.39.5', '2.39.5'],
    ['openjdk version "17.0.15" 2025-04-15', '17.0.15'],
    ['go version go1.22.1 linux/amd64', '1.22.1'],
    ['no digits', ''],
  ])('%j reads as %j', (output, version) => {
    expect(parseVersion(output)).toBe(version);
  });

  it.each([
    ['20', '20.0.0', 0],
    ['20.1', '20', 1],
    ['9.10', '9.9', 1],
    ['18.19.0', '20', -1],
  ])('%s against %s', (a, b, sign) => {
    expect(Math.sign(compareVersions(a, b))).toBe(sign);
  });
});

describe('unmet', () => {
  const cases: Array<[string, Requirements, string[]]> = [
    ['nothing required', {}, []],
    ['its own os', { os: ['linux', 'darwin'] }, []],
    ['another os', { os: ['windows'] }, ['os windows (is linux)']],
    ['another arch', { arch: ['arm64'] }, ['arch arm64 (is x64)']],
    ['a tool it has, new enough', { tools: [{ name: 'node', op: '>=', version: '20' }] }, []],
    ['a tool too old', { tools: [{ name: 'node', op: '>=', version: '22' }] }, ['node>=22 (has 20.20.2)']],
    ['a tool probed and absent', { tools: [{ name: 'docker' }] }, ['docker']],
    ['a tool never probed', { tools: [{ name: 'cargo' }] }, ['cargo']],
    ['a tool present without a version: enough for no version', { tools: [{ name: 'python3' }] }, []],
    [
      'a tool present without a version, a version asked',
      { tools: [{ name: 'python3', op: '>=', version: '3' }] },
      ['python3>=3 (has an unknown version)'],
    ],
    ['= matches the parts it names', { tools: [{ name: 'git', op: '=', version: '2.39' }] }, []],
    [
      '= is not a prefix of the number',
      { tools: [{ name: 'git', op: '=', version: '2.3' }] },
      ['git=2.3 (has 2.39.5)'],
    ],
    ['its labels', { labels: { region: 'eu' } }, []],
    ['another label value', { labels: { region: 'us' } }, ['label region=us']],
    [
      'every gap at once',
      { os: ['darwin'], tools: [{ name: 'docker' }], labels: { tier: 'gold' } },
      ['os darwin (is linux)', 'docker', 'label tier=gold'],
    ],
  ];
  it.each(cases)('%s', (_name, requires, lacks) => {
    expect(unmet(linux, requires)).toEqual(lacks);
  });
});

describe('requirement keys and queues', () => {
  it('gives equal sets one key, whatever their order, and different sets different keys', () => {
    const a = requirementsKey({
      os: ['linux', 'darwin'],
      tools: [{ name: 'docker' }, { name: 'node', op: '>=', version: '20' }],
    });
    const b = requirementsKey({
      tools: [{ name: 'node', op: '>=', version: '20' }, { name: 'docker' }],
      os: ['darwin', 'linux'],
    });
    expect(a).toBe(b);
    expect(a).toMatch(/^[0-9a-f]{12}$/);
    expect(requirementsKey({ os: ['linux'] })).not.toBe(a);
  });

  it('names a variant of a queue and splits it back', () => {
    expect(requirementQueue('verify', undefined)).toBe('verify');
    expect(requirementQueue('dispatch.testing', 'abc')).toBe('dispatch.testing~abc');
    expect(splitRequirementQueue('dispatch.testing~abc')).toEqual({ base: 'dispatch.testing', key: 'abc' });
    expect(splitRequirementQueue('critic')).toEqual({ base: 'critic' });
  });
});

describe('noHostSatisfies', () => {
  const darwin: HostFacts = { os: 'darwin', arch: 'arm64', tools: { node: '22.1.0' }, labels: {} };
  const hosts = [
    { hostId: 'h1', facts: linux },
    { hostId: 'h2', facts: darwin },
    { hostId: 'h3', facts: { ...linux, labels: {} } },
  ];
  it.each([
    ['one host satisfies', { tools: [{ name: 'node' }] } as Requirements, null],
    [
      'a tool none has',
      { tools: [{ name: 'docker' }] } as Requirements,
      'no live host has docker; 3 hosts lack it',
    ],
    [
      'each lacks something else',
      { os: ['darwin'], labels: { region: 'eu' } } as Requirements,
      'h1 lacks os darwin (is linux); h2 lacks label region=eu; h3 lacks os darwin (is linux), label region=eu',
    ],
  ])('%s', (_name, requires, reason) => {
    expect(noHostSatisfies(hosts, requires)).toBe(reason);
  });

  it('says when there is no live host at all', () => {
    expect(noHostSatisfies([], { os: ['linux'] })).toBe('no live host');
  });
});
