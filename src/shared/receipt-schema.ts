import { z } from 'zod';
import { FlotillaError } from './errors.js';
import { RECEIPT_FORMAT, type Receipt } from './receipt.js';

/**
 * The receipt file's shape, for `flotilla verify`: a file that is not a receipt is a user's
 * mistake (exit 2 naming the field), not a failed check. Fields are nullable as the builder writes
 * them; unknown fields are kept, so the signature check sees the bytes that were signed.
 */
const hash = z.string().regex(/^[0-9a-f]{64}$/, 'expected 64 hex digits');
const nullableText = z.string().nullable();

const attemptSchema = z
  .object({
    attempt: z.number().int().min(1),
    host: nullableText,
    cli: nullableText,
    cliVersion: nullableText,
    modelTier: nullableText,
    model: nullableText,
    escalation: nullableText,
    promptHash: hash.nullable(),
    resultHash: hash.nullable(),
    criteriaHash: hash.nullable(),
    criteriaPassed: z.boolean().nullable(),
    criticScore: z.number().nullable(),
    gate: nullableText,
    commit: nullableText,
    mergeCommit: nullableText,
    entries: z.array(z.number().int()),
  })
  .passthrough();

export const receiptSchema = z
  .object({
    format: z.literal(RECEIPT_FORMAT),
    mission: z
      .object({
        id: z.string().min(1),
        goal: z.string(),
        status: z.string(),
        specHash: hash,
        repo: z.string(),
        baseCommit: z.string(),
        branch: z.string().min(1),
        integrationTip: nullableText,
        createdAt: z.string(),
        finishedAt: nullableText,
      })
      .passthrough(),
    tasks: z.array(
      z.object({ id: z.string(), status: z.string(), attempts: z.array(attemptSchema) }).passthrough(),
    ),
    audit: z
      .object({ count: z.number().int().min(0), head: z.string(), hashes: z.array(hash) })
      .passthrough(),
    signature: z
      .object({ alg: z.string(), publicKey: z.string(), keyId: z.string(), value: z.string() })
      .passthrough()
      .nullable(),
  })
  .passthrough();

export function parseReceipt(text: string, file: string): Receipt {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new FlotillaError(
      'usage',
      `${file}: not JSON (${(error as Error).message}); expected a receipt from 'flotilla receipt <id>'`,
    );
  }
  const parsed = receiptSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join('.') : '(top)';
    throw new FlotillaError(
      'usage',
      `${file}: ${where}: ${issue?.message ?? 'invalid'}; expected a ${RECEIPT_FORMAT} receipt from 'flotilla receipt <id>'`,
    );
  }
  // Parsed from the schema above; its passthrough keeps fields the builder may add later.
  return parsed.data as unknown as Receipt;
}
