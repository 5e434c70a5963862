// /docs/docs.js: the reference page's one script, a served file rather
// than inline so that the page's Content-Security-Policy allows scripts
// from this origin only (no 'unsafe-inline': gateway/headers.go).
//
// Scalar's API reference (gateway/docsite/scalar, pinned in tools/scalar)
// renders the served document. Nothing is loaded from or sent elsewhere:
// the default fonts come from Scalar's CDN, telemetry calls home, the
// try-it client goes through Scalar's proxy, and the AI agent and the MCP
// generator are Scalar's services, so all are off. Every tag is open, so
// the page shows every operation.
Scalar.createApiReference("#app", {
  url: "/openapi.json",
  withDefaultFonts: false,
  telemetry: false,
  hideClientButton: true,
  showDeveloperTools: "never",
  documentDownloadType: "json",
  agent: { disabled: true },
  mcp: { disabled: true },
  defaultOpenAllTags: true,
});
