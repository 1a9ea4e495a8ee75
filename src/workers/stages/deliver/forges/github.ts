/**
 * GitHub's REST API (docs.github.com/rest/pulls/pulls, version 2022-11-28): pull requests are listed
 * with `head=owner:branch`, opened with POST /repos/{owner}/{repo}/pulls ({ title, head, base, body,
 * draft }), updated with PATCH …/pulls/{number} ({ title, body }); labels go through the issues API
 * (POST /repos/{owner}/{repo}/issues/{number}/labels { labels }), since a pull request is an issue.
 * Authorization: Bearer <token>. GitHub Enterprise Server speaks the same under /api/v3.
 */
import type { ForgeClient, ForgeClientOptions, PullRequestInput, PullRequestRef } from './forge.js';
import { ForgeError, type ForgeHttp, forgeRequest } from './http.js';

interface GitHubPull {
  readonly number: number;
  readonly html_url: string;
  readonly head?: { readonly ref?: string };
  readonly base?: { readonly ref?: string };
}

export function createGitHubClient(options: ForgeClientOptions): ForgeClient {
  const [owner, repo, ...rest] = options.project.split('/');
  if (!owner || !repo || rest.length > 0) {
    throw new ForgeError(`GitHub: '${options.project}' is not an owner/repository path`, null, false);
  }
  const http: ForgeHttp = {
    name: 'GitHub',
    apiUrl: options.apiUrl,
    token: options.token,
    headers: {
      Authorization: `Bearer ${options.token}`,
      Accept: 'application/vnd.github+json',
      'X-GitHub-Api-Version': '2022-11-28',
    },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const pulls = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/pulls`;
  const ref = (pull: GitHubPull): PullRequestRef => ({ number: pull.number, url: pull.html_url });
  return {
    forge: 'github',
    async findOpen(head, base) {
      const query = new URLSearchParams({ state: 'open', head: `${owner}:${head}`, base, per_page: '100' });
      const found = await forgeRequest<GitHubPull[]>(http, { method: 'GET', path: `${pulls}?${query}` });
      const pull = found.find((p) => (p.head?.ref ?? head) === head && (p.base?.ref ?? base) === base);
      return pull ? ref(pull) : null;
    },
    async open(input: PullRequestInput) {
      const body = {
        title: input.title,
        head: input.head,
        base: input.base,
        body: input.body,
        draft: input.draft,
      };
      return ref(await forgeRequest<GitHubPull>(http, { method: 'POST', path: pulls, body }));
    },
    async update(pr, input) {
      const body = { title: input.title, body: input.body };
      return ref(
        await forgeRequest<GitHubPull>(http, { method: 'PATCH', path: `${pulls}/${pr.number}`, body }),
      );
    },
    async label(pr, labels) {
      if (labels.length === 0) return [];
      const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/issues/${pr.number}/labels`;
      await forgeRequest(http, { method: 'POST', path, body: { labels } });
      return [];
    },
  };
}
