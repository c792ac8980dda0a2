// Starts Redoc on /redoc (a file, not inline: the site's policy allows no inline script).
"use strict";
(function () {
  var node = document.getElementById("redoc");
  Redoc.init(node.getAttribute("data-spec"), {}, node);
})();
