/**
 * Credentials written into URLs (`https://user:token@host/repo.git`, `https://ghp_…@github.com/…`,
 * `redis://:password@host`): taken out of a workspace URL before a mission is stored, and masked
 * in any text flotilla shows, stores or logs. The URL forms are RFC 3986's `userinfo@` authority.
 */

/** What git needs to authenticate as the URL did: the userinfo, percent-decoded. */
export interface UrlCredential {
  readonly username: string;
  /** '' for a token written alone as the userinfo (git then sends it with an empty password). */
  readonly password: string;
}

export interface SplitUrl {
  /** The URL without its secret: a plain username stays, a password or a token-only userinfo goes. */
  readonly url: string;
  /** What was taken out; undefined when the URL carried no secret. */
  readonly credential?: UrlCredential;
}

/** Replaces a secret in shown text: `https://deploy:***@host`, `https://***@github.com`. */
export const MASK = '***';

/**
 * Prefixes of the access tokens people paste as a URL's username (GitHub, GitLab, Hugging Face,
 * Slack, npm); anything else counts as a token by its shape (tokenShaped below).
 */
const TOKEN_PREFIXES = [
  'ghp_',
  'gho_',
  'ghu_',
  'ghs_',
  'ghr_',
  'github_pat_',
  'glpat-',
  'gloas-',
  'gldt-',
  'glrt-',
  'glptt-',
  'hf_',
  'xoxb-',
  'xoxp-',
  'npm_',
];

/**
 * Twenty characters of a token alphabet with letters and digits: no account name looks like
 * that, and every random token (hex, base32, base64url) does.
 */
const TOKEN_MIN_LENGTH = 20;

function tokenShaped(name: string): boolean {
  return (
    name.length >= TOKEN_MIN_LENGTH &&
    /^[A-Za-z0-9_.~%+=-]+$/.test(name) &&
    /\d/.test(name) &&
    /[A-Za-z]/.test(name)
  );
}

/** True when a URL's username is itself a secret (`https://ghp_…@github.com`), not an account name. */
export function looksLikeToken(username: string): boolean {
  const lower = username.toLowerCase();
  return TOKEN_PREFIXES.some((prefix) => lower.startsWith(prefix)) || tokenShaped(username);
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

/**
 * `scheme://userinfo@`: the userinfo runs to the last `@` before the path, so an unencoded `@` in
 * a password does not leave its tail behind.
 */
const URL_AUTHORITY = /^([a-z][a-z0-9+.-]*:\/\/)([^/?#]*)@/i;

/**
 * Takes the secret out of a URL: its password, or the whole userinfo when that is a token alone.
 * A username without a password stays (`https://deploy@host/r.git`, `ssh://git@host/r.git`): it
 * names the account a credential helper answers for. Paths and scp-like `git@host:r.git` come back
 * as they are.
 */
export function splitUrlCredential(url: string): SplitUrl {
  const match = URL_AUTHORITY.exec(url);
  if (!match) return { url };
  const [whole, scheme = '', userinfo = ''] = match;
  const rest = url.slice(whole.length);
  const colon = userinfo.indexOf(':');
  const rawUser = colon === -1 ? userinfo : userinfo.slice(0, colon);
  const rawPassword = colon === -1 ? '' : userinfo.slice(colon + 1);
  const username = decode(rawUser);
  if (looksLikeToken(username)) {
    return { url: `${scheme}${rest}`, credential: { username, password: decode(rawPassword) } };
  }
  if (rawPassword === '') return { url };
  const kept = rawUser === '' ? '' : `${rawUser}@`;
  return { url: `${scheme}${kept}${rest}`, credential: { username, password: decode(rawPassword) } };
}

/** True when splitUrlCredential() would take something out. */
export function hasUrlCredential(url: string): boolean {
  return splitUrlCredential(url).credential !== undefined;
}

/**
 * Every `scheme://userinfo@` in free text: quotes, brackets and whitespace end a URL, and the
 * userinfo again runs to the last `@` of the authority.
 */
const URL_IN_TEXT = /([a-z][a-z0-9+.-]*:\/\/)([^\s/?#'"`<>()[\]]*)@/gi;

function maskUserinfo(userinfo: string): string {
  const colon = userinfo.indexOf(':');
  const user = colon === -1 ? userinfo : userinfo.slice(0, colon);
  if (looksLikeToken(decode(user))) return MASK;
  if (colon === -1) return userinfo;
  return `${user}:${MASK}`;
}

/**
 * Masks the credentials of every URL in `text`, the same way for a git command line, a Redis URL,
 * a log line or an error: `git clone -- https://deploy:***@host/r.git`. Text without one comes back
 * unchanged (and fast: most of it has no `://` at all).
 */
export function redactUrlCredentials(text: string): string {
  if (!text.includes('://')) return text;
  return text.replace(
    URL_IN_TEXT,
    (_whole, scheme: string, userinfo: string) => `${scheme}${maskUserinfo(userinfo)}@`,
  );
}
