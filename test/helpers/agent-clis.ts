import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { Turn, TurnUsage } from './model-server.js';

/**
 * How the real agent CLIs (devDependencies) are pointed at a scripted model server: only
 * environment variables and config files in a private HOME, never a change to the adapter files.
 * What each CLI needs, and why, is in docs/TESTING.md.
 */
export const CLI_BIN = join(import.meta.dirname, '../../node_modules/.bin');

/**
 * A scratch folder for real-CLI tests (the CLIs' HOMEs, flotilla's home), outside /tmp. Codex
 * 0.171 refuses to create its helper binaries when CODEX_HOME is under /tmp ("Refusing to create
 * helper binaries under temporary dir"); without bubblewrap it goes on all the same, but with
 * `bwrap` on PATH (CI installs it for --sandbox) its tools run under bwrap and `apply_patch` then
 * fails ("Failed to write file …"). The caller removes the folder.
 */
export async function cliHome(): Promise<string> {
  const parent = join(homedir(), '.cache');
  await mkdir(parent, { recursive: true });
  return mkdtemp(join(parent, 'flotilla-real-cli-'));
}

export type AgentCli = 'claude-code' | 'codex-cli' | 'gemini-cli' | 'opencode';

export interface CliSetup {
  /** The whole environment the CLI starts with (use with `extendEnv: false`, or as a host's). */
  readonly env: Record<string, string>;
}

const BASE_PATH = `${CLI_BIN}${delimiter}${process.env.PATH ?? '/usr/bin:/bin'}`;

/**
 * Writes the config files a CLI reads into `home` and returns its environment. Without `url` (or
 * with `loggedIn: false`) the CLI gets no credentials at all, as on a host nobody logged in to.
 */
export async function setUpCli(
  cli: AgentCli,
  options: { home: string; url?: string; apiKey?: string },
): Promise<CliSetup> {
  const { home, url } = options;
  const key = options.apiKey ?? 'test-key';
  const base = { PATH: BASE_PATH, HOME: home };
  switch (cli) {
    case 'claude-code':
      return {
        env: {
          ...base,
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
          DISABLE_AUTOUPDATER: '1',
          DISABLE_TELEMETRY: '1',
          DISABLE_ERROR_REPORTING: '1',
          CLAUDE_CODE_MAX_RETRIES: '0',
          ...(url ? { ANTHROPIC_BASE_URL: url, ANTHROPIC_API_KEY: key } : {}),
        },
      };
    case 'codex-cli': {
      // OPENAI_BASE_URL is ignored by codex 0.171; a custom provider is the one way to a local
      // server. Retries off, so a 429 ends the run at once instead of after minutes of backoff.
      const codexHome = join(home, '.codex');
      await mkdir(codexHome, { recursive: true });
      const provider = url
        ? [
            'model_provider = "scripted"',
            '',
            '[model_providers.scripted]',
            'name = "scripted"',
            `base_url = "${url}/v1"`,
            'env_key = "SCRIPTED_OPENAI_KEY"',
            'wire_api = "responses"',
            'request_max_retries = 0',
            'stream_max_retries = 0',
            '',
          ]
        : [];
      await writeFile(
        join(codexHome, 'config.toml'),
        [...provider, '[analytics]', 'enabled = false', '', '[features]', 'plugins = false', ''].join('\n'),
      );
      return {
        env: { ...base, CODEX_HOME: codexHome, ...(url ? { SCRIPTED_OPENAI_KEY: key } : {}) },
      };
    }
    case 'gemini-cli': {
      // Without selectedType the CLI refuses the API key ("Invalid auth method selected.", exit 41).
      await mkdir(join(home, '.gemini'), { recursive: true });
      const settings = {
        security: { auth: { selectedType: 'gemini-api-key' } },
        privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
      };
      await writeFile(join(home, '.gemini', 'settings.json'), JSON.stringify(settings, null, 2));
      return {
        env: {
          ...base,
          ...(url ? { GOOGLE_GEMINI_BASE_URL: url, GEMINI_API_KEY: key } : {}),
        },
      };
    }
    case 'opencode': {
      // The adapter's models are `anthropic/…`: the provider of that name is pointed at the
      // scripted server through the openai-compatible package, so its own SDK never goes out.
      const models = ['claude-opus-4-7', 'claude-sonnet-4-6', 'claude-haiku-4-5'];
      const config = {
        $schema: 'https://opencode.ai/config.json',
        autoupdate: false,
        share: 'disabled',
        ...(url
          ? {
              provider: {
                anthropic: {
                  npm: '@ai-sdk/openai-compatible',
                  name: 'scripted',
                  options: { baseURL: `${url}/v1`, apiKey: key },
                  models: Object.fromEntries(models.map((m) => [m, { name: m }])),
                },
              },
              small_model: 'anthropic/claude-haiku-4-5',
            }
          : {}),
      };
      return {
        env: {
          ...base,
          OPENCODE_DISABLE_MODELS_FETCH: 'true',
          OPENCODE_DISABLE_AUTOUPDATE: 'true',
          OPENCODE_PURE: '1',
          OPENCODE_DISABLE_DEFAULT_PLUGINS: 'true',
          OPENCODE_DISABLE_LSP_DOWNLOAD: 'true',
          OPENCODE_DISABLE_CLAUDE_CODE: 'true',
          OPENCODE_DISABLE_SHARE: 'true',
          OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
          XDG_CONFIG_HOME: join(home, '.config'),
          XDG_DATA_HOME: join(home, '.local', 'share'),
          XDG_CACHE_HOME: join(home, '.cache'),
          XDG_STATE_HOME: join(home, '.local', 'state'),
        },
      };
    }
  }
}

/**
 * Sets the host's environment for one test (what its CLIs inherit) and returns the undo. Every
 * other variable a developer's own login could come from is removed for the test, unread.
 */
export function hostEnvironment(values: Record<string, string>): () => void {
  const vendor = /^(ANTHROPIC_|CLAUDE_|OPENAI_|CODEX_|GEMINI_|GOOGLE_|OPENCODE_|XDG_)/;
  const touched = new Set([
    ...Object.keys(values),
    ...Object.keys(process.env).filter((k) => vendor.test(k)),
  ]);
  const saved = new Map([...touched].map((key) => [key, process.env[key]]));
  for (const key of touched) delete process.env[key];
  Object.assign(process.env, values);
  return () => {
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}

/** The scripted turn that makes each CLI write a file with its own tool. */
export function writeFileTurn(cli: AgentCli, path: string, content: string, usage?: TurnUsage): Turn {
  const call = (name: string, input: Record<string, unknown> | string): Turn => ({
    type: 'tool_use',
    name,
    input,
    ...(usage ? { usage } : {}),
  });
  switch (cli) {
    case 'claude-code':
      return call('Write', { file_path: path, content });
    case 'gemini-cli':
      return call('write_file', { file_path: path, content });
    case 'opencode':
      return call('write', { filePath: path, content });
    case 'codex-cli':
      // Known model names get Codex's freeform `exec` tool (JavaScript calling nested tools);
      // apply_patch adds the file without a shell.
      return call('exec', `await tools.apply_patch(${JSON.stringify(addFilePatch(path, content))});`);
  }
}

function addFilePatch(path: string, content: string): string {
  const lines = content.replace(/\n$/, '').split('\n');
  return ['*** Begin Patch', `*** Add File: ${path}`, ...lines.map((l) => `+${l}`), '*** End Patch', ''].join(
    '\n',
  );
}
