import type { FlotillaClient } from '../../producer/client.js';

/**
 * The API's options and access as the board's public types name them. Kept apart from the
 * router and the access check, which use express, so that the package's declarations never
 * need express's: a script that imports flotilla type-checks without @types/express.
 */

/** Who may use /api/v1 (access.ts decideApiAccess). */
export type ApiAccess =
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'open' }
  | { readonly kind: 'off'; readonly reason: string };

export interface ApiOptions {
  /** The producer's client that submits (its workspace preparation included); the caller closes it. */
  readonly client: FlotillaClient;
  readonly access: ApiAccess;
  /** Where agent files of submitted missions are read; default FLOTILLA_AGENTS, then ./agents. */
  readonly agentsDir?: string;
  /** Capability terms the adapters add (a term in neither is a warning, as for `flotilla submit`). */
  readonly adapterCapabilities?: readonly string[];
  /** How long one XREAD of the event stream blocks; default the client's (1 s). */
  readonly pollMs?: number;
  readonly onError?: (error: unknown) => void;
}
