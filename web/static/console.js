// Gatehouse console enhancements. Every page works without this file: it adds
// copy buttons, keyboard shortcuts (j/k move, a/d approve/deny after a
// confirmation), keeps live-inserted cards in queue order, ticks the time
// left and shows times in the viewer's zone. No eval, no
// inline handlers: the CSP forbids both.
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  // The queue's items: cards, or the rows of the list view.
  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("#queue-cards > .card, #queue-rows > .row"));
  }

  function selected() {
    return document.querySelector("#queue-cards > .card.selected, #queue-rows > .row.selected");
  }

  function select(card) {
    var prev = selected();
    if (prev) prev.classList.remove("selected");
    if (!card) return;
    card.classList.add("selected");
    card.scrollIntoView({ block: "nearest" });
  }

  function move(step) {
    var list = cards();
    if (list.length === 0) return;
    var i = list.indexOf(selected());
    var next = i < 0 ? 0 : Math.min(list.length - 1, Math.max(0, i + step));
    select(list[next]);
  }

  function resolve(resolution) {
    var card = selected();
    if (!card) return;
    var button = card.querySelector('button[name="resolution"][value="' + resolution + '"]');
    if (!button) return;
    var verb = resolution === "deny" ? "Deny" : "Approve";
    var title = card.getAttribute("data-summary") || "this action";
    if (!window.confirm(verb + ": " + title + "?")) return;
    // A critical approval needs its box ticked as well, by hand: the
    // dialog alone is not the deliberate second step.
    var box = card.querySelector('input[name="confirm"]');
    if (resolution !== "deny" && box && !box.checked) {
      box.focus();
      return;
    }
    advanceFrom = card.id;
    button.click();
  }

  // The card resolved from the keyboard comes back swapped in place, without
  // the selection: select the next pending card after it, so j/a/d carry on
  // down the queue (or the resolved card itself when it was the last).
  var advanceFrom = null;
  function advance() {
    if (!advanceFrom) return;
    var done = document.getElementById(advanceFrom);
    advanceFrom = null;
    if (!done) return;
    var list = cards();
    for (var i = list.indexOf(done) + 1; i < list.length; i++) {
      if (list[i].getAttribute("data-status") === "pending") {
        select(list[i]);
        return;
      }
    }
    select(done);
  }

  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var t = ev.target;
    // Keys type into text fields; a ticked box (the critical
    // confirmation, a batch selection) keeps the shortcuts.
    var box = t && t.tagName === "INPUT" && (t.type === "checkbox" || t.type === "radio");
    if (t && ((t.tagName === "INPUT" && !box) || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)) return;
    switch (ev.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": resolve("approve_once"); break;
      case "d": resolve("deny"); break;
      default: return;
    }
    ev.preventDefault();
  });

  document.addEventListener("click", function (ev) {
    var b = ev.target.closest ? ev.target.closest("button[data-copy]") : null;
    if (!b || !navigator.clipboard) return;
    navigator.clipboard.writeText(b.getAttribute("data-copy")).then(function () {
      b.textContent = "Copied";
    });
  });

  // New cards arrive at the end of the list; move each before the first
  // pending card it outranks so the queue stays critical-first, oldest-first.
  function rank(card) { return parseInt(card.getAttribute("data-risk-rank") || "0", 10); }
  function created(card) { return card.getAttribute("data-created") || ""; }
  function place(card) {
    var list = cards();
    for (var i = 0; i < list.length; i++) {
      var other = list[i];
      if (other === card || other.getAttribute("data-status") !== "pending") continue;
      if (rank(card) > rank(other) || (rank(card) === rank(other) && created(card) < created(other))) {
        other.parentNode.insertBefore(card, other);
        return;
      }
    }
  }
  document.addEventListener("htmx:afterSettle", function () {
    cards().filter(function (c) { return c.hasAttribute("data-new"); }).forEach(function (c) {
      c.removeAttribute("data-new");
      // A card requested while the page loaded can arrive twice.
      if (document.querySelectorAll('[id="' + c.id + '"]').length > 1) {
        c.parentNode.removeChild(c);
        return;
      }
      place(c);
    });
    // A decided approval leaves the expiring-soon group.
    cards().filter(function (c) { return c.getAttribute("data-status") !== "pending"; }).forEach(function (c) {
      var soon = document.getElementById("soon-" + c.getAttribute("data-approval-id"));
      if (soon) soon.parentNode.removeChild(soon);
    });
    var empty = document.getElementById("queue-empty");
    if (empty) empty.hidden = cards().length > 0;
    advance();
    tick();
    localTimes();
  });

  // The live clock: every time left ticks each second and turns amber
  // ("soon", 15 minutes or less) then red ("urgent", 5 minutes or less),
  // the thresholds of handlers/console/triage.go. The server's text is the
  // fallback without JavaScript.
  var SOON = 15 * 60, URGENT = 5 * 60;
  function left(seconds) {
    if (seconds <= 0) return "expiring now";
    if (seconds < 60) return "in " + seconds + "s";
    var m = Math.floor(seconds / 60), s = seconds % 60;
    if (seconds < 3600) return "in " + m + "m " + (s < 10 ? "0" : "") + s + "s";
    return "in " + Math.floor(seconds / 3600) + "h " + (m % 60) + "m";
  }
  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-expires]").forEach(function (t) {
      var at = Date.parse(t.getAttribute("data-expires"));
      if (isNaN(at)) return;
      var seconds = Math.max(0, Math.floor((at - now) / 1000));
      var text = left(seconds);
      if (t.textContent !== text) t.textContent = text;
      t.classList.toggle("expires-urgent", seconds <= URGENT);
      t.classList.toggle("expires-soon", seconds > URGENT && seconds <= SOON);
      if (!t.title) t.title = new Date(at).toLocaleString();
    });
  }

  // Times in the viewer's time zone; the server renders UTC.
  function localTimes() {
    document.querySelectorAll("time[data-local]:not([data-localized])").forEach(function (t) {
      var at = Date.parse(t.getAttribute("datetime"));
      if (isNaN(at)) return;
      t.title = t.textContent;
      t.textContent = new Date(at).toLocaleString([], { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
      t.setAttribute("data-localized", "");
    });
  }

  tick();
  localTimes();
  window.setInterval(tick, 1000);
})();
