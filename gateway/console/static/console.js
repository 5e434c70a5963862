// The console's only script: copy buttons, the impersonation banner's
// countdown, and a page answered to a form post reloading as a read.
// Every page works without it (forms post, links navigate).
"use strict";

// A page that shows a secret (a new key, an endpoint's signing secret) is
// the answer to its form's post; without this a reload would post the
// form again and make a second one. The server names the page to read
// instead (data-reload); the history entry becomes that URL, so a reload
// reads it.
if (document.body.dataset.reload) {
  history.replaceState(null, "", document.body.dataset.reload);
}
document.addEventListener("click", async (ev) => {
  const btn = ev.target.closest("button[data-copy]");
  if (!btn) return;
  const el = document.getElementById(btn.dataset.copy);
  if (!el) return;
  const text = el.tagName === "OL" ? Array.from(el.querySelectorAll("li")).map((li) => li.textContent.trim()).join("\n") : el.textContent.trim();
  const label = btn.textContent;
  try {
    await navigator.clipboard.writeText(text);
    btn.textContent = "Copied";
  } catch {
    // Without clipboard access, select the text for the user to copy.
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    btn.textContent = "Selected: press Ctrl+C";
  }
  setTimeout(() => { btn.textContent = label; }, 3000);
});

function countdown() {
  for (const el of document.querySelectorAll("[data-expires]")) {
    const left = Math.max(0, Math.round((Date.parse(el.dataset.expires) - Date.now()) / 60000));
    el.textContent = left === 0 ? "ending now" : left + (left === 1 ? " minute left" : " minutes left");
  }
}
countdown();
setInterval(countdown, 30000);
