/**
 * flotilla-sim: the stand-in agent CLI of flotilla's demo and tests (docs/SIM.md). Importing this
 * module runs it; examples/bin/flotilla-sim is the launcher.
 */
import { runSim } from './run.js';

runSim({
  argv: process.argv.slice(2),
  cwd: process.cwd(),
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
}).then(
  (exit) => {
    // exceed_timeout: stay alive until flotilla's timeout kills the process.
    if (exit === 'hang') setInterval(() => undefined, 60_000);
    else process.exitCode = exit;
  },
  (error: unknown) => {
    process.stderr.write(
      `flotilla-sim: internal error: ${error instanceof Error ? error.stack : String(error)}\n`,
    );
    process.exitCode = 70;
  },
);
