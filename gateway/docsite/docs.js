// Renders /openapi.json (OpenAPI 3.1, generated from the protos) as a
// browsable reference. No third-party code: the document is simple enough.
"use strict";

const METHODS = ["get", "post", "put", "patch", "delete"];

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function refName(ref) { return ref.split("/").pop(); }

// nonNull returns the schema a nullable one wraps ({oneOf: [X, null]}), or
// the schema itself.
function nonNull(schema) {
  if (schema && schema.oneOf) {
    const rest = schema.oneOf.filter(s => s.type !== "null");
    if (rest.length === 1) return rest[0];
  }
  return schema;
}

function typeOf(schema, defs) {
  if (!schema) return "";
  const inner = nonNull(schema);
  if (inner !== schema) return typeOf(inner, defs) + " | null";
  if (schema.$ref) return refName(schema.$ref);
  const types = [].concat(schema.type || (schema.readOnly ? "any (ignored)" : "any"));
  const base = types.filter(t => t !== "null");
  const nullable = base.length < types.length ? " | null" : "";
  if (base[0] === "array") return typeOf(schema.items, defs) + "[]" + nullable;
  if (base[0] === "object" && typeof schema.additionalProperties === "object") return "map<string, " + typeOf(schema.additionalProperties, defs) + ">" + nullable;
  return base.join(" | ") + (schema.format ? " (" + schema.format + ")" : "") + nullable;
}

// jsonSchema returns the schema of a request body's or a response's first
// media type.
function jsonSchema(content) {
  const media = Object.values(content || {})[0];
  return media && media.schema;
}

// propertiesTable lists a schema's fields, expanding nested messages one
// level at a time (each nested message gets its own table, once).
function schemaTables(schema, defs, seen) {
  const out = [];
  const queue = [schema];
  while (queue.length) {
    let s = queue.shift();
    let name = null;
    if (s && s.$ref) { name = refName(s.$ref); if (seen.has(name)) continue; seen.add(name); s = defs[name]; }
    if (!s) continue;
    if (s.type === "array") { queue.push(s.items); continue; }
    const props = s.properties || {};
    if (Object.keys(props).length === 0) continue;
    const rows = Object.entries(props).map(([p, ps]) => {
      const inner = nonNull(ps);
      if (inner.$ref || (inner.items && inner.items.$ref)) queue.push(inner.$ref ? inner : inner.items);
      return el("tr", {}, el("td", {}, el("code", {}, p)), el("td", { class: "type" }, typeOf(ps, defs)),
        el("td", { class: "muted" }, ps.description || ps.title || ""));
    });
    out.push(el("div", {}, name ? el("strong", {}, name) : null,
      el("table", {}, el("tr", {}, el("th", {}, "property"), el("th", {}, "type"), el("th", {}, "description")), ...rows)));
  }
  return out;
}

function renderOperation(path, method, op, defs, responseDefs) {
  const id = (op.operationId || method + path).replace(/[^A-Za-z0-9_-]/g, "_");
  const box = el("div", { class: "op", id: id },
    el("h4", {}, el("span", { class: "method " + method.toUpperCase() }, method.toUpperCase()), path),
    op.summary ? el("p", {}, el("strong", {}, op.summary)) : null,
    op.description ? el("p", { class: "muted" }, op.description) : null);
  const params = op.parameters || [];
  if (params.length) {
    box.append(el("table", {}, el("tr", {}, el("th", {}, "parameter"), el("th", {}, "in"), el("th", {}, "type"), el("th", {}, "description")),
      ...params.map(p => el("tr", {}, el("td", {}, el("code", {}, p.name), p.required ? " *" : ""), el("td", {}, p.in),
        el("td", { class: "type" }, typeOf(p.schema, defs)), el("td", { class: "muted" }, p.description || "")))));
  }
  const body = op.requestBody && jsonSchema(op.requestBody.content);
  if (body) {
    box.append(el("p", {}, "Request body: ", el("span", { class: "type" }, typeOf(body, defs))));
    box.append(...schemaTables(body, defs, new Set()));
  }
  const responses = Object.entries(op.responses || {}).map(([code, r]) => {
    const full = r.$ref ? Object.assign({}, responseDefs[refName(r.$ref)], r.description ? { description: r.description } : {}) : r;
    return [code, full];
  });
  box.append(el("table", {}, el("tr", {}, el("th", {}, "status"), el("th", {}, "body"), el("th", {}, "meaning")),
    ...responses.map(([code, r]) => el("tr", {}, el("td", {}, code), el("td", { class: "type" }, typeOf(jsonSchema(r.content), defs)),
      el("td", { class: "muted" }, r.description || "")))));
  const ok = responses.find(([code]) => code.startsWith("2"));
  if (ok && jsonSchema(ok[1].content)) box.append(...schemaTables(jsonSchema(ok[1].content), defs, new Set()));
  return { id, box };
}

async function main() {
  const resp = await fetch("/openapi.json");
  const doc = await resp.json();
  const defs = (doc.components && doc.components.schemas) || {};
  const responseDefs = (doc.components && doc.components.responses) || {};
  document.getElementById("description").textContent = (doc.info && doc.info.description) || "";
  const byTag = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const m of METHODS) {
      if (!item[m]) continue;
      const tag = (item[m].tags && item[m].tags[0]) || "Other";
      if (!byTag.has(tag)) byTag.set(tag, []);
      byTag.get(tag).push([path, m, item[m]]);
    }
  }
  const ops = document.getElementById("operations");
  const toc = document.getElementById("toc");
  ops.replaceChildren();
  for (const tag of [...byTag.keys()].sort()) {
    const tagId = "tag-" + tag.replace(/[^A-Za-z0-9]/g, "-");
    toc.append(el("li", { class: "tag" }, el("a", { href: "#" + tagId }, tag)));
    ops.append(el("h2", { class: "tag", id: tagId }, tag));
    for (const [path, m, op] of byTag.get(tag)) {
      const { id, box } = renderOperation(path, m, op, defs, responseDefs);
      ops.append(box);
      toc.append(el("li", {}, el("a", { href: "#" + id }, m.toUpperCase() + " " + path)));
    }
  }
  const cats = await (await fetch("/errors/index.json")).json();
  document.getElementById("categories").replaceChildren(...cats.map(c =>
    el("li", {}, el("a", { href: "/errors/" + c.name }, c.name), " — " + c.title)));
}

main().catch(err => {
  document.getElementById("operations").replaceChildren(el("p", {}, "Could not load the API description: " + err));
  throw err;
});
