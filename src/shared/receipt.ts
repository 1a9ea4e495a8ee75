import { createHash, createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { canonicalJson } from './canonical-json.js';
import { FlotillaError } from './errors.js';

/**
 * A mission receipt (docs/RECEIPTS.md): what a finished mission did, in one JSON file that anyone
 * holding it and a public key can check offline. The signed bytes are the canonical JSON of the
 * receipt without its `signature` member, so re-indenting the file does not break it.
 */
export const RECEIPT_FORMAT = 'flotilla-receipt/1';

export interface ReceiptAttempt {
  readonly attempt: number;
  readonly host: string | null;
  readonly cli: string | null;
  readonly cliVersion: string | null;
  readonly modelTier: string | null;
  readonly model: string | null;
  /** Why this attempt ran on this tier and CLI (escalation), or null for the first choice. */
  readonly escalation: string | null;
  /** SHA-256 of the prompt, result and exit-criteria output texts as the audit trail holds them. */
  readonly promptHash: string | null;
  readonly resultHash: string | null;
  readonly criteriaHash: string | null;
  readonly criteriaPassed: boolean | null;
  readonly criticScore: number | null;
  readonly gate: string | null;
  /** The attempt's own commit, and the integration merge commit when the gate approved it. */
  readonly commit: string | null;
  readonly mergeCommit: string | null;
  /**
   * `approve: human`: the person's verdict on the held attempt (or its timeout), who and when.
   * Absent for attempts nobody had to approve, so receipts made before it read the same.
   */
  readonly approval?: { readonly verdict: string; readonly by: string | null; readonly at: string };
  /** The platform of the machine the run was on (`linux/x64`); absent in trails written before it was recorded. */
  readonly platform?: string;
  /** The audit entries (chain numbers) these facts were read from. */
  readonly entries: readonly number[];
}

export interface ReceiptTask {
  readonly id: string;
  readonly status: string;
  readonly attempts: readonly ReceiptAttempt[];
}

export interface ReceiptBody {
  readonly format: typeof RECEIPT_FORMAT;
  readonly mission: {
    readonly id: string;
    readonly goal: string;
    readonly status: string;
    readonly specHash: string;
    readonly repo: string;
    readonly baseCommit: string;
    readonly branch: string;
    readonly integrationTip: string | null;
    readonly createdAt: string;
    readonly finishedAt: string | null;
  };
  readonly tasks: readonly ReceiptTask[];
  /** The chain's head and every entry's hash in order, so a verifier names the first that differs. */
  readonly audit: { readonly count: number; readonly head: string; readonly hashes: readonly string[] };
}

export interface ReceiptSignature {
  readonly alg: 'ed25519';
  /** SPKI PEM of the signing key; pin it with `flotilla verify --public-key`. */
  readonly publicKey: string;
  /** SHA-256 of the public key's DER, to compare keys by eye. */
  readonly keyId: string;
  /** Base64 Ed25519 signature over canonicalJson(body). */
  readonly value: string;
}

export type Receipt = ReceiptBody & { readonly signature: ReceiptSignature | null };

/** The receipt's body: everything the signature covers. */
export function receiptBody(receipt: Receipt | ReceiptBody): ReceiptBody {
  const { signature: _signature, ...body } = receipt as Receipt;
  return body;
}

export function keyId(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

/** Reads an Ed25519 private key (PEM); the error names the file and what was expected. */
export function parseSigningKey(pem: string, file: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (error) {
    throw new FlotillaError(
      'usage',
      `${file}: expected an Ed25519 private key in PEM (openssl genpkey -algorithm ed25519): ${(error as Error).message}`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new FlotillaError(
      'usage',
      `${file}: expected an Ed25519 private key, got ${key.asymmetricKeyType ?? 'a symmetric key'}`,
    );
  }
  return key;
}

/** Reads FLOTILLA_SIGNING_KEY's file once, when a host starts, so a wrong path fails at once. */
export async function readSigningKey(file: string): Promise<KeyObject> {
  const pem = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new FlotillaError(
      'usage',
      `FLOTILLA_SIGNING_KEY: cannot read ${file} (${error.code ?? error.message})`,
    );
  });
  return parseSigningKey(pem, file);
}

/** Reads a public key (PEM, or a private key PEM from which the public half is taken). */
export function parsePublicKey(pem: string, file: string): KeyObject {
  let key: KeyObject;
  try {
    key = createPublicKey(pem);
  } catch (error) {
    throw new FlotillaError(
      'usage',
      `${file}: expected an Ed25519 public key in PEM: ${(error as Error).message}`,
    );
  }
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new FlotillaError(
      'usage',
      `${file}: expected an Ed25519 public key, got ${key.asymmetricKeyType ?? 'another kind'}`,
    );
  }
  return key;
}

export function signReceipt(body: ReceiptBody, privateKey: KeyObject): Receipt {
  const publicKey = createPublicKey(privateKey);
  const value = sign(null, Buffer.from(canonicalJson(receiptBody(body)), 'utf8'), privateKey).toString(
    'base64',
  );
  return {
    ...receiptBody(body),
    signature: {
      alg: 'ed25519',
      publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      keyId: keyId(publicKey),
      value,
    },
  };
}

export type SignatureCheck =
  | { readonly ok: true; readonly keyId: string; readonly pinned: boolean }
  | { readonly ok: false; readonly message: string };

/**
 * Checks the signature with the embedded key, and that key against a pinned one when given. Without
 * a pinned key a valid signature proves only that the file is whole, not who signed it: anyone can
 * re-sign an altered receipt with a key of their own.
 */
export function checkSignature(receipt: Receipt, pinned?: KeyObject): SignatureCheck {
  const sig = receipt.signature;
  if (!sig)
    return {
      ok: false,
      message:
        'the receipt is not signed (FLOTILLA_SIGNING_KEY was not set on the host that finalized the mission)',
    };
  if (sig.alg !== 'ed25519')
    return { ok: false, message: `unknown signature algorithm '${String(sig.alg)}' (expected ed25519)` };
  let embedded: KeyObject;
  try {
    embedded = parsePublicKey(sig.publicKey, 'signature.publicKey');
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
  if (pinned && keyId(pinned) !== keyId(embedded)) {
    return {
      ok: false,
      message: `signed by another key: the receipt's key ${keyId(embedded).slice(0, 16)}… is not the pinned key ${keyId(pinned).slice(0, 16)}…`,
    };
  }
  const valid = verify(
    null,
    Buffer.from(canonicalJson(receiptBody(receipt)), 'utf8'),
    embedded,
    Buffer.from(sig.value, 'base64'),
  );
  if (!valid)
    return { ok: false, message: 'the signature does not match the receipt: it was altered after signing' };
  return { ok: true, keyId: keyId(embedded), pinned: pinned !== undefined };
}
