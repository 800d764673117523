// "Notifications on this device": subscribes this browser to Web Push and
// tells the console, or undoes both. Loaded only by that page; the server
// renders the VAPID public key and the session's form token into
// #push-control. No inline script, no eval: the CSP forbids both.
(function () {
  "use strict";
  var root = document.getElementById("push-control");
  if (!root) return;
  var state = document.getElementById("push-state");
  var enable = document.getElementById("push-enable");
  var disable = document.getElementById("push-disable");

  function show(text, subscribed) {
    state.textContent = text;
    root.setAttribute("data-state", subscribed === null ? "unavailable" : subscribed ? "on" : "off");
    enable.hidden = subscribed !== false;
    disable.hidden = subscribed !== true;
  }

  if (!("serviceWorker" in navigator) || !("PushManager" in window) || !("Notification" in window)) {
    show("This browser cannot receive push notifications. On an iPhone or iPad, add the console to the home screen first, then open it from there.", null);
    return;
  }

  function keyBytes(b64url) {
    var s = b64url.replace(/-/g, "+").replace(/_/g, "/");
    var raw = atob(s + "===".slice((s.length + 3) % 4));
    var out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  // send tells the console; the form token travels in a header, which a
  // cross-origin page cannot set without the server's consent.
  function send(method, body) {
    return fetch("/push/subscriptions", {
      method: method,
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": root.getAttribute("data-csrf") },
      body: JSON.stringify(body),
    }).then(function (res) {
      if (res.ok) return;
      return res.json().then(
        function (e) { throw new Error((e && e.error && e.error.message) || "the server refused (" + res.status + ")"); },
        function () { throw new Error("the server refused (" + res.status + ")"); }
      );
    });
  }

  function registration() {
    return navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(function () {
      return navigator.serviceWorker.ready;
    });
  }

  function refresh() {
    if (Notification.permission === "denied") {
      show("Notifications are blocked for this site. Allow them in the browser's site settings, then reload.", null);
      return Promise.resolve();
    }
    return registration().then(function (reg) {
      return reg.pushManager.getSubscription();
    }).then(function (sub) {
      show(sub ? "Notifications are on for this device." : "Notifications are off for this device.", !!sub);
    });
  }

  function fail(err) {
    show("Could not change notifications: " + (err && err.message ? err.message : err), false);
  }

  enable.addEventListener("click", function () {
    enable.disabled = true;
    Notification.requestPermission().then(function (perm) {
      if (perm !== "granted") {
        show("Notifications were not allowed.", false);
        return;
      }
      return registration().then(function (reg) {
        return reg.pushManager.subscribe({
          userVisibleOnly: true,
          applicationServerKey: keyBytes(root.getAttribute("data-vapid-key")),
        });
      }).then(function (sub) {
        return send("POST", sub.toJSON());
      }).then(function () {
        show("Notifications are on for this device.", true);
      });
    }).catch(fail).then(function () { enable.disabled = false; });
  });

  disable.addEventListener("click", function () {
    disable.disabled = true;
    registration().then(function (reg) {
      return reg.pushManager.getSubscription();
    }).then(function (sub) {
      if (!sub) return;
      var endpoint = sub.endpoint;
      // The server forgets the endpoint even if the browser cannot
      // unsubscribe: a push to it would show nothing here anyway.
      return sub.unsubscribe().catch(function () {}).then(function () {
        return send("DELETE", { endpoint: endpoint });
      });
    }).then(function () {
      show("Notifications are off for this device.", false);
    }).catch(fail).then(function () { disable.disabled = false; });
  });

  refresh().catch(fail);
})();
