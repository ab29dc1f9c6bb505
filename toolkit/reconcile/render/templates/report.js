(function () {
  "use strict";
  // Sorting and filtering of the exceptions table, offline: no library, nothing fetched.
  // Without this script the table still shows every row in report order.
  var table = document.getElementById("exceptions");
  var controls = document.getElementById("exception-controls");
  if (!table || !controls) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var words = rows.map(function (row) { return row.textContent.toLowerCase(); });
  var text = document.getElementById("filter-text");
  var category = document.getElementById("filter-category");
  var count = document.getElementById("filter-count");
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
  rows.forEach(function (row, i) { row.setAttribute("data-order", String(i)); });
  controls.hidden = false;

  function filter() {
    var wanted = category.value;
    var terms = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row, i) {
      var keep = (!wanted || row.getAttribute("data-category") === wanted) &&
        terms.every(function (term) { return words[i].indexOf(term) !== -1; });
      row.hidden = !keep;
      if (keep) { shown += 1; }
    });
    count.textContent = shown === rows.length ? "all " + rows.length + " rows shown"
      : shown + " of " + rows.length + " rows shown";
  }

  // Amount, category and source columns carry an exact rank computed by the report
  // (-1: empty); the others sort by their text, numbers inside the text in numeric order.
  function key(row, column) {
    var cell = row.cells[column];
    var rank = cell.getAttribute("data-rank");
    return rank === null ? cell.textContent.trim() : Number(rank);
  }

  function compare(a, b, column, ascending) {
    var x = key(a, column);
    var y = key(b, column);
    var emptyX = typeof x === "number" ? x < 0 : x === "";
    var emptyY = typeof y === "number" ? y < 0 : y === "";
    var order;
    if (emptyX || emptyY) {
      order = Number(emptyX) - Number(emptyY);  // empty cells last, either way
    } else {
      order = typeof x === "number" ? x - y : collator.compare(x, y);
      if (!ascending) { order = -order; }
    }
    return order || Number(a.getAttribute("data-order")) - Number(b.getAttribute("data-order"));
  }

  headers.forEach(function (header, column) {
    var button = header.querySelector("button");
    if (!button) { return; }
    button.addEventListener("click", function () {
      var ascending = header.getAttribute("aria-sort") !== "ascending";
      headers.forEach(function (other) { other.removeAttribute("aria-sort"); });
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      rows.slice().sort(function (a, b) { return compare(a, b, column, ascending); })
        .forEach(function (row) { body.appendChild(row); });
    });
  });
  text.addEventListener("input", filter);
  category.addEventListener("change", filter);
  Array.prototype.forEach.call(document.querySelectorAll("a[data-category]"), function (link) {
    link.addEventListener("click", function () {
      category.value = link.getAttribute("data-category");
      text.value = "";
      filter();
    });
  });
  filter();
}());
