// The verifier's rules (node --test dist/test/). A delivery the server
// really signed is checked too when ALMONER_WEBHOOK_DELIVERY names one (the
// e2e test TestClients records it from a live server).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFile } from "node:fs/promises";
import { verifyWebhook, WebhookVerificationError, type WebhookErrorCode } from "../src/index.js";

function sign(secret: string, ts: number, body: string): string {
  return "sha256=" + createHmac("sha256", secret).update(`${ts}.${body}`).digest("hex");
}

async function code(p: Promise<void>): Promise<WebhookErrorCode | "ok"> {
  try {
    await p;
    return "ok";
  } catch (e) {
    assert.ok(e instanceof WebhookVerificationError);
    return e.code;
  }
}

const now = 1_800_000_000_000;
const ts = now / 1000;
const body = '{"id":"evt_1","event":"order.created"}';
const headers = (sig: string, t: number | string) => ({ "x-webhook-signature": sig, "X-Webhook-Timestamp": String(t) });

test("accepts a valid delivery, from a plain object or Headers", async () => {
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts, body), ts), body, { now })), "ok");
  const h = new Headers(headers(sign("whsec_a", ts, body), ts));
  assert.equal(await code(verifyWebhook("whsec_a", h, new TextEncoder().encode(body), { now })), "ok");
});

test("refuses another body, secret or timestamp", async () => {
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts, body), ts), body + " ", { now })), "mismatch");
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_b", ts, body), ts), body, { now })), "mismatch");
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts, body), ts + 1), body, { now })), "mismatch");
});

test("refuses a timestamp outside the tolerance, either way", async () => {
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts - 301, body), ts - 301), body, { now })), "stale");
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts + 301, body), ts + 301), body, { now })), "stale");
  assert.equal(await code(verifyWebhook("whsec_a", headers(sign("whsec_a", ts - 301, body), ts - 301), body, { now, toleranceSeconds: 600 })), "ok");
});

test("refuses missing and malformed headers", async () => {
  assert.equal(await code(verifyWebhook("whsec_a", {}, body, { now })), "missing");
  const good = sign("whsec_a", ts, body);
  assert.equal(await code(verifyWebhook("whsec_a", headers(good.slice(7), ts), body, { now })), "malformed");
  assert.equal(await code(verifyWebhook("whsec_a", headers(good.slice(0, 40), ts), body, { now })), "malformed");
  assert.equal(await code(verifyWebhook("whsec_a", headers(good, "yesterday"), body, { now })), "malformed");
});

test("accepts a delivery the server signed", { skip: !process.env.ALMONER_WEBHOOK_DELIVERY && "no ALMONER_WEBHOOK_DELIVERY (TestClients sets it)" }, async () => {
  const d = JSON.parse(await readFile(process.env.ALMONER_WEBHOOK_DELIVERY!, "utf8")) as { secret: string; headers: Record<string, string>; body: string };
  assert.equal(await code(verifyWebhook(d.secret, d.headers, d.body)), "ok");
  assert.equal(await code(verifyWebhook(d.secret, d.headers, d.body.replace(/}$/, ' }'))), "mismatch");
  assert.equal(await code(verifyWebhook(d.secret + "x", d.headers, d.body)), "mismatch");
});
