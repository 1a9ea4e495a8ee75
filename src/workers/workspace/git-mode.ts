/**
 * `FLOTILLA_GIT`: `cli` turns every in-process replacement of git off, so that flotilla runs git
 * commands only (an operator who distrusts the in-process code; the equivalence tests, which hold
 * both ways to what `git add -A && git commit` makes); anything else, or unset, keeps them where
 * each one's own checks allow. Read at each use, like git reads its environment at each command.
 */
export function inProcessGit(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return env.FLOTILLA_GIT?.trim().toLowerCase() !== 'cli';
}
