// The cqs admin console's scripts: live refresh (polling the console's JSON endpoints),
// sparklines and charts drawn as SVG, and small form helpers. No libraries; every page
// works without this file, only without live updates and charts.
(function () {
  "use strict";

  var SVG = "http://www.w3.org/2000/svg";
  var main = document.getElementById("main");
  if (!main) return;
  var prefix = "/admin";

  // --- small helpers -------------------------------------------------------------------------

  function el(tag, attributes, children) {
    var node = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (key) {
      node.setAttribute(key, attributes[key]);
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function svgEl(tag, attributes) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attributes || {}).forEach(function (key) {
      node.setAttribute(key, attributes[key]);
    });
    return node;
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function count(value) {
    return value === null || value === undefined ? "—" : String(value);
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "—";
    if (seconds < 60) {
      return seconds >= 10 || seconds === Math.floor(seconds)
        ? Math.round(seconds) + " s" : seconds.toFixed(1) + " s";
    }
    var whole = Math.floor(seconds);
    var minutes = Math.floor(whole / 60), secs = whole % 60;
    var hours = Math.floor(minutes / 60); minutes = minutes % 60;
    var days = Math.floor(hours / 24); hours = hours % 24;
    if (days) return days + " d " + hours + " h";
    if (hours) return hours + " h " + minutes + " min";
    return minutes + " min " + secs + " s";
  }

  function setText(root, field, text) {
    var node = root.querySelector('[data-field="' + field + '"]');
    if (node && node.textContent !== text) node.textContent = text;
    return node;
  }

  function csrfToken() {
    var meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.getAttribute("content") : "";
  }

  // --- forms -----------------------------------------------------------------------------------

  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute("data-confirm");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  var addAttribute = document.querySelector("[data-add-attribute]");
  if (addAttribute) {
    addAttribute.addEventListener("click", function () {
      var rows = document.querySelector("[data-attribute-rows]");
      var all = rows.querySelectorAll("[data-attribute-row]");
      if (all.length >= 10) return;
      var copy = all[all.length - 1].cloneNode(true);
      var number = all.length + 1;
      copy.querySelectorAll("input, select").forEach(function (field) {
        var id = field.id.replace(/-\d+$/, "-" + number);
        var label = copy.querySelector('label[for="' + field.id + '"]');
        field.id = id;
        if (label) label.setAttribute("for", id);
        if (field.tagName === "INPUT") field.value = "";
        else field.selectedIndex = 0;
      });
      copy.querySelectorAll("[data-row-number]").forEach(function (span) {
        span.textContent = " of attribute " + number;
      });
      rows.appendChild(copy);
      copy.querySelector("input").focus();
    });
  }

  // --- drawing -----------------------------------------------------------------------------------

  // Runs of known values as polyline point lists (a null breaks the line).
  function runs(values, x, y) {
    var out = [], current = [];
    values.forEach(function (value, index) {
      if (value === null || value === undefined) {
        if (current.length) out.push(current);
        current = [];
      } else {
        current.push(x(index).toFixed(1) + "," + y(value).toFixed(1));
      }
    });
    if (current.length) out.push(current);
    return out;
  }

  function drawSpark(svg, values) {
    clear(svg);
    var width = 120, height = 24;
    var known = values.filter(function (v) { return v !== null && v !== undefined; });
    if (!known.length) {
      var none = svgEl("text", { x: 2, y: 16, "class": "spark-none" });
      none.textContent = "no data yet";
      svg.appendChild(none);
      return;
    }
    var max = Math.max.apply(null, known.concat([0.001]));
    var step = values.length > 1 ? (width - 2) / (values.length - 1) : 0;
    var x = function (i) { return 1 + i * step; };
    var y = function (v) { return height - 2 - (v / max) * (height - 4); };
    runs(values, x, y).forEach(function (points) {
      if (points.length === 1) points.push(points[0]);
      svg.appendChild(svgEl("polyline", { points: points.join(" "), "class": "spark-line" }));
    });
    svg.setAttribute("aria-label", "Messages sent per second over the last hour; latest "
      + known[known.length - 1] + ", highest " + Math.max.apply(null, known));
  }

  function niceMax(value) {
    if (value <= 0) return 1;
    var power = Math.pow(10, Math.floor(Math.log10(value)));
    var steps = [1, 2, 2.5, 5, 10];
    for (var i = 0; i < steps.length; i++) {
      if (value <= steps[i] * power) return steps[i] * power;
    }
    return 10 * power;
  }

  // A line chart of several series over the last hour (times in ms).
  function drawChart(svg, times, series, spanMs) {
    clear(svg);
    var width = 600, height = 180, left = 44, right = 8, top = 8, bottom = 22;
    var now = times.length ? times[times.length - 1] : Date.now();
    var start = now - spanMs;
    var max = 0;
    series.forEach(function (s) {
      s.values.forEach(function (v) { if (v !== null && v !== undefined && v > max) max = v; });
    });
    max = niceMax(max);
    var x = function (i) { return left + (times[i] - start) / spanMs * (width - left - right); };
    var y = function (v) { return top + (1 - v / max) * (height - top - bottom); };
    [0, 0.5, 1].forEach(function (fraction) {
      var value = max * fraction, at = y(value);
      svg.appendChild(svgEl("line", { x1: left, x2: width - right, y1: at, y2: at, "class": "grid" }));
      var label = svgEl("text", { x: left - 4, y: at + 4, "class": "axis", "text-anchor": "end" });
      label.textContent = value >= 100 ? Math.round(value) : +value.toFixed(2);
      svg.appendChild(label);
    });
    [["-60 min", 0], ["-30 min", 0.5], ["now", 1]].forEach(function (tick) {
      var label = svgEl("text", {
        x: left + tick[1] * (width - left - right), y: height - 6, "class": "axis",
        "text-anchor": tick[1] === 0 ? "start" : tick[1] === 1 ? "end" : "middle"
      });
      label.textContent = tick[0];
      svg.appendChild(label);
    });
    var drawn = 0;
    series.forEach(function (s) {
      var lines = runs(s.values, x, y);
      var samples = lines.reduce(function (total, points) { return total + points.length; }, 0);
      lines.forEach(function (points) {
        if (samples <= 60) {  // a short history: mark each sample, or a few would not show
          points.forEach(function (point) {
            var at = point.split(",");
            svg.appendChild(svgEl("circle", { cx: at[0], cy: at[1], r: 2.5, "class": "dot dot-" + s.key }));
          });
        }
        if (points.length === 1) points.push(points[0]);
        svg.appendChild(svgEl("polyline", { points: points.join(" "), "class": "line line-" + s.key }));
        drawn++;
      });
    });
    if (!drawn) {
      var empty = svgEl("text", { x: width / 2, y: height / 2, "class": "axis", "text-anchor": "middle" });
      empty.textContent = "No samples yet: the first ones come within seconds.";
      svg.appendChild(empty);
    }
    svg.setAttribute("data-points", String(drawn));
  }

  function drawHistory(history) {
    var span = 3600 * 1000;
    var depth = document.querySelector('[data-chart="depth"]');
    var rates = document.querySelector('[data-chart="rates"]');
    if (depth) {
      drawChart(depth, history.t, [
        { key: "visible", values: history.visible },
        { key: "in_flight", values: history.in_flight },
        { key: "delayed", values: history.delayed }
      ], span);
    }
    if (rates) {
      drawChart(rates, history.t, [
        { key: "sent", values: history.sent_per_second },
        { key: "received", values: history.received_per_second }
      ], span);
    }
  }

  document.querySelectorAll("svg.spark[data-values]").forEach(function (svg) {
    drawSpark(svg, JSON.parse(svg.getAttribute("data-values") || "[]"));
  });
  var historyData = document.getElementById("history-data");
  if (historyData) drawHistory(JSON.parse(historyData.textContent));

  // --- live refresh ----------------------------------------------------------------------------

  function poll(url, seconds, update) {
    var status = document.querySelector("[data-live-status]");
    var toggle = document.querySelector("[data-live-toggle]");
    var paused = false, timer = null;

    function schedule() {
      clearTimeout(timer);
      if (!paused) timer = setTimeout(tick, seconds * 1000);
    }

    function tick() {
      if (document.hidden) { schedule(); return; }
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (response.status === 401) { window.location.reload(); return null; }
          if (!response.ok) throw new Error("HTTP " + response.status);
          return response.json();
        })
        .then(function (data) {
          if (data === null) return;
          update(data);
          if (status) status.textContent = "Live: updated " + new Date().toLocaleTimeString();
          main.setAttribute("data-refreshed", String(Date.now()));
        })
        .catch(function (error) {
          if (status) status.textContent = "Live refresh failed (" + error.message + "); retrying";
        })
        .then(schedule);
    }

    if (toggle) {
      toggle.addEventListener("click", function () {
        paused = !paused;
        toggle.setAttribute("aria-pressed", String(paused));
        toggle.textContent = paused ? "Resume live refresh" : "Pause live refresh";
        if (status) status.textContent = paused ? "Live refresh paused" : "Live: resuming";
        if (paused) clearTimeout(timer); else tick();
      });
    }
    schedule();
  }

  function badges(queue) {
    var parts = [];
    if (queue.fifo) parts.push(el("span", { "class": "badge badge-fifo", title: "FIFO queue" }, ["FIFO"]));
    if (queue.dlq) parts.push(el("span", { "class": "badge badge-dlq", title: "Dead-letter queue of other queues" }, ["DLQ"]));
    if (queue.dead_letter_queue) {
      parts.push(el("a", {
        "class": "badge badge-source", href: prefix + "/queues/" + encodeURIComponent(queue.dead_letter_queue),
        title: "Dead letters go to " + queue.dead_letter_queue
      }, ["→ " + queue.dead_letter_queue]));
    }
    if (queue.groups) {
      parts.push(el("a", {
        "class": "badge badge-groups", "data-group-count": "",
        href: prefix + "/queues/" + encodeURIComponent(queue.name) + "#groups",
        title: "Consumer groups of " + queue.name
      }, [queue.groups + (queue.groups === 1 ? " group" : " groups")]));
    }
    return parts;
  }

  function stateBadge(state, label) {
    return el("span", { "class": "state state-" + state }, [label]);
  }

  function queueRow(queue) {
    var spark = svgEl("svg", {
      "class": "spark", "data-field": "spark", width: 120, height: 24, viewBox: "0 0 120 24",
      role: "img", "aria-label": "Messages sent per second over the last hour"
    });
    drawSpark(spark, queue.spark);
    var badgeSpan = el("span", { "data-field": "badges" }, badges(queue));
    return el("tr", { "data-name": queue.name }, [
      el("th", { scope: "row" }, [
        el("a", { href: prefix + "/queues/" + encodeURIComponent(queue.name) }, [queue.name]), " ", badgeSpan
      ]),
      el("td", { "class": "num", "data-field": "visible" }, [count(queue.visible)]),
      el("td", { "class": "num", "data-field": "in_flight" }, [count(queue.in_flight)]),
      el("td", { "class": "num", "data-field": "delayed" }, [count(queue.delayed)]),
      el("td", { "class": "num", "data-field": "oldest" }, [duration(queue.oldest_age_seconds)]),
      el("td", {}, [spark]),
      el("td", { "data-field": "state" }, [stateBadge(queue.state, queue.state_label)]),
      el("td", { "data-field": "server", "class": "mono" }, [queue.server])
    ]);
  }

  function updateQueueRow(row, queue) {
    setText(row, "visible", count(queue.visible));
    setText(row, "in_flight", count(queue.in_flight));
    setText(row, "delayed", count(queue.delayed));
    setText(row, "oldest", duration(queue.oldest_age_seconds));
    setText(row, "server", queue.server);
    var state = row.querySelector('[data-field="state"]');
    if (state.textContent.trim() !== queue.state_label) {
      clear(state); state.appendChild(stateBadge(queue.state, queue.state_label));
    }
    var badgeSpan = row.querySelector('[data-field="badges"]');
    var fresh = el("span", {}, badges(queue));
    if (badgeSpan.textContent !== fresh.textContent) {
      clear(badgeSpan);
      badges(queue).forEach(function (badge) { badgeSpan.appendChild(badge); });
    }
    drawSpark(row.querySelector('[data-field="spark"]'), queue.spark);
  }

  function updateQueues(data) {
    var body = document.querySelector("[data-queue-rows]");
    var total = document.querySelector("[data-total]");
    if (total) total.textContent = String(data.total);
    var rows = body.querySelectorAll("tr[data-name]");
    var same = rows.length === data.queues.length && data.queues.every(function (queue, index) {
      return rows[index].getAttribute("data-name") === queue.name;
    });
    if (same) {
      data.queues.forEach(function (queue, index) { updateQueueRow(rows[index], queue); });
      return;
    }
    clear(body);
    if (!data.queues.length) {
      body.appendChild(el("tr", { "class": "empty" }, [el("td", { colspan: 8 }, ["No queues on this page."])]));
    }
    data.queues.forEach(function (queue) { body.appendChild(queueRow(queue)); });
  }

  function taskRow(queueName, task) {
    var status = el("td", { "data-field": "status" }, [
      el("span", { "class": "status status-" + task.status.toLowerCase() }, [task.status])
    ]);
    if (task.failure_reason) status.appendChild(el("span", { "class": "hint" }, [" " + task.failure_reason]));
    var action = el("td", {}, []);
    if (task.cancellable) {
      action.appendChild(el("form", { method: "post", action: prefix + "/queues/" + encodeURIComponent(queueName) + "/move-tasks/cancel" }, [
        el("input", { type: "hidden", name: "csrf_token", value: csrfToken() }),
        el("input", { type: "hidden", name: "handle", value: task.handle }),
        el("button", { type: "submit", "class": "warning" }, ["Cancel"])
      ]));
    }
    return el("tr", { "data-task": task.handle }, [
      status,
      el("td", {}, [
        el("progress", { max: String(task.to_move || 1), value: String(task.moved), "aria-label": "Moved " + task.moved + " of " + task.to_move }),
        " ",
        el("span", { "data-field": "moved" }, [task.moved + " of " + task.to_move])
      ]),
      el("td", {}, [task.started]),
      el("td", {}, [task.destination || "each message's source"]),
      el("td", {}, [task.rate ? String(task.rate) : "no limit"]),
      action
    ]);
  }

  function updateQueue(data) {
    setText(main, "visible", String(data.visible));
    setText(main, "in_flight", String(data.in_flight));
    setText(main, "delayed", String(data.delayed));
    setText(main, "scheduled", String(data.scheduled));
    setText(main, "earliest_scheduled", data.earliest_scheduled);
    setText(main, "oldest", duration(data.oldest_age_seconds));
    setText(main, "server", data.server);
    Object.keys(data.redeliveries).forEach(function (reason) {
      setText(main, "redelivered_" + reason, String(data.redeliveries[reason]));
    });
    var state = main.querySelector('[data-field="state"]');
    if (state && state.textContent.trim() !== data.state_label) {
      clear(state); state.appendChild(stateBadge(data.state, data.state_label));
    }
    drawHistory(data.history);
    (data.groups || []).forEach(function (group) {  // consumer groups (#19)
      var row = document.querySelector('tr[data-group="' + CSS.escape(group.name) + '"]');
      if (!row) return;
      setText(row, "visible", String(group.visible));
      setText(row, "in_flight", String(group.in_flight));
      setText(row, "delayed", String(group.delayed));
    });
    var tasks = document.querySelector("[data-tasks]");
    if (tasks) {
      var focused = document.activeElement && tasks.contains(document.activeElement);
      var signature = JSON.stringify(data.tasks);
      if (tasks.getAttribute("data-signature") !== signature && !focused) {
        tasks.setAttribute("data-signature", signature);
        clear(tasks);
        if (!data.tasks.length) {
          tasks.appendChild(el("tr", { "class": "empty" }, [el("td", { colspan: 6 }, ["No move task yet."])]));
        }
        data.tasks.forEach(function (task) { tasks.appendChild(taskRow(data.name, task)); });
      }
    }
  }

  function updateCluster(data) {
    data.redis.forEach(function (server) {
      var row = document.querySelector('tr[data-server="' + CSS.escape(server.name) + '"]');
      if (!row) return;
      var status = row.querySelector('[data-field="status"]');
      var label = server.reachable ? "up" : "unreachable";
      if (status.textContent.trim() !== label) {
        clear(status); status.appendChild(stateBadge(server.reachable ? "ready" : "unavailable", label));
      }
      setText(row, "memory", server.memory);
      setText(row, "memory_peak", server.memory_peak);
      setText(row, "clients", server.figures.connected_clients || "—");
      setText(row, "pool", server.pool);
      setText(row, "queue_count", String(server.queue_count));
      setText(row, "due_queues", server.figures.due_queues || "—");
      setText(row, "lag", server.lag_ms + " ms");
    });
    var cassandra = main.querySelector('[data-field="cassandra-status"]');
    if (cassandra) {
      var text = data.cassandra.reachable ? "up" : "unreachable";
      if (cassandra.textContent.trim() !== text) {
        clear(cassandra); cassandra.appendChild(stateBadge(data.cassandra.reachable ? "ready" : "unavailable", text));
      }
    }
    setText(main, "total_queues", data.queue_count === null ? "—" : String(data.queue_count));
    var processes = document.querySelector("[data-processes]");
    if (processes) {
      clear(processes);
      data.processes.forEach(function (process) {
        var head = el("th", { scope: "row" }, [String(process.pid)]);
        if (process.this_process) head.appendChild(el("span", { "class": "badge" }, ["this page"]));
        processes.appendChild(el("tr", {}, [
          head,
          el("td", { "class": "num" }, [process.rss]),
          el("td", { "class": "num" }, [(process.cpu_seconds === null ? "—" : process.cpu_seconds) + " s"]),
          el("td", { "class": "num" }, [process.uptime])
        ]));
      });
    }
  }

  var page = main.getAttribute("data-page");
  var url = main.getAttribute("data-refresh-url");
  var seconds = parseFloat(main.getAttribute("data-refresh-seconds") || "2");
  var updaters = { queues: updateQueues, queue: updateQueue, cluster: updateCluster };
  if (url && updaters[page]) poll(url, seconds, updaters[page]);
})();
