import { readFileSync } from 'node:fs';

/**
 * The Lua scripts for the transitions hosts race on, one file each under `lua/` (the number in a
 * name is its count of KEYS), each prefixed with `lua/common.lua`. Every script runs on the keys
 * of one mission, so one hash slot on Redis Cluster. Scripts answer with plain Redis replies; the
 * first element of a multi-element reply is a code from LUA_CODES.
 */

const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');

function load(name: string, prelude: readonly string[] = ['common.lua']): string {
  return [...prelude, name].map(read).join('\n');
}

export const MARK_SCRIPT = load('mark-2.lua');
export const SETTLE_SCRIPT = load('settle-5.lua', ['common.lua', 'sha256.lua', 'audit-append.lua']);
export const CANCEL_SCRIPT = load('cancel-2.lua');
/** The audit trail's append: its hash-chain link (shared/audit-chain.ts) and its task's index. */
export const APPEND_AUDIT_SCRIPT = load('append-audit-3.lua', ['sha256.lua', 'audit-append.lua']);
/** sha256.lua alone, for its test against node:crypto. */
export const SHA256_SCRIPT = load('sha256-0.lua', ['sha256.lua']);

/** The scripts' result codes, and what each means to the caller. */
export const LUA_CODES = {
  ok: 0,
  unknownTask: -1,
  unknownMission: -2,
} as const;

export type LuaCode = (typeof LUA_CODES)[keyof typeof LUA_CODES];
