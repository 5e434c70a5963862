// Drives the recipe flows with openapi-fetch over the types openapi-typescript
// generated from the served /openapi.json (./schema.d.ts). The e2e test
// TestClients generates the types in a copy of this folder, checks
// this file against them with tsc, and runs the output under Node. A flow
// that fails throws, and Node exits 1.
//
// ALMONER_URL is the gateway, ALMONER_TENANT a tenant and ALMONER_KEY a key
// of it holding every scope.
import createClient, { type Middleware } from "openapi-fetch";
import type { paths } from "./schema.js";

// Node's process, typed here rather than through @types/node: one
// dependency less to pin for three variables.
const env = (globalThis as unknown as { process: { env: Record<string, string | undefined> } }).process.env;
const baseUrl = env.ALMONER_URL;
const tenantId = env.ALMONER_TENANT;
const operatorKey = env.ALMONER_KEY;
if (!baseUrl || !tenantId || !operatorKey) {
  throw new Error("ALMONER_URL, ALMONER_TENANT and ALMONER_KEY are required");
}
const tenant = { path: { tenantId } };

// client is a typed client that sends key in X-Api-Key.
function client(key: string) {
  const c = createClient<paths>({ baseUrl });
  const auth: Middleware = {
    onRequest({ request }) {
      request.headers.set("X-Api-Key", key);
      return request;
    },
  };
  c.use(auth);
  return c;
}

function check(ok: boolean, what: string, body: unknown): void {
  if (!ok) {
    throw new Error(`${what}: ${JSON.stringify(body)}`);
  }
}

// status fails unless the response has the status.
function status(response: Response, want: number, what: string, body: unknown): void {
  check(response.status === want, `${what}: status ${response.status}, want ${want}`, body);
}

// A key for the flows, made with the operator's key as an integrator's
// set-up script would; everything after runs with the new key.
const admin = client(operatorKey);
const created = await admin.POST("/api/tenants/{tenantId}/api-keys", {
  params: tenant,
  body: { name: "ts-client", scopes: ["contacts:view", "contacts:create", "funds:view", "funds:manage", "orders:view", "orders:create"] },
});
status(created.response, 201, "create key", created.error);
const newKey = created.data!;
check(newKey.plainTextKey !== "" && newKey.scopes.includes("orders:create"), "create key", newKey);
const keys = await admin.GET("/api/tenants/{tenantId}/api-keys", { params: tenant });
status(keys.response, 200, "list keys", keys.error);
check(keys.data!.some((k) => k.id === newKey.id), "list keys lacks the new key", keys.data);
const api = client(newKey.plainTextKey);

// A donor with an email, and an organization so that the list has two
// pages of one.
const jane = await api.POST("/api/tenants/{tenantId}/contacts", {
  params: tenant,
  body: {
    contactType: "Individual", firstName: "Jane", lastName: "Donor",
    emails: [{ emailAddress: "jane@example.org", emailType: "Personal", isPrimary: true }],
  },
});
status(jane.response, 201, "create contact", jane.error);
const janeId = jane.data!.id;
const acme = await api.POST("/api/tenants/{tenantId}/contacts", {
  params: tenant,
  body: { contactType: "Organization", organizationName: "Acme Foundation" },
});
status(acme.response, 201, "create organization", acme.error);
const got = await api.GET("/api/tenants/{tenantId}/contacts/{contactId}", {
  params: { path: { tenantId, contactId: janeId } },
});
status(got.response, 200, "get contact", got.error);
check(got.data!.id === janeId && got.data!.contactType === "Individual" && got.data!.lastName === "Donor" &&
  got.data!.emails.length === 1 && got.data!.emails[0].emailAddress === "jane@example.org", "get contact", got.data);

// A tax-deductible fund.
const fund = await api.POST("/api/tenants/{tenantId}/funds", {
  params: tenant,
  body: { name: "General Fund", isTaxDeductible: true },
});
status(fund.response, 201, "create fund", fund.error);
const fundId = fund.data!.id;
const funds = await api.GET("/api/tenants/{tenantId}/funds", { params: tenant });
status(funds.response, 200, "list funds", funds.error);
check(funds.data!.some((f) => f.id === fundId && f.isTaxDeductible), "list funds lacks the fund", funds.data);

// A $100 cash gift, read back.
const order = await api.POST("/api/tenants/{tenantId}/orders", {
  params: tenant,
  body: {
    contactId: janeId,
    donations: [{ fundId, amount: 100.0 }],
    payments: [{ paymentMethod: "Cash", amount: 100.0 }],
    idempotencyKey: "ts-client-" + newKey.id,
  },
});
status(order.response, 201, "create order", order.error);
check(order.data!.totalAmount === 100 && order.data!.orderStatus === "Completed" && order.data!.contactId === janeId,
  "create order", order.data);
const readOrder = await api.GET("/api/tenants/{tenantId}/orders/{orderId}", {
  params: { path: { tenantId, orderId: order.data!.id } },
});
status(readOrder.response, 200, "get order", readOrder.error);
check(readOrder.data!.donations.length === 1 && readOrder.data!.donations[0].fundId === fundId &&
  readOrder.data!.donations[0].amount === 100 && readOrder.data!.payments[0].paymentMethod === "Cash", "get order", readOrder.data);

// Paging: two contacts, one per page, the second page by its token.
const first = await api.GET("/api/tenants/{tenantId}/contacts", {
  params: { path: { tenantId }, query: { pageSize: 1 } },
});
status(first.response, 200, "list contacts", first.error);
check(first.data!.totalCount === 2 && first.data!.items.length === 1 && first.data!.nextPageToken !== "",
  "list contacts, page 1", first.data);
const second = await api.GET("/api/tenants/{tenantId}/contacts", {
  params: { path: { tenantId }, query: { pageSize: 1, pageToken: first.data!.nextPageToken } },
});
status(second.response, 200, "list contacts, page 2", second.error);
check(second.data!.items.length === 1 && second.data!.items[0].id !== first.data!.items[0].id && second.data!.nextPageToken === "",
  "list contacts, page 2", second.data);
const orders = await api.GET("/api/tenants/{tenantId}/orders", {
  params: { path: { tenantId }, query: { contactId: janeId, pageSize: 1 } },
});
status(orders.response, 200, "list orders", orders.error);
check(orders.data!.totalCount === 1 && orders.data!.items[0].id === order.data!.id, "list orders", orders.data);

// A 400: a contact without its type, with the property in errors. The type
// requires contactType (issue 35), so the body must get past tsc on
// purpose: the directive fails the build if the property stops being
// required.
// @ts-expect-error contactType is required
const bad = await api.POST("/api/tenants/{tenantId}/contacts", { params: tenant, body: { lastName: "Typeless" } });
status(bad.response, 400, "create contact without a type", bad.error);
check(bad.error!.status === 400 && (bad.error!.errors?.["ContactType"] ?? []).length > 0, "400", bad.error);

// A 404: a contact that does not exist.
const missing = await api.GET("/api/tenants/{tenantId}/contacts/{contactId}", {
  params: { path: { tenantId, contactId: 987654321 } },
});
status(missing.response, 404, "get a missing contact", missing.error);
check(missing.error!.status === 404 && missing.error!.type !== "", "404", missing.error);

console.log("tsclient: every flow passed");
