import { readFileSync } from 'node:fs';

/**
 * The Lua scripts for the transitions hosts race on, one file each under `lua/` (the number in a
 * name is its count of KEYS), each prefixed with `lua/common.lua`. Every script runs on the keys
 * of one mission, so one hash slot on Redis Cluster. Scripts answer with plain Redis replies; the
 * first element of a multi-element reply is a code from LUA_CODES.
 */

function load(name: string): string {
  const read = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
  return `${read('common.lua')}\n${read(name)}`;
}

export const MARK_SCRIPT = load('mark-2.lua');
export const SETTLE_SCRIPT = load('settle-3.lua');
export const CANCEL_SCRIPT = load('cancel-2.lua');
export const AUDIT_SCRIPT = load('audit-2.lua');

/** The scripts' result codes, and what each means to the caller. */
export const LUA_CODES = {
  ok: 0,
  unknownTask: -1,
  unknownMission: -2,
} as const;

export type LuaCode = (typeof LUA_CODES)[keyof typeof LUA_CODES];
