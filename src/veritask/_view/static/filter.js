// Filters the rows of a table by the page's query string, so a page opened from disk
// filters like the server does. Each filtered row carries data-<name> attributes.
(function () {
  var params = new URLSearchParams(window.location.search);
  var rows = document.querySelectorAll("tr[data-row]");
  if (!rows.length || !params.toString()) { return; }
  var shown = 0;
  rows.forEach(function (row) {
    var keep = true;
    params.forEach(function (value, name) {
      if (!value) { return; }
      var have = row.getAttribute("data-" + name);
      if (have === null) { return; }
      if (name === "q") { keep = keep && have.indexOf(value.trim().toLowerCase()) >= 0; }
      else if (name === "tag" || name === "rule") { keep = keep && have.split(" ").indexOf(value) >= 0; }
      else { keep = keep && have === value; }
    });
    row.hidden = !keep;
    if (keep) { shown += 1; }
  });
  var count = document.getElementById("shown");
  if (count) { count.textContent = String(shown); }
  document.querySelectorAll("form.filters [name]").forEach(function (field) {
    if (params.has(field.name)) { field.value = params.get(field.name); }
  });
}());
