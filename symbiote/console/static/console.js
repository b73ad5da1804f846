// Symbiote console: selecting all memories, and sending an import in parts with its progress.
// No inline scripts (the pages' Content-Security-Policy forbids them); htmx does the polling.
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (!box.classList || !box.classList.contains("select-all")) return;
    var form = box.closest("form");
    form.querySelectorAll('input[name="ids"]').forEach(function (item) { item.checked = box.checked; });
  });

  function say(status, text, isError) {
    status.textContent = "";
    var p = document.createElement("p");
    p.className = isError ? "error" : "note";
    p.textContent = text;
    status.appendChild(p);
  }

  async function post(url, body, type) {
    var headers = {"X-CSRF-Token": csrf()};
    if (type) headers["Content-Type"] = type;
    var response = await fetch(url, {method: "POST", headers: headers, body: body, credentials: "same-origin"});
    if (!response.ok) throw new Error((await response.text()) || ("HTTP " + response.status));
    return response;
  }

  async function upload(form) {
    var base = form.dataset.base;
    var file = document.getElementById("import-file").files[0];
    var dry = document.getElementById("import-dry").checked;
    var replace = document.getElementById("import-replace").checked;
    var status = document.getElementById("import-status");
    if (!file) return;
    var button = form.querySelector("button");
    button.disabled = true;  // one import at a time: enabled again when this one has finished (below)
    var started = false;
    try {
      var job = await (await post(base + "/import?name=" + encodeURIComponent(file.name), "", "text/plain")).json();
      var chunk = job.chunk || parseInt(form.dataset.chunk, 10);
      for (var start = 0; start < file.size; start += chunk) {
        say(status, "Uploading… " + Math.floor(100 * start / file.size) + " %", false);
        await post(base + "/import/" + job.job + "/part", file.slice(start, start + chunk), "application/octet-stream");
      }
      var reply = await post(base + "/import/" + job.job + "/start?dry_run=" + (dry ? "1" : "0") + "&replace=" + (replace ? "1" : "0"), "", "text/plain");
      status.outerHTML = await reply.text();
      started = true;
      var fresh = document.getElementById("import-status");
      if (window.htmx) window.htmx.process(fresh);
      finished();
    } catch (error) {
      say(status, "Import failed: " + error.message, true);
    } finally {
      if (!started) button.disabled = false;
    }
  }

  // The import button comes back once the import shown has finished (its status is polled by htmx).
  function finished() {
    var status = document.getElementById("import-status");
    var button = document.getElementById("import-button");
    if (!status || !button) return;
    var state = status.getAttribute("data-state");
    if (state === "done" || state === "failed") {
      button.disabled = false;
      var busy = document.getElementById("import-busy");
      if (busy) busy.remove();
    }
  }
  document.addEventListener("htmx:afterSettle", finished);

  document.addEventListener("submit", function (event) {
    if (event.target.id !== "import-form") return;
    event.preventDefault();
    upload(event.target);
  });
})();
