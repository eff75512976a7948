// The console's only script: follow the change feed (server-sent events) and refresh the
// parts of the page marked data-live from a fresh copy of the same page. The server renders
// and escapes everything; this file adds no markup of its own.
"use strict";
(function () {
  if (!document.querySelector("[data-live]") || !window.EventSource) {
    return;
  }
  let busy = false;
  let again = false;
  async function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin" });
      if (answer.ok) {
        const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
        for (const part of document.querySelectorAll("[data-live]")) {
          const replacement = fresh.getElementById(part.id);
          if (replacement && !part.contains(document.activeElement)) {
            part.replaceWith(document.importNode(replacement, true));
          }
        }
        document.body.dataset.refreshed = String(Date.now());
      }
    } finally {
      busy = false;
      if (again) {
        again = false;
        refresh();
      }
    }
  }
  const source = new EventSource("/events");
  source.addEventListener("change", refresh);
  // A change made between this page's rendering and the stream's (re)opening reaches no
  // stream: each opening refreshes once, so the page never keeps what it missed.
  source.addEventListener("open", function () {
    document.body.dataset.live = "connected";
    refresh();
  });
})();
