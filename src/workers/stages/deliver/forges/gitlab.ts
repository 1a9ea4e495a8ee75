/**
 * GitLab's merge requests API (docs.gitlab.com/api/merge_requests): the project is named by its
 * URL-encoded path (`group%2Fsub%2Fproject`); open merge requests are listed with
 * `state=opened&source_branch=…&target_branch=…`, opened with POST /projects/:id/merge_requests
 * ({ source_branch, target_branch, title, description, labels: "a,b" }), updated with PUT
 * …/merge_requests/:iid ({ title, description, add_labels }). A draft is a `Draft:` title.
 * Authentication: the `PRIVATE-TOKEN` header.
 */
import type { ForgeClient, ForgeClientOptions, PullRequestRef } from './forge.js';
import { type ForgeHttp, forgeRequest } from './http.js';

interface GitLabMergeRequest {
  readonly iid: number;
  readonly web_url: string;
  readonly source_branch?: string;
  readonly target_branch?: string;
}

export function createGitLabClient(options: ForgeClientOptions): ForgeClient {
  const http: ForgeHttp = {
    name: 'GitLab',
    apiUrl: options.apiUrl,
    token: options.token,
    headers: { 'PRIVATE-TOKEN': options.token, Accept: 'application/json' },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const mrs = `/projects/${encodeURIComponent(options.project)}/merge_requests`;
  const ref = (mr: GitLabMergeRequest): PullRequestRef => ({ number: mr.iid, url: mr.web_url });
  return {
    forge: 'gitlab',
    async findOpen(head, base) {
      const query = new URLSearchParams({ state: 'opened', source_branch: head, target_branch: base });
      const found = await forgeRequest<GitLabMergeRequest[]>(http, {
        method: 'GET',
        path: `${mrs}?${query}`,
      });
      const mr = found.find((m) => (m.source_branch ?? head) === head && (m.target_branch ?? base) === base);
      return mr ? ref(mr) : null;
    },
    async open(input) {
      const body = {
        source_branch: input.head,
        target_branch: input.base,
        title: input.title,
        description: input.body,
        ...(input.labels.length > 0 ? { labels: input.labels.join(',') } : {}),
      };
      return ref(await forgeRequest<GitLabMergeRequest>(http, { method: 'POST', path: mrs, body }));
    },
    async update(pr, input) {
      const body = {
        title: input.title,
        description: input.body,
        ...(input.labels.length > 0 ? { add_labels: input.labels.join(',') } : {}),
      };
      return ref(
        await forgeRequest<GitLabMergeRequest>(http, { method: 'PUT', path: `${mrs}/${pr.number}`, body }),
      );
    },
    // Labels go with the open and the update: GitLab creates a label it does not know yet.
    label: async () => [],
  };
}
