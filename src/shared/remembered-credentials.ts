/**
 * The credentials this process took out of workspace URLs at submit (url-credentials.ts), kept in
 * its memory only: never in Redis, a file, a log or an environment an agent inherits. The
 * submitting process's own git uses them (the clone and push that make the integration branch),
 * and so do worker hosts in the same process (`flotilla run`, a script that calls startHost());
 * hosts elsewhere authenticate with their own git credential helper or GIT_ASKPASS.
 */
import type { UrlCredential } from './url-credentials.js';

export interface RememberedCredential extends UrlCredential {
  /** The repository URL the credential is for, without any userinfo (`https://host/r.git`). */
  readonly url: string;
}

/** Keyed by the URL without userinfo; a later submit of the same repository replaces the value. */
const remembered = new Map<string, RememberedCredential>();

/** The URL as git's `http.<url>.*` config matches it: any username. */
export function withoutUserinfo(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#]*@/i, '$1');
}

export function rememberCredential(url: string, credential: UrlCredential): void {
  const key = withoutUserinfo(url);
  remembered.set(key, { url: key, username: credential.username, password: credential.password });
}

/** Every credential remembered, for git's network commands (workers/workspace/git.ts). */
export function rememberedCredentials(): readonly RememberedCredential[] {
  return [...remembered.values()];
}

/** For tests, which play several processes in one. */
export function forgetCredentials(): void {
  remembered.clear();
}
