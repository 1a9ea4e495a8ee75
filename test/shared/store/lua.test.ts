import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TASK_STATUSES, TERMINAL_TASK_STATUSES } from '../../../src/shared/contracts.js';
import { ROOT } from '../../helpers/paths.js';

const LUA = join(ROOT, 'src', 'shared', 'store', 'lua');

describe('Lua scripts agree with the TypeScript contracts', () => {
  it("common.lua's terminal() names exactly the terminal task statuses", () => {
    const common = readFileSync(join(LUA, 'common.lua'), 'utf8');
    const body = /local function terminal\(s\)\n\s*return (.*)\nend/.exec(common)?.[1] ?? '';
    const named = [...body.matchAll(/s == '([a-z_]+)'/g)].map((m) => m[1]).sort();
    expect(named).toEqual([...TERMINAL_TASK_STATUSES].sort());
  });

  it('every status a script writes is a task status', () => {
    const seen = new Set<string>();
    for (const file of ['mark-2.lua', 'settle-5.lua', 'cancel-2.lua', 'common.lua']) {
      const text = readFileSync(join(LUA, file), 'utf8');
      const written = [
        ...text.matchAll(/status = (?:\(action == 'fail'\) and )?'([a-z_]+)'(?: or '([a-z_]+)')?/g),
      ]
        .flatMap((m) => [m[1], m[2]])
        .filter((s): s is string => Boolean(s));
      for (const status of written) {
        expect(TASK_STATUSES, `${file}: ${status}`).toContain(status);
        seen.add(status);
      }
    }
    // The pattern must keep finding what settle and cancel write, or this check checks nothing.
    expect([...seen].sort()).toEqual([
      'awaiting_approval',
      'cancelled',
      'completed',
      'failed',
      'needs_input',
      'queued',
      'retrying',
      'skipped',
    ]);
  });
});
