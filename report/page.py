"""The report page: one self-contained HTML file (inline CSS and script, the vendored
d3-hierarchy for the treemap layout, the graph as inline SVG): no network fetch of any kind.

Hooks for tests and tools: each kernel's box has data-kernel="NAME", each treemap leaf
data-bytes="N", each time-table row data-kernel-time="NAME"; <html> gets data-ready="1" when
the script has run and counts script errors and console errors in data-js-errors."""

from __future__ import annotations

import html
import json
import os
from importlib import resources

D3_HIERARCHY = ("d3-hierarchy", "3.1.3", "ISC", "d3-hierarchy.min.js", "d3-hierarchy.LICENSE")

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 24px 48px;color:#222;max-width:1400px}
h1{font-size:22px;margin:18px 0 4px} h2{font-size:17px;border-bottom:1px solid #ddd;
padding-bottom:3px;margin-top:28px} .sub{color:#555;margin:0}
code,.mono{font-family:ui-monospace,monospace;font-size:12px}
table{border-collapse:collapse;font-size:13px} th,td{padding:3px 8px;text-align:right;
border-bottom:1px solid #eee} th{background:#f5f5f5} td.l,th.l{text-align:left}
.headline{font-size:15px;background:#fff8e1;padding:8px 12px;border-left:4px solid #f0b400}
#graph-box{overflow:auto;border:1px solid #ddd} #graph-box svg{display:block;height:auto}
.zoom button{font-size:12px}
g.kernel:hover>path{stroke:#1a73e8;stroke-width:2}
#op-info{min-height:20px;color:#333;margin:6px 0}
#treemap{position:relative;width:900px;height:380px;border:1px solid #999}
#treemap div{position:absolute;box-sizing:border-box;border:1px solid #fff;overflow:hidden;
font-size:11px;padding:2px;color:#111}
.beside{display:flex;gap:28px;align-items:flex-start;flex-wrap:wrap}
.budget{height:14px;background:#eee;width:900px;position:relative;margin:8px 0}
.budget span{position:absolute;left:0;top:0;bottom:0;background:#4caf50}
.kernel-list{display:flex;flex-wrap:wrap;gap:8px}
.kernel-list .kernel{border:1px solid #88a;border-radius:6px;padding:6px;background:#e8f0fe}
.note{color:#666}
"""

ERRORS_FIRST = """
document.documentElement.dataset.jsErrors = "0";
function jitcError() {
  var e = document.documentElement; e.dataset.jsErrors = String(+e.dataset.jsErrors + 1);
}
window.addEventListener("error", jitcError);
window.addEventListener("unhandledrejection", jitcError);
var jitcConsoleError = console.error;
console.error = function () { jitcError(); jitcConsoleError.apply(console, arguments); };
"""

SCRIPT = """
(function () {
  var info = document.getElementById("op-info");
  document.querySelectorAll("#graph-box g.node").forEach(function (g) {
    g.addEventListener("click", function () {
      var a = g.querySelector("a"); var t = a && (a.getAttribute("xlink:title") ||
        a.getAttribute("title"));
      var k = g.closest("g.kernel");
      info.textContent = (t || "") + (k ? "  (kernel " + k.dataset.kernel + ")" : "");
    });
  });
  var svg = document.querySelector("#graph-box svg");
  function zoom(factor) {  // the graph's width: the page's, times factor
    if (svg) svg.style.width = (100 * factor) + "%";
  }
  zoom(1);
  document.querySelectorAll("button[data-zoom]").forEach(function (b) {
    b.addEventListener("click", function () { zoom(+b.dataset.zoom); });
  });
  var size = JSON.parse(document.getElementById("size-data").textContent);
  var box = document.getElementById("treemap");
  if (size && box) {
    var root = d3.hierarchy(size).sum(function (d) { return d.children ? 0 : d.bytes; })
      .sort(function (a, b) { return b.value - a.value; });
    d3.treemap().size([box.clientWidth, box.clientHeight]).paddingTop(16).paddingInner(1)
      .tile(d3.treemapSquarify)(root);
    var colors = {code: "#8ab4f8", constants: "#fdd663", data: "#d7aefb", file: "#ccc"};
    root.descendants().forEach(function (d) {
      if (d.depth === 0) return;
      var el = document.createElement("div");
      el.style.left = d.x0 + "px"; el.style.top = d.y0 + "px";
      el.style.width = Math.max(0, d.x1 - d.x0) + "px";
      el.style.height = Math.max(0, d.y1 - d.y0) + "px";
      el.style.background = d.children ? "#f3f3f3" : (colors[d.data.kind] || "#ddd");
      el.title = d.data.name + ": " + d.value.toLocaleString() + " bytes";
      el.textContent = d.data.name + " " + d.value.toLocaleString();
      if (!d.children) el.dataset.bytes = String(d.data.bytes);
      box.appendChild(el);
    });
  }
  document.documentElement.dataset.ready = "1";
})();
"""


def _vendored(name: str) -> str:
    return resources.files("jitc.report").joinpath("vendor", name).read_text()


def _mb(n: float) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f} B"


def time_section(timing: dict | None, note: str | None = None) -> str:
    if timing is None:
        return note or "<p class='note'>No time measured for this backend.</p>"
    rows, total = timing["rows"], timing["rows_ns"]  # shares of the rows add up to 100%
    out = []
    top = rows[0] if rows else None
    if top is not None and top["ns"]:
        share = 100 * top["ns"] / total if total else 0
        bw = top["bw_share"]
        bw = (
            ""
            if bw is None
            else f" at {bw:.0f}% of copy bandwidth"
            if bw <= 100
            else f" at {bw / 100:.1f}x the copy bandwidth (its data stays in cache)"
        )
        if top["gflops"] is not None:  # a dot: its rate is arithmetic, not bytes
            bw = (
                f" at {top['gflops']:.1f} GFLOP/s ({bw.strip()})"
                if bw
                else f" at {top['gflops']:.1f} GFLOP/s"
            )
        out.append(
            f"<p class='headline'><b>{html.escape(top['name'])}</b> "
            f"({html.escape(top['summary_short'])}) takes {share:.0f}% of the kernels' time"
            f"{bw}.</p>"
        )
    out.append(
        f"<p>A call takes {timing['call_ns'] / 1e3:,.1f} µs (median of "
        f"{timing['calls']} calls on {html.escape(timing['inputs'])}). Timed launch by launch, a "
        f"call takes {timing['profiled_ns'] / 1e3:,.1f} µs, of which the kernels take "
        f"{timing['kernel_ns'] / 1e3:,.1f} µs (medians of the same calls); the rest is "
        f"the Python call: argument checks, result allocation, and the timing itself. "
        f"Each kernel's row is its median launch. This machine copies at "
        f"{timing['copy_gbs']:.1f} GB/s (NumPy's copy of 64 MB, read + write).</p>"
    )
    out.append(
        "<table id='time-table'><tr><th class='l'>kernel</th><th class='l'>ops</th>"
        "<th class='l'>source</th><th>time µs</th><th>share</th><th>read</th>"
        "<th>written</th><th>GB/s</th><th>of copy bw</th><th>GFLOP/s</th></tr>"
    )
    for r in rows:
        if r["inside"]:
            t = f"<td colspan=2>runs in {html.escape(r['inside'])}'s launch</td>"
        else:
            t = (
                f"<td>{r['ns'] / 1e3:,.2f}</td>"
                f"<td>{100 * r['ns'] / total if total else 0:.1f}%</td>"
            )
        gbs = f"{r['gbs']:.1f}" if r["gbs"] is not None else ""
        share = f"{r['bw_share']:.0f}%" if r["bw_share"] is not None else ""
        flops = f"{r['gflops']:.1f}" if r["gflops"] is not None else ""
        out.append(
            f"<tr data-kernel-time='{html.escape(r['name'])}'>"
            f"<td class='l mono'>{html.escape(r['name'])}</td>"
            f"<td class='l'>{html.escape(r['summary'])}</td>"
            f"<td class='l mono'>{html.escape(r['where'])}</td>{t}"
            f"<td>{_mb(r['read'])}</td><td>{_mb(r['written'])}</td><td>{gbs}</td>"
            f"<td>{share}</td><td>{flops}</td></tr>"
        )
    out.append("</table>")
    return "".join(out)


def size_section(size: dict | None) -> str:
    if size is None:
        return (
            "<p class='note'>A size treemap is drawn for an artifact that "
            "<code>jitc aot</code> wrote: <code>jitc report build/NAME</code>.</p>"
        )
    r = size["report"]
    parts = [
        f"<p>The object file <code>{html.escape(r['name'])}.o</code> holds "
        f"{r['object_bytes']:,} bytes ({_mb(r['object_bytes'])}), as "
        f"<code>jitc size</code> prints; the treemap splits them.</p>"
    ]
    if size.get("max_bytes"):
        used = r["object_bytes"] / size["max_bytes"]
        parts.append(
            f"<p>Budget <code>--max-bytes {size['max_bytes']:,}</code>: "
            f"{100 * used:.1f}% used.</p><div class='budget' "
            f"title='object bytes against the budget'><span style='width:"
            f"{min(100.0, 100 * used):.2f}%'></span></div>"
        )
    parts.append(
        "<div class='beside'><div id='treemap'></div><table><tr><th class='l'>"
        "beside the object</th><th>bytes</th></tr>"
    )
    for label, n in size["beside"]:
        parts.append(f"<tr><td class='l'>{html.escape(label)}</td><td>{n:,}</td></tr>")
    parts.append("</table></div>")
    return "".join(parts)


def writes_section(writes: list | None) -> str:
    """The writes that pass over a whole array (fusion.report.whole_array_writes), as rows
    of (file:line, array, bytes, why); nothing when the function writes none."""
    if not writes:
        return ""
    rows = "".join(
        f"<tr><td class='l'>{html.escape(where)}</td><td class='l'>{html.escape(array)}</td>"
        f"<td>{nbytes:,}</td><td class='l'>{html.escape(why)}</td></tr>"
        for where, array, nbytes, why in writes
    )
    return (
        "<h2>Writes over a whole array</h2><p class='note'>Each of these writes passes over "
        "its whole array; every other write runs over its region alone.</p>"
        "<table class='edges'><tr><th>write</th><th>array</th><th>bytes</th><th>why</th>"
        f"</tr>{rows}</table>"
    )


def html_page(
    title: str,
    subtitle: str,
    graph_html: str,
    drawn_by: str | None,
    size: dict | None,
    timing: dict | None,
    time_note: str | None = None,
    writes: list | None = None,
) -> str:
    """The page; `drawn_by` None: `graph_html` is a note, there is no graph to draw."""
    name, version, license_, js, _ = D3_HIERARCHY
    tree = json.dumps(size["tree"] if size else None).replace("</", "<\\/")
    how = (
        "laid out by Graphviz <code>dot</code>"
        if drawn_by == "graphviz"
        else "listed (Graphviz not installed)"
    )
    graph_note = (
        ""
        if drawn_by is None
        else f"""<p class="note">Each blue box is a kernel, \
{how}. Hover or click an op for its shape, dtype and source line; red edges are values fusion \
left in memory, with their bytes and why. The graph fits the page's width; scroll it \
sideways or zoom in with the buttons.</p>
<p class="zoom"><button data-zoom="1">fit width</button> <button data-zoom="2">2x</button> \
<button data-zoom="4">4x</button></p>"""
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<script>{ERRORS_FIRST}</script><style>{STYLE}</style></head>
<body>
<h1>{html.escape(title)}</h1><p class="sub">{html.escape(subtitle)}</p>
<h2>Fused graph</h2>{graph_note}
<div id="op-info"></div><div id="graph-box">{graph_html}</div>
{writes_section(writes)}
<h2>Size</h2>{size_section(size)}
<h2>Time per kernel</h2>{time_section(timing, time_note)}
<p class="note">Treemap layout: {name} {version} ({license_} license), vendored in jitc
(report/vendor).</p>
<script type="application/json" id="size-data">{tree}</script>
<script>/* {name} {version}, {license_} license: see report/vendor/{D3_HIERARCHY[4]} */
{_vendored(js)}</script>
<script>{SCRIPT}</script>
</body></html>
"""


def write_atomically(path: str, text: str) -> None:
    """Write `path` whole or not at all (no partial file on a failure)."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as e:  # name the user's path, not the temporary file beside it
        _remove(tmp)
        raise OSError(e.errno, f"cannot write the report {path}: {e.strerror}") from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
