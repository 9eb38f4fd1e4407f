// Copy buttons: a button with data-copy="ID" copies the text of the
// element with that id. The buttons are hidden until this script shows
// them; without it the text is there to select by hand.
"use strict";
document.querySelectorAll("button[data-copy]").forEach(function (b) {
  if (!navigator.clipboard) {
    return;
  }
  b.hidden = false;
  b.addEventListener("click", function () {
    var el = document.getElementById(b.getAttribute("data-copy"));
    if (!el) {
      return;
    }
    navigator.clipboard.writeText(el.textContent).then(function () {
      b.textContent = "Copied";
    }, function () {
      b.textContent = "Copy failed";
    });
  });
});
