import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { detect } from '../../../../src/cli/commands/detect.js';
import type { Adapter } from '../../../../src/shared/adapter.js';
import { clearDetectionCache, detectClis } from '../../../../src/workers/agent/adapters/detect.js';
import { adapter } from '../../../helpers/factories.js';
import { FIXTURES } from '../../../helpers/paths.js';

/** Small executables that behave like installed, broken, counting and hanging CLIs. */
const BIN = join(FIXTURES, 'bin');

function fakeAdapter(cli: string, displayName: string, detection: string, order = 0): Adapter {
  return adapter({
    cli,
    displayName,
    file: join(BIN, `${cli}.md`),
    order,
    config: { detection_command: detection, timeout_ms: 60_000 },
  });
}

function lines() {
  const logged: string[] = [];
  return { logged, logger: { info: (message: string) => logged.push(message) } };
}

async function countRuns(file: string): Promise<number> {
  const text = await readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).length;
}

let scratch: string;
beforeEach(async () => {
  clearDetectionCache();
  scratch = await mkdtemp(join(tmpdir(), 'flotilla-detect-'));
});
afterEach(async () => {
  clearDetectionCache();
  await rm(scratch, { recursive: true, force: true });
});

describe('detectClis', () => {
  it('logs the seed’s lines verbatim for an available and a missing CLI', async () => {
    const { logged, logger } = lines();
    const detected = await detectClis(
      [
        fakeAdapter('fake-ok', 'Fake OK', `${join(BIN, 'fake-ok')} --version`, 0),
        fakeAdapter('missing', 'Missing Tool', 'flotilla-definitely-not-installed --version', 1),
      ],
      { logger },
    );
    expect(logged).toEqual(['CLI Fake OK: available', 'CLI Missing Tool: not installed (skipped)']);
    expect(
      detected.map(({ adapter, available, version }) => ({ cli: adapter.cli, available, version })),
    ).toEqual([
      { cli: 'fake-ok', available: true, version: 'fake-ok 1.2.3' },
      { cli: 'missing', available: false, version: undefined },
    ]);
    expect(detected[1]?.reason).toBe('flotilla-definitely-not-installed: command not found');
  });

  it('counts a non-zero exit as not installed and keeps what the CLI said', async () => {
    const { logged, logger } = lines();
    const [detected] = await detectClis([fakeAdapter('fake-fail', 'Fake Fail', join(BIN, 'fake-fail'))], {
      logger,
    });
    expect(detected?.available).toBe(false);
    expect(detected?.reason).toBe(
      `${join(BIN, 'fake-fail')}: exit code 1 (fake-fail: cannot load its configuration)`,
    );
    expect(logged).toEqual(['CLI Fake Fail: not installed (skipped)']);
  });

  it('finds commands on the PATH of the environment it is given, with no shell', async () => {
    const env = { PATH: `${BIN}${delimiter}${process.env.PATH ?? ''}` };
    const [detected] = await detectClis([fakeAdapter('fake-ok', 'Fake OK', 'fake-ok --version')], { env });
    expect(detected).toMatchObject({ available: true, version: 'fake-ok 1.2.3' });

    // Shell syntax is just arguments: `;` does not start a second command.
    const marker = join(scratch, 'shell-ran');
    clearDetectionCache();
    await detectClis([fakeAdapter('fake-ok', 'Fake OK', `fake-ok --version ; touch ${marker}`)], { env });
    await expect(readFile(marker)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('gives up on a command that does not answer within the timeout', async () => {
    const started = Date.now();
    const [detected] = await detectClis([fakeAdapter('fake-slow', 'Fake Slow', join(BIN, 'fake-slow'))], {
      timeoutMs: 300,
    });
    expect(detected?.available).toBe(false);
    expect(detected?.reason).toBe(`${join(BIN, 'fake-slow')} did not answer within 300 ms`);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('runs each detection command once per process, and again on refresh', async () => {
    const counter = join(scratch, 'runs');
    const env = { FAKE_COUNT_FILE: counter };
    const adapter = fakeAdapter('fake-count', 'Fake Count', `${join(BIN, 'fake-count')} --version`);
    const first = lines();
    const second = lines();
    const third = lines();

    await detectClis([adapter], { env, logger: first.logger });
    const cached = await detectClis([adapter], { env, logger: second.logger });
    expect(await countRuns(counter)).toBe(1);
    expect(cached[0]).toMatchObject({ available: true, version: 'fake-count 0.1.0' });
    expect(first.logged).toEqual(['CLI Fake Count: available']);
    // An answer from the cache is not a new detection, so it is not logged again.
    expect(second.logged).toEqual([]);

    await detectClis([adapter], { env, logger: third.logger, refresh: true });
    expect(await countRuns(counter)).toBe(2);
    expect(third.logged).toEqual(['CLI Fake Count: available']);

    clearDetectionCache();
    await detectClis([adapter], { env });
    expect(await countRuns(counter)).toBe(3);
  });

  it('shares one run between callers that overlap', async () => {
    const counter = join(scratch, 'runs');
    const adapter = fakeAdapter('fake-count', 'Fake Count', `${join(BIN, 'fake-count')} --version`);
    const env = { FAKE_COUNT_FILE: counter };
    await Promise.all([detectClis([adapter], { env }), detectClis([adapter], { env })]);
    expect(await countRuns(counter)).toBe(1);
  });

  it('keys the cache by adapter file and command, so a changed command runs anew', async () => {
    const counter = join(scratch, 'runs');
    const env = { FAKE_COUNT_FILE: counter };
    await detectClis([fakeAdapter('fake-count', 'Fake Count', `${join(BIN, 'fake-count')} --version`)], {
      env,
    });
    await detectClis([fakeAdapter('fake-count', 'Fake Count', `${join(BIN, 'fake-count')} -v`)], { env });
    await detectClis([fakeAdapter('other-file', 'Fake Count', `${join(BIN, 'fake-count')} -v`)], { env });
    expect(await countRuns(counter)).toBe(3);
  });
});

describe('flotilla detect', () => {
  async function writeAdapters(): Promise<string> {
    const adapter = (cli: string, name: string, detection: string) => `---
cli: ${cli}
cli_display_name: "${name}"
---

# ${name}

## Dispatch Configuration

\`\`\`yaml
available: true
capabilities: [code_implementation, testing]
detection_command: "${detection}"
invoke_command: "${cli}"
prompt_delivery: stdin_pipe
result_path: ".planning/dispatch/{task-id}-RESULT.md"
timeout_ms: 60000
\`\`\`
`;
    await writeFile(
      join(scratch, 'a-ok.md'),
      adapter('fake-ok', 'Fake OK', `${join(BIN, 'fake-ok')} --version`),
    );
    await writeFile(join(scratch, 'b-fail.md'), adapter('fake-fail', 'Fake Fail', join(BIN, 'fake-fail')));
    return scratch;
  }

  function capture() {
    const out: string[] = [];
    const err: string[] = [];
    return { out, err, io: { out: (line: string) => out.push(line), err: (line: string) => err.push(line) } };
  }

  it('prints a JSON array with --json', async () => {
    const dir = await writeAdapters();
    const { out, err, io } = capture();
    expect(await detect({ dir, json: true, refresh: false }, io)).toBe(0);
    expect(err).toEqual([]);
    expect(JSON.parse(out.join('\n'))).toEqual([
      {
        cli: 'fake-ok',
        displayName: 'Fake OK',
        available: true,
        version: 'fake-ok 1.2.3',
        capabilities: ['code_implementation', 'testing'],
      },
      {
        cli: 'fake-fail',
        displayName: 'Fake Fail',
        available: false,
        version: null,
        capabilities: ['code_implementation', 'testing'],
        reason: `${join(BIN, 'fake-fail')}: exit code 1 (fake-fail: cannot load its configuration)`,
      },
    ]);
  });

  it('prints a table otherwise', async () => {
    const dir = await writeAdapters();
    const { out, io } = capture();
    expect(await detect({ dir, json: false, refresh: true }, io)).toBe(0);
    expect(out[0]).toMatch(/^CLI\s+NAME\s+STATUS\s+VERSION \/ REASON\s+CAPABILITIES$/);
    expect(out[1]).toMatch(
      /^fake-ok\s+Fake OK\s+available\s+fake-ok 1\.2\.3\s+code_implementation, testing$/,
    );
    expect(out[2]).toMatch(/^fake-fail\s+Fake Fail\s+not installed\s+.*exit code 1/);
    expect(out.at(-1)).toBe('1 of 2 CLIs available');
  });

  it('exits 2 on broken adapter files and on a missing folder', async () => {
    const broken = capture();
    expect(
      await detect({ dir: join(FIXTURES, 'adapters-bad'), json: false, refresh: false }, broken.io),
    ).toBe(2);
    expect(broken.out).toEqual([]);
    expect(broken.err.at(-1)).toMatch(/^flotilla detect: fix the adapter files first/);

    const missing = capture();
    expect(await detect({ dir: join(scratch, 'nope'), json: true, refresh: false }, missing.io)).toBe(2);
    expect(missing.err).toEqual([`${join(scratch, 'nope')}: adapter folder not found`]);
  });
});
