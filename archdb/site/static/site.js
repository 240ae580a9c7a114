// archdb site: the index's search, filters and sorting, and the comparison page.
// Vanilla JavaScript, no dependencies; card text is only ever set as textContent.
"use strict";

(function () {
  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }

  // --- index: search, filters, sorting ---------------------------------------------------

  function setupIndex(table) {
    var tbody = table.tBodies[0];
    var rows = all("tr", tbody);
    var search = document.getElementById("search");
    var filters = all("select[data-filter]");
    var count = document.getElementById("count");

    function apply() {
      var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      rows.forEach(function (row) {
        var text = row.textContent.toLowerCase();
        var ok = words.every(function (w) { return text.indexOf(w) >= 0; });
        filters.forEach(function (f) {
          if (ok && f.value && row.getAttribute("data-" + f.dataset.filter) !== f.value) ok = false;
        });
        row.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + " of " + rows.length + " cards";
    }

    function sortBy(th) {
      var index = th.cellIndex;
      var numeric = th.dataset.type === "num";
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      all("th", table.tHead).forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var keyed = rows.map(function (row, position) {
        var cell = row.cells[index];
        var raw = cell.getAttribute("data-sort");
        var key = raw === null ? cell.textContent.trim().toLowerCase() : raw;
        if (numeric) key = raw === "" || raw === null ? null : Number(raw);
        return { row: row, key: key, position: position };
      });
      keyed.sort(function (a, b) {
        if (a.key === null || a.key === "") return b.key === null || b.key === "" ? a.position - b.position : 1;
        if (b.key === null || b.key === "") return -1;
        var order = a.key < b.key ? -1 : a.key > b.key ? 1 : a.position - b.position;
        return ascending ? order : -order;
      });
      keyed.forEach(function (k) { tbody.appendChild(k.row); });
    }

    search.addEventListener("input", apply);
    filters.forEach(function (f) { f.addEventListener("change", apply); });
    all("th button.sort", table.tHead).forEach(function (button) {
      button.addEventListener("click", function () { sortBy(button.parentElement); });
    });
    document.getElementById("reset").addEventListener("click", function () {
      search.value = "";
      filters.forEach(function (f) { f.value = ""; });
      apply();
    });
    apply();
  }

  // --- comparison: 2 to 4 cards side by side ---------------------------------------------

  function setupCompare(root) {
    var data = JSON.parse(document.getElementById("compare-data").textContent);
    var ids = Object.keys(data.cards).sort();
    var pickers = all("select.pick", root);
    var onlyDiff = document.getElementById("only-diff");
    var output = document.getElementById("comparison");
    var message = document.getElementById("compare-message");
    var numeric = {};
    data.numeric.forEach(function (f) { numeric[f] = true; });

    // Each list holds the models whose id, name, organization or year holds every word
    // of the search box (and its own choice, whatever the search): rebuilt, not hidden,
    // since some browsers show hidden options anyway.
    var filter = document.getElementById("pick-filter");
    function fill(select, i) {
      var words = filter ? filter.value.toLowerCase().split(/\s+/).filter(Boolean) : [];
      var current = select.value;
      select.textContent = "";
      var none = document.createElement("option");
      none.value = "";
      none.textContent = i < 2 ? "choose a model" : "(none)";
      select.appendChild(none);
      ids.forEach(function (id) {
        var text = id + " — " + data.cards[id].label;
        var match = words.every(function (w) { return text.toLowerCase().indexOf(w) >= 0; });
        if (!match && id !== current) return;
        var option = document.createElement("option");
        option.value = id;
        option.textContent = text;
        select.appendChild(option);
      });
      select.value = current;
    }
    pickers.forEach(fill);
    if (filter) {
      filter.addEventListener("input", function () { pickers.forEach(fill); });
    }

    var wanted = new URLSearchParams(window.location.search).get("ids");
    var initial = wanted ? wanted.split(",") : (root.dataset.defaults || "").split(",");
    initial.slice(0, pickers.length).forEach(function (id, i) {
      if (data.cards[id]) pickers[i].value = id;
    });

    function cell(tag, text, className) {
      var el = document.createElement(tag);
      el.textContent = text;
      if (className) el.className = className;
      return el;
    }

    function render() {
      var chosen = pickers.map(function (p) { return p.value; }).filter(Boolean);
      chosen = chosen.filter(function (id, i) { return chosen.indexOf(id) === i; });
      output.textContent = "";
      if (chosen.length < 2) {
        message.textContent = "Choose at least two different models.";
        return;
      }
      message.textContent = "Rows in yellow differ; × is the ratio to the first model.";
      try {
        window.history.replaceState(null, "", "?ids=" + chosen.map(encodeURIComponent).join(","));
      } catch (e) { /* a file: URL may refuse; the page works the same */ }
      var table = document.createElement("table");
      table.className = "compare";
      var head = table.createTHead().insertRow();
      head.appendChild(cell("th", "field"));
      chosen.forEach(function (id) {
        var th = document.createElement("th");
        th.className = "num";
        var link = document.createElement("a");
        link.href = "cards/" + encodeURIComponent(id) + ".html";
        link.textContent = id;
        th.appendChild(link);
        head.appendChild(th);
      });
      var body = table.createTBody();
      data.fields.forEach(function (field, f) {
        var shown = chosen.map(function (id) { return data.cards[id].shown[f]; });
        if (shown.every(function (v) { return v === null; })) return;
        var differs = shown.some(function (v) { return v !== shown[0]; });
        if (onlyDiff.checked && !differs) return;
        var row = body.insertRow();
        if (differs) row.className = "differs";
        row.appendChild(cell("td", field.replace(/^architecture\./, "")));
        var first = data.cards[chosen[0]].raw[f];
        chosen.forEach(function (id, i) {
          var td = cell("td", shown[i] === null ? "—" : shown[i], "num");
          var raw = data.cards[id].raw[f];
          if (i > 0 && numeric[field] && raw !== null && first) {
            var ratio = raw / first;
            var text = Number(ratio.toPrecision(3));
            if (text !== 1) td.appendChild(cell("span", " ×" + text, "ratio"));
          }
          row.appendChild(td);
        });
      });
      output.appendChild(table);
      renderDiagrams(chosen);
    }

    // Each chosen model's diagram side by side, its caption marking the parts where it
    // differs from the first model (the first: from the second), then the architectures
    // part by part, a row whose words differ marked.
    function renderDiagrams(chosen) {
      var box = document.getElementById("diagrams");
      if (!box) return;
      box.textContent = "";
      var parts = Object.keys(data.cards[chosen[0]].diagram);
      var first = data.cards[chosen[0]].diagram;
      var differing = parts.filter(function (part) {
        return chosen.some(function (id) { return data.cards[id].diagram[part] !== first[part]; });
      });
      box.appendChild(cell("h2", "Architectures"));
      box.appendChild(cell("p", differing.length
        ? "They differ in: " + differing.join(", ") + " (marked in yellow)."
        : "The diagrams read the same, part by part.", "muted"));
      var row = document.createElement("div");
      row.className = "diagram-row";
      chosen.forEach(function (id, i) {
        var figure = document.createElement("figure");
        var caption = cell("figcaption", data.cards[id].name);
        var other = chosen[i === 0 ? 1 : 0];
        var own = parts.filter(function (part) {
          return data.cards[id].diagram[part] !== data.cards[other].diagram[part];
        });
        var words = own.length ? "differs from " + other + " in: " : "reads as " + other + " does";
        var list = cell("span", words, "differs-list");
        own.forEach(function (part, k) {
          if (k) list.appendChild(document.createTextNode(" "));
          list.appendChild(cell("mark", part));
        });
        caption.appendChild(list);
        figure.appendChild(caption);
        var link = document.createElement("a");
        link.href = "cards/" + encodeURIComponent(id) + ".html";
        var img = document.createElement("img");
        img.className = "diagram";
        img.src = "diagrams/" + encodeURIComponent(id) + ".svg";
        img.alt = data.cards[id].name + " architecture";
        link.appendChild(img);
        figure.appendChild(link);
        row.appendChild(figure);
      });
      var table = document.createElement("table");
      table.className = "compare diagram-words";
      var head = table.createTHead().insertRow();
      head.appendChild(cell("th", "part"));
      chosen.forEach(function (id) { head.appendChild(cell("th", id)); });
      var body = table.createTBody();
      parts.forEach(function (part) {
        var tr = body.insertRow();
        if (differing.indexOf(part) >= 0) tr.className = "differs";
        tr.appendChild(cell("td", part));
        chosen.forEach(function (id) { tr.appendChild(cell("td", data.cards[id].diagram[part])); });
      });
      var scroll = document.createElement("div");
      scroll.className = "scroll diagram-parts";  // beside the diagrams where there is room
      scroll.appendChild(table);
      row.appendChild(scroll);
      box.appendChild(row);
    }

    pickers.forEach(function (p) { p.addEventListener("change", render); });
    onlyDiff.addEventListener("change", render);
    render();
  }

  // phones: the index's filters folded away, so the table shows first
  var filters = document.querySelector("details.filters");
  if (filters && window.matchMedia) {
    var narrow = window.matchMedia("(max-width: 700px)");
    var fold = function () { filters.open = !narrow.matches; };
    fold();
    if (narrow.addEventListener) narrow.addEventListener("change", fold);
  }

  var index = document.getElementById("cards");
  if (index) setupIndex(index);
  var compare = document.getElementById("compare");
  if (compare) setupCompare(compare);
})();
