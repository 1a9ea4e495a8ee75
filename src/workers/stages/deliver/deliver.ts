/**
 * One try at delivering a finished mission (`deliver:`): push the integration branch, then, with
 * `pull_request`, find the open pull request from that branch into its base and update it, or open
 * one. Finding first makes a try idempotent: a try replayed after a crash (its host killed after the
 * forge opened the pull request, before anything was recorded) updates that one and never opens a
 * second. Each step is written to the audit trail as it happens. The BullMQ job (processor.ts) and
 * `flotilla deliver <id>` both run this; record.ts writes what it came to.
 */
import type { ForgeTokens } from '../../../shared/config.js';
import { integrationBranch } from '../../../shared/contracts.js';
import { FlotillaError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { DeliverSpec, Forge } from '../../../shared/mission.js';
import type { MissionStore } from '../../../shared/store/mission-store.js';
import { DeliveryError } from './delivery-error.js';
import type { ForgeClient, ForgeClientOptions, PullRequestInput } from './forges/forge.js';
import { createGiteaClient } from './forges/gitea.js';
import { createGitHubClient } from './forges/github.js';
import { createGitLabClient } from './forges/gitlab.js';
import { ForgeError } from './forges/http.js';
import { formatPullRequestBody } from './pr-body.js';
import { type PushResult, pushBranch, remoteBranchCommit, remoteDefaultBranch } from './push.js';
import { defaultApiUrl, forgeOfHost, parseRemoteUrl, type RemoteLocation } from './remote-url.js';

export interface DeliverContext {
  readonly store: MissionStore;
  readonly cacheDir: string;
  readonly tokens: ForgeTokens;
  readonly logger: Logger;
  /** Who delivers, for the audit trail: a host id, or `cli` for `flotilla deliver`. */
  readonly host: string;
  /** Injected for tests; the global fetch by default. */
  readonly fetch?: typeof fetch;
}

export interface DeliveryOutcome {
  readonly push: PushResult;
  readonly pullRequest: {
    readonly forge: Forge;
    readonly number: number;
    readonly url: string;
    readonly action: 'opened' | 'updated';
  } | null;
  /** What a person should hear that did not fail the delivery (a label the forge refused). */
  readonly notes: readonly string[];
}

/** A title longer than this is cut: GitHub takes 256 characters, GitLab 255. */
const MAX_TITLE_CHARS = 250;

const CLIENTS: Record<Forge, (options: ForgeClientOptions) => ForgeClient> = {
  github: createGitHubClient,
  gitlab: createGitLabClient,
  gitea: createGiteaClient,
};

/**
 * Throws DeliveryError (its `retryable` says whether another try can help); `progress.push` says
 * what was pushed before a later step failed.
 */
export async function deliverOnce(
  ctx: DeliverContext,
  missionId: string,
  progress: { push?: PushResult } = {},
): Promise<DeliveryOutcome> {
  const { meta, spec } = await ctx.store.getMission(missionId);
  const deliver = spec.deliver;
  if (!deliver) throw new FlotillaError('usage', `mission ${missionId} has no deliver: section`);
  const branch = integrationBranch(missionId);
  const pushed = await pushBranch({
    repo: meta.repo,
    branch,
    cacheDir: ctx.cacheDir,
    ...(deliver.push ? { push: deliver.push } : {}),
  }).catch(asDeliveryError);
  progress.push = pushed;
  await audit(ctx, missionId, {
    kind: 'delivery',
    action: 'pushed',
    remote: pushed.remote,
    branch,
    commit: pushed.commit,
  });
  if (!deliver.pullRequest) return { push: pushed, pullRequest: null, notes: [] };
  const { client, notes } = await forgeClient(ctx, deliver, pushed);
  const pr = deliver.pullRequest;
  const base = await pullRequestBase(deliver, spec.base, pushed);
  const [status, receipt] = await Promise.all([ctx.store.status(missionId), ctx.store.getReceipt(missionId)]);
  const input: PullRequestInput = {
    head: branch,
    base,
    title: pullRequestTitle(pr.title ?? spec.goal, pr.draft, client.forge),
    body: formatPullRequestBody({ status, receipt, tip: pushed.commit, baseCommit: meta.baseCommit }),
    draft: pr.draft,
    labels: pr.labels,
  };
  const found = await client.findOpen(branch, base).catch(asDeliveryError);
  const made = await (found ? client.update(found, input) : client.open(input)).catch(asDeliveryError);
  const refused = await client.label(made, pr.labels).catch(asDeliveryError);
  const pullRequest = {
    forge: client.forge,
    number: made.number,
    url: made.url,
    action: found ? ('updated' as const) : ('opened' as const),
  };
  await audit(ctx, missionId, {
    kind: 'delivery',
    action: 'pull-request',
    forge: client.forge,
    number: made.number,
    url: made.url,
    opened: !found,
    branch,
  });
  return { push: pushed, pullRequest, notes: [...notes, ...refused] };
}

async function forgeClient(
  ctx: DeliverContext,
  deliver: DeliverSpec,
  pushed: PushResult,
): Promise<{ client: ForgeClient; notes: string[] }> {
  const remote = parseRemoteUrl(pushed.url);
  if (!remote) {
    throw new DeliveryError(
      `the remote ${pushed.remote} is not on a forge (a path or file:// URL): a pull request needs an https or ssh remote on GitHub, GitLab or Gitea`,
      false,
    );
  }
  const forge = deliver.forge ?? forgeOfHost(remote.host);
  if (!forge) {
    throw new DeliveryError(
      `cannot tell which forge ${remote.host} is: set deliver.forge (github, gitlab or gitea) and, for a self-hosted one, deliver.api_url`,
      false,
    );
  }
  const token = ctx.tokens.any ?? ctx.tokens[forge];
  if (!token) {
    throw new DeliveryError(
      `no token to open a pull request on ${remote.host}: set FLOTILLA_FORGE_TOKEN (or ${TOKEN_VARIABLE[forge]}) in the environment of the host that delivers`,
      false,
    );
  }
  const apiUrl = deliver.apiUrl ?? defaultApiUrl(forge, remote);
  try {
    const client = CLIENTS[forge]({
      apiUrl,
      project: projectOf(forge, remote),
      token,
      ...(ctx.fetch ? { fetch: ctx.fetch } : {}),
    });
    return { client, notes: [] };
  } catch (error) {
    return asDeliveryError(error);
  }
}

const TOKEN_VARIABLE: Record<Forge, string> = {
  github: 'GITHUB_TOKEN',
  gitlab: 'GITLAB_TOKEN',
  gitea: 'GITEA_TOKEN',
};

/** GitLab projects may sit in nested groups; GitHub and Gitea have exactly owner/repository. */
function projectOf(forge: Forge, remote: RemoteLocation): string {
  if (forge === 'gitlab') return remote.path;
  return remote.path.split('/').slice(-2).join('/');
}

/**
 * The branch the pull request merges into: `pull_request.base`, else the mission's `base` when the
 * remote has a branch of that name (it may be a tag or a commit), else the remote's default branch.
 */
async function pullRequestBase(deliver: DeliverSpec, missionBase: string | undefined, pushed: PushResult) {
  const named = deliver.pullRequest?.base;
  if (named) return named;
  if (missionBase && (await remoteBranchCommit(pushed.url, missionBase, pushed.cwd))) return missionBase;
  const head = await remoteDefaultBranch(pushed.url, pushed.cwd);
  if (head) return head;
  throw new DeliveryError(
    `cannot tell the pull request's base: ${pushed.remote} names no default branch; set deliver.pull_request.base`,
    false,
  );
}

/** GitLab marks a draft by its title (`Draft:`), Gitea and Forgejo by `WIP:`; GitHub by a field. */
export function pullRequestTitle(title: string, draft: boolean, forge: Forge): string {
  const line = title.split('\n')[0]?.trim() ?? '';
  const prefix = !draft || forge === 'github' ? '' : forge === 'gitlab' ? 'Draft: ' : 'WIP: ';
  const full = `${prefix}${line}`;
  return full.length > MAX_TITLE_CHARS ? `${full.slice(0, MAX_TITLE_CHARS - 1)}…` : full;
}

function asDeliveryError(error: unknown): never {
  if (error instanceof DeliveryError) throw error;
  if (error instanceof ForgeError) throw new DeliveryError(error.message, error.retryable);
  throw error;
}

async function audit(
  ctx: DeliverContext,
  missionId: string,
  event: Parameters<MissionStore['audit']>[1]['event'],
): Promise<void> {
  await ctx.store.audit(missionId, {
    at: new Date().toISOString(),
    taskId: '',
    attempt: 0,
    stage: 'delivery',
    host: ctx.host,
    event,
  });
}
