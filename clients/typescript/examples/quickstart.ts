// The README's quick start with the TypeScript client: a contact, a fund, a
// $100 cash gift, a card gift with the sandbox's test token, the contact's
// orders, and a webhook delivery's signature checked. The e2e test
// TestClients runs it (dist/examples/quickstart.js) against a live
// server.
//
//   ALMONER_URL=http://localhost:8080 ALMONER_TENANT=<tenant id> ALMONER_KEY=<api key> node dist/examples/quickstart.js
//
// ALMONER_WEBHOOK_DELIVERY names a JSON file holding a delivery as a
// receiver got it ({"secret", "headers", "body"}); without it the last step
// is skipped.
import { readFile } from "node:fs/promises";
import { createAlmonerClient, verifyWebhook, WebhookVerificationError } from "../src/index.js";

const env = process.env;
const tenantId = env.ALMONER_TENANT ?? "";
const api = createAlmonerClient(env.ALMONER_URL ?? "http://localhost:8080", env.ALMONER_KEY ?? "");
const tenant = { path: { tenantId } };

function expect(ok: boolean, what: string, detail: unknown): void {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(detail)}`);
  }
}

// A donor: contactType is required by the type, as by the server.
const contact = await api.POST("/api/tenants/{tenantId}/contacts", {
  params: tenant,
  body: { contactType: "Individual", firstName: "Jane", lastName: "Donor", emails: [{ emailAddress: "jane@example.org", isPrimary: true }] },
});
expect(contact.response.status === 201, "create contact", contact.error);
const donor = contact.data!.id;

// A fund: every donation line names one.
const fund = await api.POST("/api/tenants/{tenantId}/funds", {
  params: tenant,
  body: { name: `General ${Date.now()}`, isTaxDeductible: true },
});
expect(fund.response.status === 201, "create fund", fund.error);
const fundId = fund.data!.id;

// A $100 cash gift, safe to retry with its Idempotency-Key.
const cash = await api.POST("/api/tenants/{tenantId}/orders", {
  params: { ...tenant, header: { "Idempotency-Key": `quickstart-cash-${donor}` } },
  body: { contactId: donor, donations: [{ fundId, amount: 100 }], payments: [{ paymentMethod: "Cash", amount: 100 }] },
});
expect(cash.response.status === 201, "cash gift", cash.error);
console.log(`cash gift: order ${cash.data!.orderNumber}, ${cash.data!.totalAmount}`);

// A card gift: in the sandbox, tok_visa (or pm_card_visa) is captured and
// pm_card_chargeDeclined is declined.
const card = await api.POST("/api/tenants/{tenantId}/orders", {
  params: { ...tenant, header: { "Idempotency-Key": `quickstart-card-${donor}` } },
  body: {
    contactId: donor,
    donations: [{ fundId, amount: 50 }],
    payments: [{ paymentMethod: "Card", amount: 50, paymentToken: "tok_visa" }],
  },
});
expect(card.response.status === 201 && card.data!.payments[0]?.paymentStatus === "Captured", "card gift", card.error ?? card.data);

// The donor's orders, newest first.
const orders = await api.GET("/api/tenants/{tenantId}/orders", { params: { ...tenant, query: { contactId: donor } } });
expect(orders.response.status === 200 && orders.data!.items.length === 2, "list orders", orders.error ?? orders.data);
console.log(`orders of contact ${donor}: ${orders.data!.items.length}`);

// A delivery the server signed: accepted; its body changed: refused.
if (env.ALMONER_WEBHOOK_DELIVERY) {
  const d = JSON.parse(await readFile(env.ALMONER_WEBHOOK_DELIVERY, "utf8")) as { secret: string; headers: Record<string, string>; body: string };
  await verifyWebhook(d.secret, d.headers, d.body);
  const tampered = await verifyWebhook(d.secret, d.headers, d.body + " ").then(
    () => "accepted",
    (e: unknown) => (e instanceof WebhookVerificationError ? e.code : String(e)),
  );
  expect(tampered === "mismatch", "a changed body", tampered);
  console.log(`webhook ${d.headers["X-Webhook-Event"]} verified`);
} else {
  console.log("webhook: no ALMONER_WEBHOOK_DELIVERY, signature step skipped");
}
console.log("quickstart: done");
