import { errorTurn } from '../../../helpers/model-server.js';
import { describeRealCli } from '../../../helpers/real-cli-suite.js';

// The real OpenCode CLI (devDependency opencode-ai) through adapters/opencode.md, unchanged,
// against a scripted Chat Completions API (an openai-compatible provider in OPENCODE_CONFIG_CONTENT).
describeRealCli({
  cli: 'opencode',
  displayName: 'OpenCode',
  file: 'opencode.md',
  capability: 'code_implementation',
  model: /"model":"claude-sonnet-4-6"/,
  usageFormat: 'opencode-jsonl',
  rateLimit: {
    // retry-after-ms keeps OpenCode's own backoff (it retries a 429 several times) short.
    turn: errorTurn(429, 'rate_limit_exceeded', 'Rate limit reached for requests', {
      headers: { 'retry-after-ms': '10' },
    }),
    says: 'Rate limit reached for requests',
  },
  loginError: {
    turn: errorTurn(401, 'invalid_api_key', 'Incorrect API key provided: test-key'),
    says: 'Incorrect API key provided: test-key',
  },
});
