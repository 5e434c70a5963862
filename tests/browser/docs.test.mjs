// Loads the gateway's /docs (Scalar's API reference of /openapi.json) in
// headless Chromium (Debian's, driven by playwright-core), checks that
// every path of the spec is on the page, that nothing was requested from
// another origin (the viewer is embedded in the binary, no CDN), opens an
// error page from it, and fails on any console error. A screenshot of the
// page is written to ALMONER_DOCS_SCREENSHOT when it is set (CI keeps it
// as an artifact).
// ALMONER_DOCS_URL is the gateway's base URL; the Go test
// cmd/almoner/e2e TestDocsSiteInBrowser starts a server and runs this.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chromium } from "playwright-core";

const base = process.env.ALMONER_DOCS_URL;
// The spec's paths, with our parameter names. EXPECTED_PATHS may narrow the
// list while a resource group is still being built (comma-separated).
const specPaths = (process.env.ALMONER_DOCS_PATHS || "").split(",").filter(Boolean);
const screenshot = process.env.ALMONER_DOCS_SCREENSHOT;

test("the API reference shows every spec path and no console error", async () => {
  assert.ok(base, "ALMONER_DOCS_URL is required");
  assert.ok(specPaths.length > 0, "ALMONER_DOCS_PATHS is required");
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors = [];
    page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("requestfailed", (r) => errors.push("request failed: " + r.url()));
    const origin = new URL(base).origin;
    page.on("request", (r) => {
      const u = new URL(r.url());
      if (u.protocol !== "data:" && u.protocol !== "blob:" && u.origin !== origin) {
        errors.push("request to another origin: " + r.url());
      }
    });

    // The bundle is 4 MB of JavaScript to parse: generous timeouts for a
    // busy CI machine (about 4 s here when quiet). The waits poll on a
    // timer: the default polls on animation frames, which a renderer
    // starved of CPU may not give for a long time.
    page.setDefaultTimeout(150000);
    const spec = [];
    page.on("response", (r) => {
      if (new URL(r.url()).pathname === "/openapi.json") spec.push(`${r.status()} after ${Date.now() - started} ms`);
    });
    const started = Date.now();
    await page.goto(base + "/docs", { waitUntil: "domcontentloaded" });
    const loaded = Date.now() - started;
    // Scalar renders into #app once it has read /openapi.json, then every
    // operation of every open tag, with its method and path. Wait for all
    // the paths, then name those that never came.
    await page.waitForFunction(() => document.body.innerText.includes("/api/tenants/"), null, { polling: 250 })
      .catch(async (e) => { throw new Error(e.message + "\n" + await diagnose(page, spec, errors, started)); });
    console.log(`/docs: DOM after ${loaded} ms, first path after ${Date.now() - started} ms`);
    await page.waitForFunction((ps) => ps.every((p) => document.body.innerText.includes(p)), specPaths, { timeout: 30000, polling: 250 })
      .catch(() => {});
    const text = await page.evaluate(() => document.body.innerText);
    const missing = specPaths.filter((p) => !text.includes(p));
    assert.deepEqual(missing, [], "paths missing from /docs");
    if (screenshot) {
      await page.screenshot({ path: screenshot, fullPage: false });
    }

    // Follow the link to an error category page, as a reader would.
    await page.click('a[href="/errors/validation"]');
    await page.waitForURL("**/errors/validation");
    assert.match(await page.textContent("h1"), /validation errors/);

    assert.deepEqual(errors, [], "console errors");
  } finally {
    await browser.close();
  }
});

// diagnose says what the page had when the reference never rendered: the
// spec's responses, the errors so far and the start of the page's text.
async function diagnose(page, spec, errors, started) {
  const state = await page.evaluate(() => ({
    readyState: document.readyState,
    text: document.body ? document.body.innerText.slice(0, 400) : "(no body)",
    length: document.body ? document.body.innerText.length : 0,
  })).catch((e) => ({ error: String(e) }));
  return JSON.stringify({ elapsedMs: Date.now() - started, openapiJson: spec, errors, state }, null, 2);
}
