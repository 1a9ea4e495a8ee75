/**
 * What an agent CLI, an exit criterion or a critic must never see in its environment: how to reach
 * flotilla's Redis and the keys that make flotilla trust a job, a spec or a receipt. An agent reads
 * untrusted text; one line of an injected prompt that finds `REDIS_URL` connects to the cluster.
 *
 * Two checks, because a secret travels under other names too (`MY_CACHE_URL=redis://:pw@…`, a
 * password a wrapper script exported twice): the variables flotilla and Redis's own tools read are
 * dropped by name, and any variable whose value carries one of the values the host holds (its
 * Redis URL and that URL's password, the job secret, the signing key's path, the board password,
 * the API token, a git credential taken out of a workspace URL) is dropped by value.
 */

/**
 * Dropped by name. flotilla reads `REDIS_URL` (one Redis or `redis+cluster://` seed nodes; no
 * separate password, Sentinel or TLS variable exists in shared/config.ts); `REDISCLI_AUTH` and
 * `REDIS_PASSWORD` are how redis-cli and many scripts carry the password beside it. FLOTILLA_HOME
 * names where the private Redis of `flotilla run` keeps its socket and password. The forge tokens
 * are delivery's, which pushes and opens pull requests for the mission after every agent is done.
 */
export const PRIVATE_ENV: readonly string[] = [
  'REDIS_URL',
  'REDISCLI_AUTH',
  'REDIS_PASSWORD',
  'FLOTILLA_SECRET',
  'FLOTILLA_SIGNING_KEY',
  'FLOTILLA_BOARD_USER',
  'FLOTILLA_BOARD_PASSWORD',
  'FLOTILLA_WEBHOOK_SECRET',
  'FLOTILLA_API_TOKEN',
  'FLOTILLA_HOME',
  // The tokens delivery opens pull requests with (shared/config.ts). Copilot CLI, which also reads
  // GITHUB_TOKEN, authenticates with COPILOT_GITHUB_TOKEN or GH_TOKEN instead.
  'FLOTILLA_FORGE_TOKEN',
  'GITHUB_TOKEN',
  'GITLAB_TOKEN',
  'GITEA_TOKEN',
  'FORGEJO_TOKEN',
];

/**
 * Below this length a private value is matched only as a whole variable: a short password
 * (`pw`) would otherwise drop every variable that happens to contain those letters.
 */
const MIN_SUBSTRING_MATCH = 6;

const privateValues = new Set<string>();

/** Called by a host at start (and by whoever learns a credential): these values never reach a child. */
export function keepFromChildren(values: Iterable<string | undefined>): void {
  for (const value of values) if (value) privateValues.add(value);
}

/** A Redis URL's private parts: the URL itself and its password (as written and decoded). */
export function redisUrlSecrets(url: string | undefined): string[] {
  if (!url) return [];
  const found = [url];
  const auth = /^[a-z+]+:\/\/([^@/]*)@/i.exec(url)?.[1];
  const password = auth?.includes(':') ? auth.slice(auth.indexOf(':') + 1) : auth;
  if (password) {
    found.push(password);
    try {
      found.push(decodeURIComponent(password));
    } catch {
      // not percent-encoded
    }
  }
  return [...new Set(found)];
}

/** True when `name=value` must stay out of a child's environment. */
function isPrivateVariable(name: string, value: string): boolean {
  if (PRIVATE_ENV.includes(name)) return true;
  for (const secret of privateValues) {
    if (value === secret) return true;
    if (secret.length >= MIN_SUBSTRING_MATCH && value.includes(secret)) return true;
  }
  return false;
}

/** The variables of `env` a child may see (`process.env` by default). */
export function publicEnv(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && !isPrivateVariable(name, value)) kept[name] = value;
  }
  return kept;
}
