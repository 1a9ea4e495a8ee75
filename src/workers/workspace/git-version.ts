/**
 * The git a host needs. The gate merges with `git merge-tree --write-tree` (and `--name-only`),
 * both new in git 2.38; an older git would fail every approval, so hosts refuse to start instead.
 */

export const MIN_GIT_VERSION = [2, 38, 0] as const;

export type GitVersion = readonly [major: number, minor: number, patch: number];

/**
 * `git version 2.39.5`, `git version 2.37.1 (Apple Git-137.1)`, `git version 2.45.2.windows.1`,
 * `git version 2.40.0-rc1`: the first three numbers; a missing patch counts as 0. Null when the
 * text holds no version at all.
 */
export function parseGitVersion(text: string): GitVersion | null {
  const match = /git version (\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!match) return null;
  return [Number(match[1]), Number(match[2]), Number(match[3] ?? 0)];
}

export function compareVersions(a: GitVersion, b: GitVersion): number {
  for (let i = 0; i < 3; i++) {
    const difference = (a[i] ?? 0) - (b[i] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

export function formatVersion(version: GitVersion): string {
  return version.join('.');
}

/** Null when `git --version` printed a usable git; otherwise the sentence a person reads. */
export function gitVersionProblem(versionOutput: string): string | null {
  const version = parseGitVersion(versionOutput);
  const needed = formatVersion(MIN_GIT_VERSION);
  if (!version) {
    return `could not read the git version from 'git --version' (${JSON.stringify(versionOutput.trim().slice(0, 80))}); flotilla needs git ${needed} or newer`;
  }
  if (compareVersions(version, MIN_GIT_VERSION) < 0) {
    return `git ${formatVersion(version)} is too old: flotilla needs git ${needed} or newer (for 'git merge-tree --write-tree')`;
  }
  return null;
}
