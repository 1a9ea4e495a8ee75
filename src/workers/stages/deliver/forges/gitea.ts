/**
 * Gitea's (and Forgejo's) pulls API (gitea.com/api/swagger): GET /repos/{owner}/{repo}/pulls
 * ?state=open (paged by `page` and `limit`; filtered here by head and base), POST …/pulls ({ head,
 * base, title, body, labels: [ids] }), PATCH …/pulls/{index} ({ title, body, labels: [ids] });
 * labels are named by id, read from GET …/labels. A draft is a `WIP:` title. Authentication:
 * `Authorization: token <token>`.
 */
import type { ForgeClient, ForgeClientOptions, PullRequestInput, PullRequestRef } from './forge.js';
import { ForgeError, type ForgeHttp, forgeRequest } from './http.js';

interface GiteaPull {
  readonly number: number;
  readonly html_url: string;
  readonly head?: { readonly ref?: string };
  readonly base?: { readonly ref?: string };
}

/** Pages of open pull requests read to find delivery's own; a repository with more is unusual. */
const PAGE_LIMIT = 50;
const MAX_PAGES = 20;

export function createGiteaClient(options: ForgeClientOptions): ForgeClient {
  const [owner, repo, ...rest] = options.project.split('/');
  if (!owner || !repo || rest.length > 0) {
    throw new ForgeError(`Gitea: '${options.project}' is not an owner/repository path`, null, false);
  }
  const http: ForgeHttp = {
    name: 'Gitea',
    apiUrl: options.apiUrl,
    token: options.token,
    headers: { Authorization: `token ${options.token}`, Accept: 'application/json' },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  const repoPath = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  const ref = (pull: GiteaPull): PullRequestRef => ({ number: pull.number, url: pull.html_url });
  let known: Promise<Map<string, number>> | undefined;
  /** The ids of the labels asked for, and the names the repository has no label for. */
  const labelIds = async (names: readonly string[]) => {
    if (names.length === 0) return { ids: [] as number[], missing: [] as string[] };
    known ??= forgeRequest<{ id: number; name: string }[]>(http, {
      method: 'GET',
      path: `${repoPath}/labels?limit=${PAGE_LIMIT}`,
    }).then((labels) => new Map(labels.map((label) => [label.name, label.id])));
    const byName = await known;
    return {
      ids: names.flatMap((name) => byName.get(name) ?? []),
      missing: names.filter((name) => !byName.has(name)),
    };
  };
  let missingLabels: string[] = [];
  const withLabels = async (input: PullRequestInput) => {
    const { ids, missing } = await labelIds(input.labels);
    missingLabels = missing;
    return ids.length > 0 ? { labels: ids } : {};
  };
  return {
    forge: 'gitea',
    async findOpen(head, base) {
      for (let page = 1; page <= MAX_PAGES; page++) {
        const query = new URLSearchParams({ state: 'open', page: String(page), limit: String(PAGE_LIMIT) });
        const found = await forgeRequest<GiteaPull[]>(http, {
          method: 'GET',
          path: `${repoPath}/pulls?${query}`,
        });
        const pull = found.find((p) => p.head?.ref === head && p.base?.ref === base);
        if (pull) return ref(pull);
        if (found.length < PAGE_LIMIT) return null;
      }
      return null;
    },
    async open(input) {
      const body = {
        head: input.head,
        base: input.base,
        title: input.title,
        body: input.body,
        ...(await withLabels(input)),
      };
      return ref(await forgeRequest<GiteaPull>(http, { method: 'POST', path: `${repoPath}/pulls`, body }));
    },
    async update(pr, input) {
      const body = { title: input.title, body: input.body, ...(await withLabels(input)) };
      return ref(
        await forgeRequest<GiteaPull>(http, {
          method: 'PATCH',
          path: `${repoPath}/pulls/${pr.number}`,
          body,
        }),
      );
    },
    // Labels went with the open or update; those the repository lacks are named (Gitea makes none).
    label: async () =>
      missingLabels.map(
        (name) => `label '${name}' does not exist in ${owner}/${repo} (create it on the forge)`,
      ),
  };
}
