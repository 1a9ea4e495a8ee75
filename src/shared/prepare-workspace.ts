/**
 * What a submit needs from git: the mission's workspace made ready, a repository every host can
 * reach with the integration branch at the base commit. The producer asks for it through this
 * contract; the workers' git does it (workers/workspace/prepare-workspace.ts), and the library's
 * client (src/client.ts) and the CLI put the two together.
 */

export interface PrepareWorkspaceOptions {
  /** A path (absolute, or relative to the working directory) or a URL. */
  readonly workspace: string;
  /** A branch, tag or commit; default the repo's HEAD. */
  readonly base?: string;
  readonly missionId: string;
  /** Where a URL workspace is cloned to create the branch; default as for worker hosts. */
  readonly cacheDir?: string;
}

export interface PreparedWorkspace {
  /** What hosts clone: an absolute path or the URL as given. */
  readonly repo: string;
  readonly baseCommit: string;
  readonly branch: string;
  /**
   * One sentence for each thing a person would not expect to happen silently: a folder created or
   * made a repository (and what was committed), uncommitted changes the mission does not see.
   */
  readonly notes: readonly string[];
}

export type PrepareWorkspace = (options: PrepareWorkspaceOptions) => Promise<PreparedWorkspace>;
