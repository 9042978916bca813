/**
 * The two files of /api-docs-ui/ that are ours (the rest come from the swagger-ui-dist package):
 * the page and the script that starts Swagger UI. Kept as text here; the browser runs them.
 *
 * How the page authenticates: every request it makes goes to the same API server, so a client
 * certificate installed in the browser is sent with each of them. A bearer token is typed into
 * the field at the top (or Swagger UI's Authorize dialog): it stays in the page's memory (never
 * in storage or a URL) and goes as `Authorization: Bearer …` on the /openapi/v3 fetches and on
 * every try-it request. Swagger UI's validator (an internet service) is switched off.
 */

export const API_DOCS_INDEX_HTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>corectl API</title>
<link rel="stylesheet" type="text/css" href="./swagger-ui.css">
<link rel="stylesheet" type="text/css" href="./page.css">
<link rel="icon" type="image/png" href="./favicon-32x32.png" sizes="32x32">
</head>
<body>
<form id="corectl-auth">
  <label for="corectl-token">Bearer token</label>
  <input id="corectl-token" type="password" autocomplete="off" placeholder="kept in this page only; a browser client certificate needs none">
  <button id="corectl-use-token" type="submit">Use</button>
  <span id="corectl-status" role="status"></span>
</form>
<div id="swagger-ui"></div>
<script src="./swagger-ui-bundle.js" charset="UTF-8"></script>
<script src="./swagger-ui-standalone-preset.js" charset="UTF-8"></script>
<script src="./initializer.js" charset="UTF-8"></script>
</body>
</html>
`;

export const API_DOCS_PAGE_CSS = `#corectl-auth { font-family: sans-serif; padding: 8px 20px; background: #1b1b1b; color: #fff; display: flex; gap: 8px; align-items: center; }
#corectl-auth input { flex: 0 1 28em; padding: 4px; }
#corectl-status { font-size: 90%; }
`;

export const API_DOCS_INITIALIZER_JS = `'use strict';
(function () {
  var token = '';
  var statusEl = document.getElementById('corectl-status');
  function say(text) { statusEl.textContent = text; }
  function bearer(v) { v = String(v || '').trim(); return v === '' || /\\s/.test(v) ? v : 'Bearer ' + v; }
  function authHeaders() { return token ? { Authorization: 'Bearer ' + token } : {}; }

  // Every request Swagger UI makes (spec fetches and try-it): the token typed above, unless the
  // Authorize dialog set one; a bare token there gets its "Bearer " prefix.
  function requestInterceptor(req) {
    var h = req.headers || (req.headers = {});
    var given = h.authorization || h.Authorization;
    delete h.authorization;
    if (given) h.Authorization = bearer(given);
    else if (token) h.Authorization = 'Bearer ' + token;
    req.credentials = 'same-origin';
    return req;
  }

  function start() {
    say('loading /openapi/v3 …');
    fetch('/openapi/v3', { credentials: 'same-origin', headers: authHeaders() }).then(function (r) {
      if (!r.ok) {
        say('GET /openapi/v3: ' + r.status + (r.status === 401 || r.status === 403 ? ' — give a bearer token above, or load this page with a client certificate' : ''));
        return undefined;
      }
      return r.json();
    }).then(function (index) {
      if (!index) return;
      var urls = Object.keys(index.paths || {}).sort(function (a, b) {
        // The core group first, then the named groups, as kubectl api-versions lists them.
        var ka = a.indexOf('api/') === 0 ? 0 : 1, kb = b.indexOf('api/') === 0 ? 0 : 1;
        return ka - kb || (a < b ? -1 : a > b ? 1 : 0);
      }).map(function (k) { return { name: k, url: index.paths[k].serverRelativeURL }; });
      say(urls.length + ' group versions');
      window.ui = SwaggerUIBundle({
        urls: urls,
        'urls.primaryName': urls.length ? urls[0].name : undefined,
        dom_id: '#swagger-ui',
        deepLinking: true,
        validatorUrl: null,
        persistAuthorization: false,
        requestInterceptor: requestInterceptor,
        presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
        layout: 'StandaloneLayout'
      });
    }).catch(function (e) { say('GET /openapi/v3 failed: ' + e.message); });
  }

  document.getElementById('corectl-auth').addEventListener('submit', function (ev) {
    ev.preventDefault();
    var input = document.getElementById('corectl-token');
    token = input.value.trim().replace(/^Bearer\\s+/i, '');
    input.value = '';
    start();
  });
  start();
})();
`;
