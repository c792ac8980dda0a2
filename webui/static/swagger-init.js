// Starts Swagger UI on /docs (a file, not inline: the site's policy allows no inline script).
"use strict";
(function () {
  var node = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: node.getAttribute("data-spec"),
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
  });
})();
