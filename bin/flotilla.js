#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

/**
 * A command that has returned is done. Connections to a Redis that went away keep retrying and
 * would hold the process open for ever, so whatever is still pending after a short grace is cut
 * off; the timer is unref'd and never delays a clean exit.
 */
const LINGER_MS = 2_000;

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), LINGER_MS).unref();
  },
  (error) => {
    console.error(error);
    process.exit(70);
  },
);
