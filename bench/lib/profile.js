/**
 * Profiling without touching flotilla's code: a `git` shim first on PATH that logs every
 * invocation with its wall time, a MONITOR connection that counts the commands clients send (a
 * script's inner commands are tagged `lua` and not counted as round trips), and CPU time read from
 * /proc for this process, its reaped children (agents, criteria, git) and redis-server.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { Redis } from 'ioredis';
import { ROOT } from './util.js';

const TICKS = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;

/** CPU milliseconds of a process (`self` or a pid) and of its reaped children, from /proc/<pid>/stat. */
export async function cpuMs(pid = 'self') {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name, which may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const tick = (i) => (Number(fields[i]) * 1000) / TICKS;
  return { self: tick(11) + tick(12), children: tick(13) + tick(14) };
}

/** Installs a logging `git` first on PATH until `remove()`; `read()` parses the log. */
export async function installGitShim() {
  const realGit = execFileSync('bash', ['-c', 'command -v git']).toString().trim();
  const dir = await mkdtemp(join(tmpdir(), 'flotilla-bench-gitshim-'));
  const log = join(dir, 'git.log');
  const shim = join(dir, 'git');
  // $EPOCHREALTIME needs no fork, so the shim adds little beyond starting bash itself.
  const script = [
    '#!/bin/bash',
    's=$EPOCHREALTIME',
    `${JSON.stringify(realGit)} "$@"`,
    'rc=$?',
    'e=$EPOCHREALTIME',
    'args="$*"',
    `printf '%s %s %s\\n' "$s" "$e" "\${args//$'\\n'/ }" >> ${JSON.stringify(log)}`,
    'exit $rc',
    '',
  ];
  await writeFile(shim, script.join('\n'));
  await chmod(shim, 0o755);
  const previousPath = process.env.PATH;
  process.env.PATH = `${dir}${delimiter}${previousPath ?? ''}`;
  return {
    async read() {
      const text = await readFile(log, 'utf8').catch(() => '');
      const calls = [];
      for (const line of text.split('\n')) {
        if (!line) continue;
        const [start, end, ...args] = line.split(' ');
        calls.push({ ms: (Number(end) - Number(start)) * 1000, subcommand: gitSubcommand(args), args });
      }
      return calls;
    },
    async reset() {
      await writeFile(log, '');
    },
    async remove() {
      process.env.PATH = previousPath;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The git subcommand after global options (`-C dir`, `-c k=v`). */
function gitSubcommand(args) {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '-C' || arg === '-c') i += 1;
    else if (!arg.startsWith('-')) return args[i + 1] && arg === 'worktree' ? `worktree ${args[i + 1]}` : arg;
  }
  return '(none)';
}

/** BullMQ's Lua scripts by the sha1 ioredis sends with EVALSHA, so MONITOR lines can be named. */
async function bullmqScriptNames() {
  const dir = join(ROOT, 'node_modules', 'bullmq', 'dist', 'esm', 'scripts');
  const names = new Map();
  for (const file of await readdir(dir)) {
    if (!file.endsWith('.js') || file === 'index.js') continue;
    const module = await import(join(dir, file));
    for (const script of Object.values(module)) {
      if (script && typeof script.content === 'string') {
        names.set(createHash('sha1').update(script.content).digest('hex'), script.name);
      }
    }
  }
  return names;
}

/**
 * Counts client commands (round trips, pipelined or not) by name while running; EVAL/EVALSHA are
 * named by script. `extraScripts` maps Lua source to a name (flotilla's own scripts).
 */
export async function startMonitor(redisUrl, extraScripts = {}) {
  const names = await bullmqScriptNames();
  for (const [name, lua] of Object.entries(extraScripts)) {
    names.set(createHash('sha1').update(lua).digest('hex'), name);
  }
  const base = new Redis(redisUrl);
  base.on('error', () => {});
  const monitor = await base.monitor();
  monitor.on('error', () => {});
  const counts = {};
  let total = 0;
  monitor.on('monitor', (_time, args, source) => {
    if (source === 'lua') return;
    const command = String(args[0] ?? '').toLowerCase();
    let key = command;
    if (command === 'evalsha') key = `evalsha ${names.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`;
    else if (command === 'eval') {
      // MONITOR shows the script escaped, so it is recognised by a line of it, not by its hash.
      const text = String(args[1]);
      const known = Object.entries(extraScripts).find(([, lua]) =>
        text.includes(lua.trim().split('\n').at(-2) ?? '\0'),
      );
      key = `eval ${known?.[0] ?? 'script'}`;
    }
    counts[key] = (counts[key] ?? 0) + 1;
    total += 1;
  });
  return {
    counts,
    get total() {
      return total;
    },
    async stop() {
      monitor.disconnect();
      base.disconnect();
    },
  };
}

export function countBy(items, key) {
  const out = {};
  for (const item of items) out[key(item)] = (out[key(item)] ?? 0) + 1;
  return out;
}
