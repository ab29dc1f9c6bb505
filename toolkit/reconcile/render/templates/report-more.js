(function () {
  "use strict";
  // "Show more" for the exceptions table, offline: the page holds more rows of a finding than it
  // shows (data-held, hidden), and a button reveals the next ones. The sorting and filtering
  // script above shows every row its filter keeps and counts every row, so after each filter
  // this one hides the held rows again and counts only the rows shown so far; a search for
  // words looks through every row the page holds, held ones included. Which rows of a finding
  // are shown follows the sort: after one, the first rows in the new order are the ones shown
  // (as many as before), and "Show more" reveals the next ones in that order.
  var table = document.getElementById("exceptions");
  var more = document.getElementById("exception-more");
  var controls = document.getElementById("exception-controls");
  if (!table || !more || !controls || controls.hidden) { return; }
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var text = document.getElementById("filter-text");
  var category = document.getElementById("filter-category");
  var count = document.getElementById("filter-count");
  var step = Number(more.getAttribute("data-step"));
  var shownOf = {};  // finding -> how many of its rows are shown (the rest are held)
  rows.forEach(function (row) {
    var code = row.getAttribute("data-category");
    shownOf[code] = (shownOf[code] || 0) + (row.hasAttribute("data-held") ? 0 : 1);
  });

  function number(value) { return value.toLocaleString("en-US"); }

  function searching() { return text.value.trim() !== ""; }

  // The first shownOf[finding] rows of each finding in the table's order are shown.
  function choose() {
    var seen = {};
    Array.prototype.forEach.call(body.rows, function (row) {
      var code = row.getAttribute("data-category");
      seen[code] = (seen[code] || 0) + 1;
      if (seen[code] <= shownOf[code]) {
        row.removeAttribute("data-held");
      } else {
        row.setAttribute("data-held", "");
      }
    });
  }

  // Runs after the filter above (listeners run in the order they were added).
  function hideHeld() {
    if (searching()) {  // the filter above has looked through every row: its count stands
      return;
    }
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
    var holds = rows.filter(function (row) { return row.getAttribute("data-category") === code; }).length;
    var note = document.getElementById("note-" + code);
    button.addEventListener("click", function () {
      shownOf[code] = Math.min(holds, shownOf[code] + step);
      choose();
      var waiting = holds - shownOf[code];
      // The filter above, then hideHeld: the current filter applies to the rows just revealed.
      text.dispatchEvent(new Event("input"));
      if (note) {
        note.textContent = shownOf[code] >= total ? label + ": all " + number(total) + "."
          : label + ": first " + number(shownOf[code]) + " of " + number(total) + (waiting ? "."
            : ", all this page holds; exceptions.csv and report.xlsx hold every one.");
      }
      if (waiting) {
        button.textContent = "Show " + Math.min(step, waiting) + " more: " + label;
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
  // After the sort above has put every row, held ones included, in its new order.
  Array.prototype.forEach.call(table.tHead.rows[0].querySelectorAll("button"), function (button) {
    button.addEventListener("click", function () {
      choose();
      text.dispatchEvent(new Event("input"));
    });
  });
  more.hidden = false;
  hideHeld();
}());
