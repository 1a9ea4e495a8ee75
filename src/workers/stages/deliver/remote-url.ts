/**
 * What a git remote's URL says about where to open a pull request: the forge's host, the project's
 * path on it, which forge it is and where its REST API lives. Pure, so the table tests read it.
 */
import type { Forge } from '../../../shared/mission.js';

export interface RemoteLocation {
  /** `https`, `http` or `ssh` (scp-like `git@host:path` is ssh). */
  readonly scheme: string;
  /** Host name, lower case, with `:port` for an http(s) URL that names one. */
  readonly host: string;
  /** The project's path on the forge, without `.git` and slashes at either end (`owner/repo`). */
  readonly path: string;
}

const SCP_LIKE = /^(?:[^@/\\:]+@)?([^/\\:]+):(?!\/\/)(.+)$/;

/** Where a remote URL points, or null for a path, a `file://` URL or anything without a host. */
export function parseRemoteUrl(url: string): RemoteLocation | null {
  const scp = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? null : SCP_LIKE.exec(url);
  if (scp) {
    const path = projectPath(scp[2] ?? '');
    return path ? { scheme: 'ssh', host: (scp[1] ?? '').toLowerCase(), path } : null;
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return null;
  }
  const scheme = parsed.protocol.replace(/:$/, '').toLowerCase();
  if (!['https', 'http', 'ssh', 'git'].includes(scheme) || !parsed.hostname) return null;
  const path = projectPath(decodeURIComponent(parsed.pathname));
  if (!path) return null;
  const port = parsed.port && (scheme === 'https' || scheme === 'http') ? `:${parsed.port}` : '';
  return { scheme, host: `${parsed.hostname.toLowerCase()}${port}`, path };
}

function projectPath(raw: string): string {
  return raw
    .replace(/^\/+/, '')
    .replace(/\/+$/, '')
    .replace(/\.git$/, '');
}

/**
 * A URL (or a message quoting URLs) as it may be shown and stored: user names and passwords taken
 * out (a workspace URL may carry a token: `https://x-access-token:…@github.com/o/r.git`).
 */
export function withoutCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^@/\s]*@/gi, '$1');
}

/** The forge a host name is known to be, or null: then `deliver.forge` must say. */
export function forgeOfHost(host: string): Forge | null {
  const name = host.replace(/:\d+$/, '');
  if (name === 'github.com' || name.endsWith('.ghe.com')) return 'github';
  if (name === 'gitlab.com' || name.startsWith('gitlab.')) return 'gitlab';
  if (['codeberg.org', 'gitea.com'].includes(name) || /^(gitea|forgejo)\./.test(name)) return 'gitea';
  return null;
}

/**
 * The forge's REST API root for a remote on it: api.github.com for github.com (GitHub Enterprise
 * Server: `/api/v3` on its host), `/api/v4` for GitLab, `/api/v1` for Gitea and Forgejo. An ssh
 * remote's API is taken to be https on the same host.
 */
export function defaultApiUrl(forge: Forge, remote: RemoteLocation): string {
  const scheme = remote.scheme === 'http' ? 'http' : 'https';
  const host =
    remote.scheme === 'http' || remote.scheme === 'https' ? remote.host : remote.host.replace(/:\d+$/, '');
  if (forge === 'github')
    return host === 'github.com' ? 'https://api.github.com' : `${scheme}://${host}/api/v3`;
  return `${scheme}://${host}/api/${forge === 'gitlab' ? 'v4' : 'v1'}`;
}
