import { errorTurn } from '../../../helpers/model-server.js';
import { describeRealCli } from '../../../helpers/real-cli-suite.js';

// The real Claude Code CLI (devDependency @anthropic-ai/claude-code) through adapters/claude-code.md,
// unchanged, against the scripted Messages API; claude-mission.test.ts adds needs_input and the
// no-credentials case.
describeRealCli({
  cli: 'claude-code',
  displayName: 'Claude Code',
  file: 'claude-code.md',
  capability: 'code_implementation',
  // `sonnet`, the adapter's model_execution alias, resolved by the CLI itself.
  model: /"model":"claude-sonnet-[^"]+"/,
  usageFormat: 'claude-json',
  rateLimit: {
    turn: errorTurn(429, 'rate_limit_error', 'rate limit exceeded'),
    says: 'API Error: Request rejected (429) · rate limit exceeded',
  },
  loginError: {
    turn: errorTurn(401, 'authentication_error', 'invalid x-api-key'),
    says: 'Invalid API key · Fix external API key',
  },
});
