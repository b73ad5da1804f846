// Symbiote console: selecting memories, copying the server's URL, and sending an import in parts with its progress.
// No inline scripts (the pages' Content-Security-Policy forbids them); htmx does the polling.
(function () {
  "use strict";

  function csrf() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // "Delete selected…" is offered only once something is selected.
  function syncSelection() {
    document.querySelectorAll("form.selection").forEach(function (form) {
      var button = form.querySelector("button.danger");
      if (button) button.disabled = !form.querySelector('input[name="ids"]:checked, input[name="all"]:checked');
    });
  }

  document.addEventListener("change", function (event) {
    var box = event.target;
    if (box.classList && box.classList.contains("select-all")) {
      box.closest("form").querySelectorAll('input[name="ids"]').forEach(function (item) { item.checked = box.checked; });
    }
    syncSelection();
  });
  document.addEventListener("DOMContentLoaded", syncSelection);
  document.addEventListener("htmx:afterSettle", syncSelection);

  // The empty console's "Copy the URL".
  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("[data-copy]") : null;
    if (!button) return;
    var text = document.getElementById(button.dataset.copy).textContent.trim();
    var done = document.getElementById("copy-done");
    function said(message) { if (done) done.textContent = message; }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(function () { said("Copied: " + text); },
        function () { said("Copy it by hand: " + text); });
    } else {
      var range = document.createRange();
      range.selectNodeContents(document.getElementById(button.dataset.copy));
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      said(document.execCommand && document.execCommand("copy") ? "Copied: " + text : "Selected: copy it with Ctrl+C.");
    }
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
