// The what-if page's file picker: reads a spec file into the text area, in the browser
// (the console takes forms, not uploads). Without JavaScript the picker stays hidden and
// a spec is pasted. Never evaluates anything it reads: the text is a field's value.
(function () {
  "use strict";
  function reveal(root) {
    root.querySelectorAll("[data-needs-script]").forEach(function (el) { el.hidden = false; });
  }
  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  document.addEventListener("htmx:load", function (event) { reveal(event.target); });
  document.addEventListener("change", function (event) {
    var input = event.target;
    if (!input.matches || !input.matches("input[type=file][data-into]")) return;
    var file = input.files && input.files[0];
    var area = document.getElementById(input.dataset.into);
    var status = document.getElementById(input.id + "-status");
    if (!file || !area) return;
    var most = Number(area.dataset.maxBytes || "0");
    if (most && file.size > most) {
      if (status) status.textContent = file.name + " is " + file.size + " bytes: at most " + most + " here.";
      input.value = "";
      return;
    }
    file.text().then(function (text) {
      area.value = text;
      if (status) status.textContent = "Read " + file.name + " (" + file.size + " bytes).";
    });
  });
})();
