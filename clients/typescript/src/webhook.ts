// Verifies Almoner's webhook deliveries (docs/webhooks.md): the signature
// X-Webhook-Signature is "sha256=" and the hex HMAC-SHA256, keyed by the
// endpoint's secret, of "<X-Webhook-Timestamp>.<raw body>". Web Crypto
// (Node 20+, browsers, Deno, workers) computes and compares it:
// crypto.subtle.verify compares the digest in constant time.

/** The request headers of a delivery. */
export const WebhookHeaders = {
  event: "X-Webhook-Event",
  deliveryId: "X-Webhook-Delivery-Id",
  timestamp: "X-Webhook-Timestamp",
  signature: "X-Webhook-Signature",
} as const;

/** How far a delivery's timestamp may be from the receiver's clock, in seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Why a delivery was refused; a receiver answers each with a 4xx. */
export type WebhookErrorCode = "missing" | "malformed" | "mismatch" | "stale";

/** A delivery that failed verification. */
export class WebhookVerificationError extends Error {
  readonly code: WebhookErrorCode;
  constructor(code: WebhookErrorCode, message: string) {
    super(message);
    this.name = "WebhookVerificationError";
    this.code = code;
  }
}

/** Headers as a fetch Request, Node's IncomingMessage or a plain object carry them. */
export type HeaderSource = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** Seconds the timestamp may be from now; 0 skips the check. Default 300. */
  toleranceSeconds?: number;
  /** The receiver's clock, Unix milliseconds (tests). Default Date.now(). */
  now?: number;
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") {
    return (headers as Headers).get(name) ?? undefined;
  }
  const want = name.toLowerCase();
  for (const [k, v] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (k.toLowerCase() === want) {
      return Array.isArray(v) ? v[0] : v;
    }
  }
  return undefined;
}

function hexToBytes(hex: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
    return undefined;
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}

/**
 * Checks a delivery and resolves when it is authentic and fresh; rejects
 * with a WebhookVerificationError otherwise. body is the raw request body
 * (the exact bytes, or their UTF-8 text), read before any JSON parsing.
 */
export async function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<void> {
  const signature = header(headers, WebhookHeaders.signature)?.trim();
  const timestamp = header(headers, WebhookHeaders.timestamp)?.trim();
  if (!signature || !timestamp) {
    throw new WebhookVerificationError("missing", "the signature or timestamp header is missing");
  }
  const digest = signature.startsWith("sha256=") ? hexToBytes(signature.slice(7)) : undefined;
  if (!digest || !/^\d+$/.test(timestamp)) {
    throw new WebhookVerificationError("malformed", "the signature is not sha256=<64 hex digits>, or the timestamp is not Unix seconds");
  }
  const enc = new TextEncoder();
  const raw = typeof body === "string" ? enc.encode(body) : body;
  const prefix = enc.encode(timestamp + ".");
  const message = new Uint8Array(prefix.length + raw.length);
  message.set(prefix);
  message.set(raw, prefix.length);
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  // The digest before the clock: a forger learns nothing from which check failed.
  if (!(await crypto.subtle.verify("HMAC", key, digest, message))) {
    throw new WebhookVerificationError("mismatch", "the signature does not match the body");
  }
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const now = (options.now ?? Date.now()) / 1000;
  if (tolerance > 0 && Math.abs(now - Number(timestamp)) > tolerance) {
    throw new WebhookVerificationError("stale", `the timestamp is more than ${tolerance} s from now`);
  }
}
