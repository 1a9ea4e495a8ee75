/**
 * How flotilla's own git authenticates with a credential taken out of a workspace URL at submit
 * (shared/url-credentials.ts, kept by shared/remembered-credentials.ts), without the credential
 * reaching an argument, a config file or a message.
 */
import { rememberedCredentials } from '../../shared/remembered-credentials.js';

/** The commands that talk to a remote, and so may need a credential. */
const NETWORK_COMMANDS = new Set(['clone', 'fetch', 'push', 'ls-remote', 'pull', 'remote']);

/** The git subcommand of an argument list: the first word after global options (`-C dir`, `-c k=v`). */
export function gitSubcommand(args: readonly string[]): string | undefined {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-C' || arg === '-c') i++;
    else if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

/**
 * Config that authenticates a network command with the credentials this process took out of
 * workspace URLs (shared/remembered-credentials.ts): an `http.<url>.extraHeader` per repository,
 * which git matches against the remote's URL, so each goes only to its own repository; given
 * through GIT_CONFIG_COUNT, the environment of this one git process, never its arguments (which
 * `ps` shows) or a config file (which an agent's checkout could read). Hooks are off for such a
 * command: a hook would inherit that environment, and the cache's hooks folder is within an
 * agent's reach.
 */
export function credentialConfig(args: readonly string[], env: Record<string, string>): void {
  const credentials = rememberedCredentials();
  if (credentials.length === 0 || !NETWORK_COMMANDS.has(gitSubcommand(args) ?? '')) return;
  const entries: Array<[string, string]> = [['core.hooksPath', '/dev/null']];
  for (const { url, username, password } of credentials) {
    const basic = Buffer.from(`${username}:${password}`).toString('base64');
    entries.push([`http.${url}.extraHeader`, `Authorization: Basic ${basic}`]);
  }
  let count = Number.parseInt(env.GIT_CONFIG_COUNT ?? '0', 10) || 0;
  for (const [key, value] of entries) {
    env[`GIT_CONFIG_KEY_${count}`] = key;
    env[`GIT_CONFIG_VALUE_${count}`] = value;
    count++;
  }
  env.GIT_CONFIG_COUNT = String(count);
}
