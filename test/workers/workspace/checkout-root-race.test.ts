import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/paths.js';

/**
 * Checkout slots claimed by many worker processes starting at once on one FLOTILLA_HOME: each live
 * process must get a slot of its own. Before the lock was written whole and taken over by moving
 * it aside, 20 processes starting together shared 1–2 slots in every try (bench/scale.js: two
 * hosts resetting each other's checkouts, a prompt file gone before the agent read it, an agent's
 * file gone before the commit).
 */
let dir: string;
let claimer: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flotilla-slot-race-'));
  // checkout-root.ts imports only node builtins: transpiled alone, it runs in plain node processes.
  const source = await readFile(join(ROOT, 'src/workers/workspace/checkout-root.ts'), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  await writeFile(join(dir, 'checkout-root.mjs'), outputText);
  claimer = join(dir, 'claim.mjs');
  // Waits for a common start instant, claims, prints the slot, then holds it until stdin closes.
  await writeFile(
    claimer,
    [
      "import { claimCheckoutRoot } from './checkout-root.mjs';",
      'const [home, at] = [process.argv[2], Number(process.argv[3])];',
      'while (Date.now() < at) await new Promise((done) => setTimeout(done, 2));',
      'const root = await claimCheckoutRoot(home);',
      "process.stdout.write(root.dir + '\\n');",
      "process.stdin.on('end', () => process.exit(0)).resume();",
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await rm(dir, { recursive: true, force: true });
});

/** `count` processes claim a slot in `home` at the same instant; returns the slots they got. */
async function claimTogether(home: string, count: number): Promise<string[]> {
  const at = Date.now() + 2_000;
  const started = Array.from({ length: count }, () => {
    const child = spawn(process.execPath, [claimer, home, String(at)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    children.push(child);
    return new Promise<{ child: ChildProcess; slot: string }>((done, fail) => {
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.endsWith('\n')) done({ child, slot: out.trim() });
      });
      child.once('exit', (code) => fail(new Error(`claimer exited ${code} before claiming`)));
    });
  });
  // Every claimer holds its slot until all have claimed: a live owner is what the others must see.
  const claims = await Promise.all(started);
  for (const { child } of claims) child.stdin?.end();
  return claims.map((c) => c.slot);
}

describe('checkout slots claimed by processes starting together', () => {
  it('gives each of 20 processes its own slot, three times over', async () => {
    for (let round = 0; round < 3; round++) {
      const home = join(dir, `fresh-${round}`);
      const slots = await claimTogether(home, 20);
      expect(new Set(slots).size).toBe(20);
    }
  }, 120_000);

  it('gives each its own slot when they take over slots whose owners are dead', async () => {
    for (let round = 0; round < 3; round++) {
      const home = join(dir, `dead-${round}`);
      await mkdir(join(home, 'checkouts'), { recursive: true });
      // Locks naming a pid no process has: every one of these slots is free to take over.
      for (let n = 0; n < 10; n++) await writeFile(join(home, 'checkouts', `p${n}.lock`), '999999999');
      const slots = await claimTogether(home, 20);
      expect(new Set(slots).size).toBe(20);
    }
  }, 120_000);
});
