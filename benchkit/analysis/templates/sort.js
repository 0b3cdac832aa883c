// The runs table: a click on a column's head sorts by it (again: the other way), numbers
// as numbers and "-" last; the box above it keeps the rows holding what is typed. A
// link may say both: index.html#sort=wall_s&filter=agent (&sort= twice: descending).
// Plain JavaScript of the project's own: no network, no library.
(() => {
  const table = document.querySelector("table[data-sort]");
  if (!table) return;
  const body = table.tBodies[0];
  const number = (text) => {
    const found = text.replace(/[$,%]/g, "").match(/^-?\d+(\.\d+)?/);
    return found ? parseFloat(found[0]) : null;
  };
  Array.from(table.tHead.rows[0].cells).forEach((head, column) => {
    head.title = "sort by " + head.textContent;
    head.addEventListener("click", () => {
      const down = head.dataset.order !== "up";
      Array.from(table.tHead.rows[0].cells).forEach((h) => delete h.dataset.order);
      head.dataset.order = down ? "up" : "down";
      const rows = Array.from(body.rows);
      const key = (row) => row.cells[column].textContent.trim();
      rows.sort((a, b) => {
        const [x, y] = [key(a), key(b)];
        if (x === "-" || y === "-") return (x === "-") - (y === "-");
        const [m, n] = [number(x), number(y)];
        const order = m !== null && n !== null ? m - n : x.localeCompare(y);
        return down ? order : -order;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
  const filter = document.getElementById("filter");
  const keep = () => {
    const words = filter.value.toLowerCase().split(/\s+/).filter(Boolean);
    Array.from(body.rows).forEach((row) => {
      const text = row.textContent.toLowerCase();
      row.hidden = !words.every((w) => text.includes(w));
    });
  };
  filter.addEventListener("input", keep);
  const asked = new URLSearchParams(location.hash.slice(1));
  const heads = Array.from(table.tHead.rows[0].cells);
  asked.getAll("sort").forEach((name) => {
    const head = heads.find((h) => h.textContent.trim() === name);
    if (head) head.click();
  });
  if (asked.has("filter")) {
    filter.value = asked.get("filter");
    keep();
  }
})();
