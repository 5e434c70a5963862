// The staff console in headless Chromium (Debian's, driven by
// playwright-core), through a real server and Mailpit. The Go test
// cmd/almoner/e2e TestConsoleInBrowser starts them and runs this with:
//   ALMONER_CONSOLE_URL   the gateway's base URL
//   MAILPIT_API           Mailpit's HTTP API
//   TENANT_ID             a tenant with webhooks on
//   TENANT_SEARCH         a word of its name
//   OWNER_EMAIL           invited as the tenant's owner (the email is in Mailpit)
//   OWNER_ID              the owner's user id (what the operator impersonates)
//   VIEWER_EMAIL          an address the owner invites as a viewer
//   OPERATOR_EMAIL, OPERATOR_PASSWORD, OPERATOR_TOTP  a platform operator with TOTP
//   RECEIVER_URL          an https webhook receiver the server trusts
//   ARTIFACTS             where the screenshots go (desktop and 375 px)
// Every page is checked with axe-core (no serious or critical violation)
// and any console error (a CSP violation too) fails the test.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync, mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { chromium } from "playwright-core";

const env = (k) => { const v = process.env[k]; assert.ok(v, k + " is required"); return v; };
const base = env("ALMONER_CONSOLE_URL");
const artifacts = env("ARTIFACTS");
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const ownerPassword = "violet hangar 42 tundra";
const viewerPassword = "quiet meadow lantern 7";

// totp plays the authenticator app (RFC 6238: SHA-1, 30 s, 6 digits).
function totp(secret, at = Date.now()) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  let bits = "";
  for (const ch of secret.replace(/=+$/, "").toUpperCase()) bits += alphabet.indexOf(ch).toString(2).padStart(5, "0");
  const key = Buffer.from(bits.match(/.{8}/g).map((b) => parseInt(b, 2)));
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / 30)));
  const h = createHmac("sha1", key).update(counter).digest();
  const o = h[h.length - 1] & 15;
  return String((h.readUInt32BE(o) & 0x7fffffff) % 1000000).padStart(6, "0");
}

// mailTo waits for the newest message to an address and returns its text.
async function mailTo(to, n = 1) {
  const api = env("MAILPIT_API");
  for (let i = 0; i < 150; i++) {
    const list = await (await fetch(api + "/api/v1/search?query=" + encodeURIComponent("to:" + to))).json();
    if (list.messages && list.messages.length >= n) {
      const m = await (await fetch(api + "/api/v1/message/" + list.messages[0].ID)).json();
      return m.Text;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error("no email to " + to);
}

// linkPath takes the path and query of an email's link (its origin is the
// server's public URL, which in the test is not where the server listens).
function linkPath(text, pathName) {
  const m = text.match(new RegExp("https?://[^\\s/]+(" + pathName + "\\?token=[A-Za-z0-9_-]+)"));
  assert.ok(m, "no " + pathName + " link in: " + text);
  return m[1];
}

let shots = 0;
// check runs axe-core on the page and takes its screenshots at desktop
// and phone width.
async function check(page, name) {
  await page.evaluate(axeSource);
  const res = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], "axe on " + name);
  shots++;
  const file = `console-${String(shots).padStart(2, "0")}-${name}`;
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.screenshot({ path: path.join(artifacts, file + "-desktop.png"), fullPage: true });
  await page.setViewportSize({ width: 375, height: 812 });
  // Nothing may be wider than the phone's screen but the tables, which scroll.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
  const wide = overflow <= 375 ? [] : await page.evaluate(() => Array.from(document.querySelectorAll("body *"))
    .filter((e) => e.getBoundingClientRect().right > 376 && !(e.parentElement && e.parentElement.closest(".table-wrap")))
    .slice(-6).map((e) => e.tagName + "." + e.className + " " + Math.round(e.getBoundingClientRect().right)));
  assert.ok(overflow <= 375, `${name} is ${overflow} px wide at 375 px: ${wide.join("; ")}`);
  await page.screenshot({ path: path.join(artifacts, file + "-phone.png"), fullPage: true });
  await page.setViewportSize({ width: 1280, height: 900 });
}

