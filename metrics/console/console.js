// The web console's script: polls /api/state and the selected program's
// log tail, and sends the control verbs with the token. Every string that
// comes from a program is set with textContent, never parsed as markup.
"use strict";
(function () {
  var control = document.body.dataset.control === "1";
  var tbody = document.querySelector("#programs tbody");
  var detail = document.getElementById("detail");
  var busy = false;

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }
  function age(ms) {
    if (!ms || ms <= 0) return "-";
    var s = Math.floor(ms / 1000);
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m" + (s % 60) + "s";
    if (s < 86400) return Math.floor(s / 3600) + "h" + Math.floor(s % 3600 / 60) + "m";
    return Math.floor(s / 86400) + "d" + Math.floor(s % 86400 / 3600) + "h";
  }
  function bytes(n) {
    if (n < 1024) return Math.max(n, 0) + "B";
    var u = ["Ki", "Mi", "Gi", "Ti"], i = 0, v = n / 1024;
    while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return v.toFixed(1) + u[i];
  }
  function selected() { return decodeURIComponent(location.hash.slice(1)); }

  function token(ask) {
    var t = sessionStorage.getItem("supervise-token");
    if ((!t || ask) && control) {
      t = window.prompt("Control token (kept for this tab only)") || "";
      if (t) sessionStorage.setItem("supervise-token", t); else sessionStorage.removeItem("supervise-token");
    }
    return t;
  }

  function act(verb, name, btn) {
    var t = token(false);
    if (!t) return;
    var body = { names: [name] };
    if (verb !== "stop") body.wait = false;
    btn.disabled = true;
    fetch("/v1/" + verb, {
      method: "POST",
      headers: { "Authorization": "Bearer " + t, "Content-Type": "application/json" },
      body: JSON.stringify(body)
    }).then(function (r) {
      if (r.status === 401) { sessionStorage.removeItem("supervise-token"); note("the token was refused", true); return; }
      return r.json().then(function (j) { note(j.ok ? verb + " " + name + ": done" : (j.error || r.statusText), !j.ok); });
    }).catch(function (e) { note(String(e), true); })
      .finally(function () { btn.disabled = false; poll(); });
  }

  function note(msg, bad) {
    var u = document.getElementById("updated");
    u.textContent = msg;
    u.className = bad ? "err" : "dim";
  }

  function row(p) {
    var tr = el("tr");
    tr.dataset.name = p.name;
    if (p.name === selected()) tr.className = "selected";
    var a = el("a", p.name, "name");
    a.href = "#" + encodeURIComponent(p.name);
    var td = el("td"); td.dataset.label = "name"; td.appendChild(a); tr.appendChild(td);
    var cells = [
      ["state", p.state, "state st-" + p.state],
      ["ready", p.ready ? "yes" : "no"],
      ["pid", p.pid ? String(p.pid) : "-"],
      ["uptime", age(p.uptime_ms)],
      ["restarts", String(p.restarts)],
      ["memory", p.pid ? bytes(p.memory_bytes) : "-"],
      ["cpu", p.pid ? p.cpu_seconds.toFixed(2) + "s" : "-"],
      ["last exit", p.last_exit]
    ];
    cells.forEach(function (c) {
      var td = el("td", c[1], c[2]);
      td.dataset.label = c[0];
      tr.appendChild(td);
    });
    var acts = el("td", undefined, "acts");
    if (control) {
      ["start", "stop", "restart"].forEach(function (verb) {
        var b = el("button", verb, "small");
        b.type = "button";
        b.dataset.verb = verb;
        b.addEventListener("click", function () { act(verb, p.name, b); });
        acts.appendChild(b);
      });
    }
    tr.appendChild(acts);
    return tr;
  }

  function why(p) {
    var box = document.getElementById("why");
    box.textContent = "";
    var r = p.run;
    if (!r) { box.appendChild(el("p", "No run has ended yet.", "dim")); return; }
    var what = r.signal ? "status " + r.status + " (signal " + r.signal + ")" : (r.status < 0 ? "did not start" : "exit " + r.code);
    var line = "last run: " + what + ", " + r.reason;
    if (r.duration_ms) line += ", ran " + age(r.duration_ms);
    line += ", ended " + new Date(r.ended_at).toLocaleString();
    if (r.peak_memory_bytes) line += ", peak " + bytes(r.peak_memory_bytes);
    if (r.message) line += ": " + r.message;
    box.appendChild(el("p", line));
    [["stdout", r.stdout], ["stderr", r.stderr]].forEach(function (s) {
      if (!s[1] || !s[1].length) return;
      box.appendChild(el("h3", s[0] + ", its last lines"));
      box.appendChild(el("pre", s[1].join("\n")));
    });
  }

  function logs(name) {
    return fetch("/api/logs?n=200&name=" + encodeURIComponent(name)).then(function (r) {
      return r.ok ? r.json() : [];
    }).then(function (lines) {
      var pre = document.getElementById("log");
      var atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      pre.textContent = lines.map(function (l) { return (l.stream === "stderr" ? "! " : "  ") + l.text; }).join("\n");
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    });
  }

  function poll() {
    if (busy || document.hidden) return;
    busy = true;
    fetch("/api/state", { cache: "no-store" }).then(function (r) { return r.json(); }).then(function (st) {
      control = st.control;
      var rows = document.createDocumentFragment();
      var sel = selected(), found = null;
      st.programs.forEach(function (p) { rows.appendChild(row(p)); if (p.name === sel) found = p; });
      tbody.textContent = "";
      tbody.appendChild(rows);
      if (!document.getElementById("updated").classList.contains("err")) note(new Date(st.now).toLocaleTimeString(), false);
      detail.hidden = !found;
      if (found) {
        document.getElementById("detail-name").textContent = found.name;
        why(found);
        return logs(found.name);
      }
    }).catch(function (e) { note("no answer: " + e, true); })
      .finally(function () { busy = false; });
  }

  var tb = document.getElementById("token");
  if (tb) tb.addEventListener("click", function () { token(true); });
  window.addEventListener("hashchange", poll);
  document.addEventListener("visibilitychange", poll);
  poll();
  setInterval(poll, 1000);
})();
