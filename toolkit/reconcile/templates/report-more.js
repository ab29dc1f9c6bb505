(function () {
  "use strict";
  // "Show more" for the exceptions table, offline: the page holds more rows of a finding than it
  // shows (data-held, hidden), and a button reveals the next ones. The sorting and filtering
  // script above shows every row its filter keeps and counts every row, so after each filter
  // this one hides the held rows again and counts only the rows shown so far. Sorting moves the
  // held rows too, so a row revealed later is already in its sorted place.
  var table = document.getElementById("exceptions");
  var more = document.getElementById("exception-more");
  var controls = document.getElementById("exception-controls");
  if (!table || !more || !controls || controls.hidden) { return; }
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  var text = document.getElementById("filter-text");
  var category = document.getElementById("filter-category");
  var count = document.getElementById("filter-count");
  var step = Number(more.getAttribute("data-step"));
  var held = {};  // finding -> its held rows, in report order
  rows.forEach(function (row) {
    if (row.hasAttribute("data-held")) {
      var code = row.getAttribute("data-category");
      (held[code] = held[code] || []).push(row);
    }
  });

  function number(value) { return value.toLocaleString("en-US"); }

  // Runs after the filter above (listeners run in the order they were added).
  function hideHeld() {
    var loaded = 0;
    var shown = 0;
    rows.forEach(function (row) {
      if (row.hasAttribute("data-held")) {
        row.hidden = true;
        return;
      }
      loaded += 1;
      if (!row.hidden) { shown += 1; }
    });
    count.textContent = shown === loaded ? "all " + loaded + " rows shown"
      : shown + " of " + loaded + " rows shown";
  }

  Array.prototype.forEach.call(more.querySelectorAll("button[data-more]"), function (button) {
    var code = button.getAttribute("data-more");
    var label = button.getAttribute("data-label");
    var total = Number(button.getAttribute("data-count"));
    var waiting = held[code] || [];
    var note = document.getElementById("note-" + code);
    var loaded = rows.filter(function (row) {
      return row.getAttribute("data-category") === code;
    }).length - waiting.length;
    button.addEventListener("click", function () {
      var next = waiting.splice(0, step);
      next.forEach(function (row) { row.removeAttribute("data-held"); });
      loaded += next.length;
      // The filter above, then hideHeld: the current filter applies to the rows just revealed.
      text.dispatchEvent(new Event("input"));
      if (note) {
        note.textContent = loaded >= total ? label + ": all " + number(total) + "."
          : label + ": first " + number(loaded) + " of " + number(total) + (waiting.length ? "."
            : ", all this page holds; exceptions.csv and report.xlsx hold every one.");
      }
      if (waiting.length) {
        button.textContent = "Show " + Math.min(step, waiting.length) + " more: " + label;
      } else {
        button.hidden = true;
      }
    });
  });
  text.addEventListener("input", hideHeld);
  category.addEventListener("change", hideHeld);
  Array.prototype.forEach.call(document.querySelectorAll("a[data-category]"), function (link) {
    link.addEventListener("click", hideHeld);
  });
  more.hidden = false;
  hideHeld();
}());
