import { errorTurn } from '../../../helpers/model-server.js';
import { describeRealCli } from '../../../helpers/real-cli-suite.js';

// The real Codex CLI (devDependency @openai/codex) through adapters/codex-cli.md, unchanged,
// against a scripted Responses API (a custom provider in $CODEX_HOME/config.toml).
describeRealCli({
  cli: 'codex-cli',
  displayName: 'OpenAI Codex CLI',
  file: 'codex-cli.md',
  capability: 'code_implementation',
  model: /"model":"gpt-6\.2-sol"/,
  usageFormat: 'codex-jsonl',
  rateLimit: {
    turn: errorTurn(429, 'rate_limit_exceeded', 'Rate limit reached for requests'),
    says: 'exceeded retry limit, last status: 429 Too Many Requests',
  },
  loginError: {
    turn: errorTurn(401, 'invalid_api_key', 'Incorrect API key provided: test-key'),
    says: 'unexpected status 401 Unauthorized: Incorrect API key provided',
  },
});
