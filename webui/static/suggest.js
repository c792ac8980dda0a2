// Completions for the search box: /api/suggest fills the input's <datalist>, which the
// browser shows and lets people pick with the arrow keys and Enter. Without this script
// (or with the API down) the box is a plain search box.
"use strict";
(function () {
  var input = document.getElementById("q");
  var list = document.getElementById("suggestions");
  if (!input || !list || !window.fetch) return;
  var timer = null;
  var asked = "";
  function fill(words) {
    while (list.firstChild) list.removeChild(list.firstChild);
    words.forEach(function (w) {
      var option = document.createElement("option");
      option.value = w; // text, never HTML
      list.appendChild(option);
    });
  }
  function ask() {
    var q = input.value;
    if (q === asked) return;
    asked = q;
    if (!q.trim()) { fill([]); return; }
    fetch("/api/suggest?q=" + encodeURIComponent(q), { headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : { suggestions: [] }; })
      .then(function (body) { if (input.value === q) fill(body.suggestions || []); })
      .catch(function () { fill([]); });
  }
  input.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(ask, 80); // one request per pause in typing
  });
})();
