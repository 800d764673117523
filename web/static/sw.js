// Gatehouse service worker: shows Web Push notifications and opens the
// console when one is tapped. It caches nothing and handles no fetch, so
// the console never serves a stale page from here.
"use strict";

self.addEventListener("install", function () {
  self.skipWaiting();
});

self.addEventListener("activate", function (ev) {
  ev.waitUntil(self.clients.claim());
});

// The payload (JSON: title, body, tag, url, kind, risk) comes from the
// server, encrypted to this browser's keys. The tag is per approval, so a
// resolved or expired approval replaces its "waiting" notification instead
// of leaving it behind.
self.addEventListener("push", function (ev) {
  var data = {};
  if (ev.data) {
    try {
      data = ev.data.json();
    } catch (e) {
      data = { body: ev.data.text() };
    }
  }
  var url = sameOrigin(data.url) || self.location.origin + "/";
  var title = typeof data.title === "string" && data.title ? data.title : "Gatehouse";
  var options = {
    body: typeof data.body === "string" ? data.body : "",
    icon: "/static/icon-192.png",
    badge: "/static/icon-192.png",
    data: { url: url },
  };
  if (typeof data.tag === "string" && data.tag) {
    options.tag = data.tag;
    // A replacement (approved, expired) alerts again only when it asks for
    // attention; the risk decides nothing here, the server's wording does.
    options.renotify = data.kind === "requested" || data.kind === "expiring";
  }
  ev.waitUntil(self.registration.showNotification(title, options));
});

// A tap focuses a console tab already open (and moves it to the card) or
// opens the card in a new one.
self.addEventListener("notificationclick", function (ev) {
  ev.notification.close();
  var url = (ev.notification.data && ev.notification.data.url) || "/";
  ev.waitUntil(
    self.clients.matchAll({ type: "window", includeUncontrolled: true }).then(function (list) {
      for (var i = 0; i < list.length; i++) {
        var c = list[i];
        if (new URL(c.url).origin === self.location.origin && "focus" in c) {
          return c.focus().then(function (focused) {
            return focused && "navigate" in focused ? focused.navigate(url) : focused;
          });
        }
      }
      return self.clients.openWindow(url);
    })
  );
});

// sameOrigin keeps a notification's link on this console: a payload URL
// to another origin is dropped, so a tap never leaves the console.
function sameOrigin(raw) {
  if (typeof raw !== "string" || raw === "") return "";
  try {
    var u = new URL(raw, self.location.origin);
    return u.origin === self.location.origin ? u.href : "";
  } catch (e) {
    return "";
  }
}
