// A written bundle's state page: no server answers ?table=, ?q= or ?page=, so this script
// draws the selected table's filtered page from the rows embedded in the page.
(function () {
  var data = document.getElementById("state-data");
  if (!data) { return; }
  var state = JSON.parse(data.textContent);
  var params = new URLSearchParams(window.location.search);
  var names = state.order;
  var table = state.tables[params.get("table")] ? params.get("table") : names[0];
  if (table === undefined) { return; }
  var q = (params.get("q") || "").trim().toLowerCase();
  var cols = state.tables[table].columns;
  var text = function (v) { return v === null ? "null" : String(v); };
  var rows = state.tables[table].rows.filter(function (row) {
    return !q || row.some(function (v) { return text(v).toLowerCase().indexOf(q) >= 0; });
  });
  var size = state.page_rows;
  var pages = Math.max(Math.ceil(rows.length / size), 1);
  var page = Math.min(Math.max(parseInt(params.get("page") || "1", 10) || 1, 1), pages);
  var link = function (p) {
    return "?table=" + encodeURIComponent(table) + "&q=" + encodeURIComponent(params.get("q") || "") + "&page=" + p;
  };
  document.querySelectorAll("#state-tables a").forEach(function (a) {
    a.classList.toggle("here", a.getAttribute("data-table") === table);
  });
  var form = document.getElementById("state-filter");
  form.elements.table.value = table;
  form.elements.q.value = params.get("q") || "";
  document.getElementById("state-title").firstChild.textContent = table + " ";
  document.getElementById("state-found").textContent = String(rows.length);
  var head = document.createElement("tr");
  cols.forEach(function (c) { var th = document.createElement("th"); th.textContent = c; head.appendChild(th); });
  var body = document.createElement("tbody");
  rows.slice((page - 1) * size, page * size).forEach(function (row) {
    var tr = document.createElement("tr");
    row.forEach(function (v) {
      var td = document.createElement("td");
      td.className = "cell";
      if (v === null) { var s = document.createElement("span"); s.className = "null"; s.textContent = "null"; td.appendChild(s); }
      else { td.textContent = String(v); }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
  var grid = document.getElementById("state-rows");
  grid.tHead.replaceChildren(head);
  grid.replaceChild(body, grid.tBodies[0]);
  var pager = document.getElementById("state-pager");
  pager.replaceChildren();
  var add = function (label, p) { var a = document.createElement("a"); a.href = link(p); a.textContent = label; pager.appendChild(a); };
  if (page > 1) { add("← previous", page - 1); }
  var at = document.createElement("span"); at.textContent = "page " + page + " of " + pages; pager.appendChild(at);
  if (page < pages) { add("next →", page + 1); }
}());
