/**
 * What delivery asks of a forge, the same for GitHub, GitLab and Gitea/Forgejo: find the open pull
 * request from a branch into a base, open one, update one, label one. Each forge's file maps these
 * to its documented REST endpoints.
 */
import type { Forge } from '../../../../shared/mission.js';

export interface PullRequestInput {
  readonly head: string;
  readonly base: string;
  readonly title: string;
  readonly body: string;
  readonly draft: boolean;
  readonly labels: readonly string[];
}

export interface PullRequestRef {
  /** GitHub's and Gitea's number, GitLab's `iid` (the `!12` of a merge request). */
  readonly number: number;
  /** The page a person opens. */
  readonly url: string;
}

export interface ForgeClient {
  readonly forge: Forge;
  /** The open pull request from `head` into `base`, or null. */
  findOpen(head: string, base: string): Promise<PullRequestRef | null>;
  open(input: PullRequestInput): Promise<PullRequestRef>;
  /** Sets title and body (and labels) of an existing pull request. */
  update(pr: PullRequestRef, input: PullRequestInput): Promise<PullRequestRef>;
  /**
   * Adds `labels` to a pull request it opened or updated (where the forge cannot do it as part of
   * open/update); returns the labels it could not add, with why.
   */
  label(pr: PullRequestRef, labels: readonly string[]): Promise<string[]>;
}

export interface ForgeClientOptions {
  readonly apiUrl: string;
  /** The project's path on the forge (`owner/repo`; GitLab: `group/sub/project`). */
  readonly project: string;
  readonly token: string;
  readonly fetch?: typeof fetch;
}
