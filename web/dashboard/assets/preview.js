// Live preview on a template's page: as the editor's subject, HTML, text
// or strict box, or the preview's data, change, the page posts them (with
// the form's CSRF token) to the preview route asking for JSON, and shows
// the output. The HTML goes only into a sandboxed frame's srcdoc (no
// scripts, an opaque origin), never into this page. Without this script
// the preview form renders a saved version on submit.
"use strict";
(function () {
  var box = document.getElementById("live-preview");
  var pf = document.getElementById("preview-form");
  if (!box || !pf || !window.fetch || !window.URLSearchParams) {
    return;
  }
  var editor = document.getElementById("template-editor"); // absent for a viewer
  var status = document.getElementById("live-status");
  var error = document.getElementById("live-error");
  var subject = document.getElementById("live-subject");
  var frame = document.getElementById("live-html");
  var text = document.getElementById("live-text");
  var timer = null;
  var seq = 0;

  function body() {
    var b = new URLSearchParams();
    ["csrf", "version", "data"].forEach(function (n) {
      b.set(n, pf.elements[n].value);
    });
    if (editor) {
      ["subject", "html", "text"].forEach(function (n) {
        b.set(n, editor.elements[n].value);
      });
      if (editor.elements.strict.checked) {
        b.set("strict", "1");
      }
    }
    return b;
  }

  function failed(msg) {
    error.textContent = msg;
    error.hidden = false;
    status.textContent = "(not updated)";
  }

  function update() {
    var mine = ++seq;
    status.textContent = "(rendering…)";
    fetch(pf.action, {
      method: "POST", body: body(), credentials: "same-origin",
      headers: { "Accept": "application/json" }
    }).then(function (r) {
      var json = (r.headers.get("Content-Type") || "").indexOf("application/json") === 0;
      if (!json) {
        throw new Error("the preview failed (" + r.status + "): reload the page");
      }
      return r.json().then(function (j) {
        return { ok: r.ok, j: j };
      });
    }).then(function (res) {
      if (mine !== seq) {
        return; // a newer one is on its way
      }
      if (!res.ok) {
        failed(res.j.error ? res.j.error.message : "the preview failed");
        return;
      }
      error.hidden = true;
      subject.textContent = res.j.subject;
      text.textContent = res.j.text;
      frame.srcdoc = res.j.html;
      status.textContent = editor ? "(of the unsaved form)" : "(version " + res.j.version + ")";
    }).catch(function (e) {
      if (mine === seq) {
        failed(e.message);
      }
    });
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(update, 400);
  }

  box.hidden = false;
  [editor, pf].forEach(function (f) {
    if (f) {
      f.addEventListener("input", later);
      f.addEventListener("change", later);
    }
  });
  update();
})();
