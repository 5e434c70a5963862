// Loads the gateway's /docs in headless Chromium (Debian's, driven by
// playwright-core), checks that every path of the spec is on the page,
// opens an error page from it, and fails on any console error.
// ALMONER_DOCS_URL is the gateway's base URL; the Go test
// cmd/almoner/e2e TestDocsSiteInBrowser starts a server and runs this.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const base = process.env.ALMONER_DOCS_URL;
// The spec's paths, with our parameter names. EXPECTED_PATHS may narrow the
// list while a resource group is still being built (comma-separated).
const specPaths = (process.env.ALMONER_DOCS_PATHS || "").split(",").filter(Boolean);

test("the API reference shows every spec path and no console error", async () => {
  assert.ok(base, "ALMONER_DOCS_URL is required");
  assert.ok(specPaths.length > 0, "ALMONER_DOCS_PATHS is required");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("requestfailed", (r) => errors.push("request failed: " + r.url()));

    await page.goto(base + "/docs");
    await page.waitForSelector(".op");
    const text = await page.textContent("#operations");
    const missing = specPaths.filter((p) => !text.includes(p));
    assert.deepEqual(missing, [], "paths missing from /docs");

    // Follow the link to an error category page, as a reader would.
    await page.click('a[href="/errors/validation"]');
    await page.waitForURL("**/errors/validation");
    assert.match(await page.textContent("h1"), /validation errors/);

    assert.deepEqual(errors, [], "console errors");
  } finally {
    await browser.close();
  }
});
