import { DEFAULT_SLOTS } from '../shared/config.js';
import type { OptionSpec } from './command-spec.js';

/** Options several commands share, described once so their help reads the same everywhere. */

export const adapters: OptionSpec = {
  type: 'string',
  value: 'DIR',
  help: 'folder of adapter files (default: FLOTILLA_ADAPTERS, else the adapters/ shipped with flotilla)',
};
export const json: OptionSpec = { type: 'boolean', help: 'print JSON for scripts' };
export const slots: OptionSpec = {
  type: 'string',
  value: 'N',
  help: `CLI processes at once per host (default ${DEFAULT_SLOTS})`,
};
export const internal: OptionSpec = {
  type: 'string',
  value: 'CLI',
  help: "adapter (by its `cli` name) that serves dispatch.internal, for tasks no CLI's capabilities match",
};
