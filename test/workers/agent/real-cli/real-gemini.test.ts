import { errorTurn } from '../../../helpers/model-server.js';
import { describeRealCli } from '../../../helpers/real-cli-suite.js';

// The real Gemini CLI (devDependency @google/gemini-cli) through adapters/gemini-cli.md,
// unchanged, against a scripted streamGenerateContent API (GOOGLE_GEMINI_BASE_URL).
describeRealCli({
  cli: 'gemini-cli',
  displayName: 'Google Gemini CLI',
  file: 'gemini-cli.md',
  // gemini-cli.md offers no code_implementation; documentation is one of its capabilities.
  capability: 'documentation',
  // `pro`, the adapter's model_execution alias, is the CLI's own alias for this model.
  model: /models\/gemini-[\d.]+-pro/,
  usageFormat: 'gemini-json',
  rateLimit: {
    // The API's daily quota answer: the CLI gives up at once instead of backing off for minutes.
    turn: errorTurn(
      429,
      'RESOURCE_EXHAUSTED',
      'Quota exceeded for quota metric GenerateContent requests per day',
      {
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [{ quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier' }],
          },
        ],
      },
    ),
    says: 'You have exhausted your daily quota on this model.',
  },
  loginError: {
    turn: errorTurn(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.'),
    says: 'Request had invalid authentication credentials.',
  },
});