// watch fails the test on any console error or failed request of a page.
function watch(page, errors) {
  // A page refused on purpose (a wrong password's 401, a role's 403) is
  // logged by Chromium as a failed load: that is the page's status, not
  // an error. Anything else (a CSP violation, a script error) fails.
  page.on("console", (m) => {
    if (m.type() === "error" && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(m.text())) errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.setDefaultTimeout(20000);
}

const tenantId = () => env("TENANT_ID");
const tpath = (rest) => `${base}/console/t/${tenantId()}${rest}`;

async function signIn(page, email, password, secret) {
  await page.goto(base + "/console/sign-in");
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForURL("**/console/sign-in/verify**");
  // A code of the next step: the one that confirmed the factor may have
  // been of this step, and a step is accepted once.
  await page.getByLabel("Authenticator app code").check();
  await page.getByLabel("Code", { exact: true }).fill(totp(secret, Date.now() + 30000));
}

test("the staff console, from an invitation to an impersonation", { timeout: 420000 }, async () => {
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  const errors = [];
  try {
    const owner = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await owner.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const page = await owner.newPage();
    watch(page, errors);

    // Sign-in page, and a wrong password said in words.
    await page.goto(base + "/console/sign-in");
    await check(page, "sign-in");
    await page.getByLabel("Email").fill(env("OWNER_EMAIL"));
    await page.getByLabel("Password").fill("not the password at all");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").filter({ hasText: "The email or the password is wrong." }).waitFor();

    // The invitation's link: its token leaves the URL at once.
    const invite = linkPath(await mailTo(env("OWNER_EMAIL")), "/accept-invitation");
    await page.goto(base + invite);
    assert.equal(new URL(page.url()).search, "", "the token stays in the URL");
    await check(page, "accept-invitation");
    await page.getByLabel("First name").fill("Ada");
    await page.getByLabel("Last name").fill("Lovelace");
    await page.getByLabel("Password").fill(ownerPassword);
    await page.getByRole("button", { name: "Accept the invitation" }).click();
    await page.waitForURL("**/console/security");
    await check(page, "security");

    // TOTP from the QR page's secret; the recovery codes shown once.
    await page.getByRole("button", { name: "Set up an authenticator app" }).click();
    await page.getByRole("img", { name: /QR code/ }).waitFor();
    const secret = (await page.locator("#totp-secret").textContent()).trim();
    await check(page, "totp-enrollment");
    await page.getByLabel("Code from the app").fill(totp(secret));
    await page.getByRole("button", { name: "Turn on" }).click();
    await page.getByRole("heading", { name: "Your recovery codes" }).waitFor();
    assert.equal(await page.locator("#recovery-codes li").count(), 10);
    const download = await page.getByRole("link", { name: "Download as a text file" }).getAttribute("href");
    assert.match(decodeURIComponent(download), /^data:text\/plain;charset=utf-8,Almoner recovery codes/);
    await check(page, "recovery-codes");
    await page.goto(base + "/console/security");
    assert.equal(await page.locator("#recovery-codes").count(), 0, "recovery codes shown twice");

    // Sign out, sign in with a code.
    await page.getByRole("button", { name: /^Sign out/ }).click();
    await page.getByRole("status").filter({ hasText: "You are signed out." }).waitFor();
    await signIn(page, env("OWNER_EMAIL"), ownerPassword, secret);
    await check(page, "verify");
    await page.getByRole("button", { name: "Verify" }).click();
    await page.waitForURL("**/console/t/**/dashboard");
    await page.getByRole("heading", { name: "Dashboard" }).waitFor();
    // The dashboard route answers: its figures and chart, not the notice
    // a server without the route would show.
    await page.getByRole("heading", { name: "Raised by day" }).waitFor();
    assert.equal(await page.locator("p.notice").count(), 0, "dashboard unavailable");
    assert.equal(await page.locator("figure.chart-wrap svg").count(), 1, "no chart");
    await check(page, "dashboard");

    // A webhook endpoint: the secret shown once.
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByLabel("Name").fill("CRM sync");
    await page.getByLabel("URL (https)").fill(env("RECEIVER_URL"));
    await page.getByLabel("contact.created").check();
    await page.getByRole("button", { name: "Register" }).click();
    const whSecret = (await page.locator("#new-secret").textContent()).trim();
    assert.match(whSecret, /\S{16,}/);
    await check(page, "webhook-created");
    await page.reload(); // reads the page: no second endpoint, no secret again
    assert.equal(await page.locator("#new-secret").count(), 0, "the secret shown again after a reload");
    assert.equal(await page.getByRole("link", { name: "CRM sync" }).count(), 1, "a reload registered a second endpoint");

    // An API key with two scopes: shown once, copied, then used.
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("integration");
    await page.getByLabel("contacts:create").check();
    await page.getByLabel("contacts:view").check();
    await page.getByRole("button", { name: "Create the key" }).click();
    const key = (await page.locator("#new-key").textContent()).trim();
    assert.match(key, /^ak_test_/);
    await page.getByRole("button", { name: "Copy the key" }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), key);
    await check(page, "key-created");
    // A reload reads the keys page: it neither posts the form again (a
    // second key) nor shows the secret again.
    const keyRows = () => page.getByRole("cell", { name: "integration", exact: true }).count();
    assert.equal(await keyRows(), 1);
    await page.reload();
    assert.equal(new URL(page.url()).pathname, new URL(tpath("/keys"), base).pathname, "the reload's URL");
    assert.equal(await page.locator("#new-key").count(), 0, "the key shown again after a reload");
    assert.equal(await keyRows(), 1, "a reload made a second key");
    const made = await fetch(`${base}/api/tenants/${tenantId()}/contacts`, {
      method: "POST", headers: { "X-Api-Key": key, "Content-Type": "application/json" },
      body: JSON.stringify({ contactType: "Individual", firstName: "Grace", lastName: "Hopper" }),
    });
    assert.equal(made.status, 201, await made.text());
    await page.goto(tpath("/keys"));
    assert.equal(await page.locator("#new-key").count(), 0, "the key shown twice");

    // A test event is sent at once and shows in the log with its status.
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("link", { name: "CRM sync" }).click();
    await page.getByRole("button", { name: "Send a test event" }).click();
    await page.getByRole("status").filter({ hasText: "the endpoint answered 200" }).waitFor();
    assert.equal(await page.locator("#deliveries tr", { hasText: "webhook.test" }).filter({ hasText: "200" }).count(), 1,
      "the test event is not in the log: " + await page.locator("main").innerText());

    // Users: invite a viewer; grant support access.
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByLabel("Email").fill(env("VIEWER_EMAIL"));
    await page.getByLabel("Role", { exact: true }).selectOption("viewer");
    await page.getByRole("button", { name: "Send the invitation" }).click();
    await page.getByRole("status").filter({ hasText: "The invitation was sent." }).waitFor();
    await page.getByRole("button", { name: "Grant access" }).click();
    await page.getByRole("status").filter({ hasText: "Support access was granted." }).waitFor();
    await check(page, "users");

    // Revoke the key, after a confirmation.
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByRole("link", { name: "Revoke the key integration" }).click();
    await check(page, "revoke-confirm");
    await page.getByRole("button", { name: "Revoke the key" }).click();
    await page.getByRole("status").filter({ hasText: "The key was revoked." }).waitFor();
    const after = await fetch(`${base}/api/tenants/${tenantId()}/contacts`, { headers: { "X-Api-Key": key } });
    assert.equal(after.status, 401);

    // The viewer accepts and does not see the keys page.
    const viewerCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const viewer = await viewerCtx.newPage();
    watch(viewer, errors);
    await viewer.goto(base + linkPath(await mailTo(env("VIEWER_EMAIL")), "/accept-invitation"));
    await viewer.getByLabel("First name").fill("Vera");
    await viewer.getByLabel("Last name").fill("Viewer");
    await viewer.getByLabel("Password").fill(viewerPassword);
    await viewer.getByRole("button", { name: "Accept the invitation" }).click();
    await viewer.waitForURL("**/console/security").catch(async (e) => { throw new Error(e.message + await viewer.locator("main").innerText()); });
    await viewer.goto(base + "/console/");
    await viewer.waitForURL("**/dashboard");
    const nav = viewer.getByRole("navigation", { name: "Main" });
    assert.equal(await nav.getByRole("link", { name: "API keys" }).count(), 0, "the viewer sees the keys page");
    assert.equal(await nav.getByRole("link", { name: "Users" }).count(), 0, "the viewer sees the users page");
    assert.equal(await nav.getByRole("link", { name: "Webhooks" }).count(), 1);
    const refused = await viewer.goto(tpath("/keys"));
    assert.equal(refused.status(), 403);
    await viewer.getByRole("alert").filter({ hasText: "Your role cannot open this page" }).waitFor();
    await check(viewer, "viewer-refused");
    await viewerCtx.close();

    // The operator signs in, finds the tenant and works as the owner.
    const opCtx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const op = await opCtx.newPage();
    watch(op, errors);
    await signIn(op, env("OPERATOR_EMAIL"), env("OPERATOR_PASSWORD"), env("OPERATOR_TOTP"));
    await op.getByRole("button", { name: "Verify" }).click();
    await op.waitForURL("**/console/admin");
    await op.getByLabel("Search tenants").fill(env("TENANT_SEARCH"));
    await op.getByRole("button", { name: "Search" }).click();
    await check(op, "admin-tenants");
    await op.getByRole("link", { name: new RegExp(env("TENANT_SEARCH")) }).first().click();
    await check(op, "admin-tenant");
    await op.getByLabel("Member's user id").fill(env("OWNER_ID"));
    await op.getByLabel(/^Reason/).fill("Ticket 4521: the owner cannot find the webhook log");
    await op.getByRole("button", { name: "Start the impersonation" }).click();
    const bannerRegion = op.getByRole("region", { name: "Impersonation" });
    await bannerRegion.waitFor();
    const bannerText = await bannerRegion.textContent();
    assert.match(bannerText, new RegExp(env("OWNER_EMAIL").replace(/[.+]/g, "\\$&")));
    assert.match(bannerText, /minutes? left/);
    await check(op, "impersonating");
    // A refused action shows the refusal.
    await op.getByRole("link", { name: "API keys" }).click();
    await op.getByLabel("Name").fill("not allowed");
    await op.getByLabel("contacts:view").check();
    await op.getByRole("button", { name: "Create the key" }).click();
    await op.getByRole("alert").filter({ hasText: "Refused during impersonation" }).waitFor();
    assert.ok(await bannerRegion.isVisible());
    await check(op, "impersonation-refused");
    await op.getByRole("button", { name: "End the impersonation" }).click();
    await op.getByRole("status").filter({ hasText: "The impersonation ended." }).waitFor();
    assert.equal(await op.getByRole("region", { name: "Impersonation" }).count(), 0);
    await opCtx.close();

    // The contact's event has reached the receiver by now (the dispatcher
    // follows the audit log, which waits for every older transaction on
    // the database server): it shows in the log, and is sent again.
    await page.goto(tpath("/webhooks"));
    await page.getByRole("link", { name: "CRM sync" }).click();
    let delivered = false;
    for (let i = 0; i < 120 && !delivered; i++) {
      delivered = await page.locator("#deliveries tr", { hasText: "contact.created" }).filter({ hasText: "200" }).count() > 0;
      if (!delivered) { await new Promise((r) => setTimeout(r, 1000)); await page.reload(); }
    }
    assert.ok(delivered, "no delivery of contact.created with 200 in the log: " + await page.locator("main").innerText());
    await page.locator("#deliveries tr", { hasText: "contact.created" }).getByRole("button", { name: "Redeliver" }).first().click();
    await page.getByRole("status").filter({ hasText: "sent again" }).waitFor();
    await check(page, "webhook-log");

    // The owner sees the impersonation in the history.
    await page.getByRole("link", { name: "Users" }).click();
    await page.getByRole("cell", { name: "Ticket 4521: the owner cannot find the webhook log" }).waitFor();

    assert.deepEqual(errors, [], "console errors");
  } finally {
    await browser.close();
  }
});
