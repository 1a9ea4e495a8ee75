/**
 * A seam in the in-process ref writer (src/workers/workspace/ref-files.ts) for tests that must act at the
 * moment a ref is written: hold a publish until other gates queue behind it, or let "another host"
 * move the branch just before it. A test file installs it with
 *
 *   vi.mock('…/src/workers/workspace/ref-files.js', async (original) =>
 *     (await import('…/helpers/ref-write-seam.js')).seamed(await original()));
 *
 * (imported inside the factory: vi.mock runs before the file's own imports), and sets `refWrites`.
 */
import type * as RefFiles from '../../src/workers/workspace/ref-files.js';

export const refWrites = {
  /** Runs before each write, with the ref's name. */
  before: null as null | ((ref: string) => Promise<void>),
  /** What each write of a branch (`refs/heads/…`) answered, in order. */
  answers: [] as string[],
};

/** Resets the seam (after each test). */
export function resetRefWrites(): void {
  refWrites.before = null;
  refWrites.answers = [];
}

/** The module with its writer behind the seam. */
export function seamed(actual: typeof RefFiles): typeof RefFiles {
  return {
    ...actual,
    writeRefFile: async (...args: Parameters<typeof actual.writeRefFile>) => {
      await refWrites.before?.(args[1]);
      const answer = await actual.writeRefFile(...args);
      if (args[1].startsWith('refs/heads/')) refWrites.answers.push(answer);
      return answer;
    },
  };
}
