"""The fused graph as a picture: Graphviz lays it out (`dot -Tsvg`) when it is installed;
otherwise the page lists each kernel's ops and the edges between kernels as HTML.

Each kernel is a box (a Graphviz cluster) carrying data-kernel="NAME", a dot fusion's
library call a box inside its fusion's box. An op's tooltip gives its shape, dtype and the
user's file:line; an edge fusion left in memory is labelled with its bytes and the reason
from fusion_report()."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import textwrap

from jitc.fusion.report import _where, boundaries, producing_op, reading_op
from jitc.report.kernels import Kernel

FREE_SHAPES = {"parameter": "ellipse", "constant": "note"}


def _q(text: str) -> str:
    """A DOT string; its \\n escapes stay line breaks."""
    return '"' + text.replace('"', '\\"') + '"'


def _bytes(n: int) -> str:
    for unit, size in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} B"


def _op_label(m) -> str:
    name = f"reduce[{m.attrs['kind']}]" if m.op == "reduce" else m.op
    return f"{name}\\n{m.type_str()}"


def _tooltip(m) -> str:
    return f"{m.op}: {m.type_str()} at {_where(m)}".replace("\\", "/")


class _Dot:
    def __init__(self, graph, table: list[Kernel]):
        self.graph, self.table = graph, table
        self.ids: dict = {}  # (graph id, node) -> dot node id
        self.lines = [
            f"digraph {_q(graph.name)} {{",
            "  rankdir=TB; compound=true;",
            '  node [shape=box, fontname="monospace", fontsize=10, style=filled, '
            'fillcolor="#ffffff"];',
            '  edge [fontname="sans-serif", fontsize=9, color="#666666"];',
        ]

    def node(self, m, owner, indent):
        nid = f"op{len(self.ids)}"
        self.ids[(id(owner), m)] = nid
        shape = FREE_SHAPES.get(m.op, "box")
        self.lines.append(
            f"{indent}{nid} [id={_q(nid)}, label={_q(_op_label(m))}, "
            f"shape={shape}, tooltip={_q(_tooltip(m))}];"
        )
        return nid

    def body(self, sub, indent, skip=()):
        for m in sub.nodes:
            if m.op == "parameter" or m in skip:
                continue
            self.node(m, sub, indent)
            for o in m.operands:
                if (id(sub), o) in self.ids:
                    self.lines.append(
                        f"{indent}{self.ids[(id(sub), o)]} -> {self.ids[(id(sub), m)]};"
                    )

    def cluster(self, name, indent, color):
        self.lines.append(f"{indent}subgraph {_q('cluster_' + name)} {{")
        self.lines.append(
            f"{indent}  id={_q('kernel_' + name)}; label={_q(name)}; "
            f'style="rounded,filled"; '
            f'fillcolor="{color}"; fontname="monospace";'
        )

    def build(self) -> str:
        by_node: dict = {}
        for k in self.table:
            by_node.setdefault(k.node, []).append(k)
        for n in self.graph.nodes:
            named = by_node.get(n)
            if named is None:
                self.node(n, self.graph, "  ")
                continue
            self.cluster(named[-1].name, "  ", "#e8f0fe")
            if n.subgraph is None:
                self.ids[(id(self.graph), n)] = self.node(n, self.graph, "    ")
            else:
                dot = None
                if len(named) == 2:  # a dot fusion: its library call in a box of its own
                    dot = next(m for m in n.subgraph.nodes if m.op == "dot_general")
                    self.cluster(named[0].name, "    ", "#fde9d9")
                    self.node(dot, n.subgraph, "      ")
                    self.lines.append("    }")
                self.body(n.subgraph, "    ", skip=(dot,))
                if dot is not None:
                    for m in n.subgraph.nodes:
                        if dot in m.operands:
                            self.lines.append(
                                f"    {self.ids[(id(n.subgraph), dot)]} -> "
                                f"{self.ids[(id(n.subgraph), m)]};"
                            )
            self.lines.append("  }")
        self.edges()
        self.lines.append("}")
        return "\n".join(self.lines)

    def _out(self, v):
        """The dot node id that draws top-level value v."""
        if (id(self.graph), v) in self.ids:
            if v.op == "get" or v.subgraph is None:
                return self.ids[(id(self.graph), v)]
        p = producing_op(v)
        owner = v.operands[0] if v.op == "get" else v
        return self.ids.get((id(owner.subgraph), p), self.ids.get((id(self.graph), v)))

    def _in(self, c, v):
        if c.subgraph is None:
            return self.ids[(id(self.graph), c)]
        r = reading_op(c, v)
        return self.ids.get((id(c.subgraph), r)) or self.ids.get((id(self.graph), c))

    def edges(self):
        labelled = {}
        for v, c, why, nbytes in boundaries(self.graph):
            labelled[(v, c)] = f"{_bytes(nbytes)}: " + "\\n".join(textwrap.wrap(why, 36))
        for c in self.graph.nodes:
            for v in dict.fromkeys(c.operands):
                src = self._out(v) if v.subgraph is not None else self.ids.get((id(self.graph), v))
                dst = self._in(c, v)
                if src is None or dst is None:
                    continue
                label = labelled.get((v, c))
                attrs = (
                    (
                        f' [label={_q(label)}, color="#c0392b", fontcolor="#c0392b", '
                        f'class="boundary"]'
                    )
                    if label
                    else ""
                )
                self.lines.append(f"  {src} -> {dst}{attrs};")


def dot_source(graph, table: list[Kernel]) -> str:
    return _Dot(graph, table).build()


def render(graph, table: list[Kernel]) -> tuple[str, str]:
    """(html of the picture, how it was drawn: "graphviz" or "list")."""
    source = dot_source(graph, table)
    exe = shutil.which("dot")
    if exe is not None:
        done = subprocess.run(
            [exe, "-Tsvg"], input=source, capture_output=True, text=True, timeout=120
        )
        if done.returncode == 0:
            svg = done.stdout[done.stdout.index("<svg") :]
            svg = re.sub(
                r'<g id="kernel_([^"]+)" class="cluster">',
                lambda m: (
                    f'<g id="kernel_{m.group(1)}" class="cluster kernel" '
                    f'data-kernel="{m.group(1)}">'
                ),
                svg,
            )
            return svg, "graphviz"
    return _listing(graph, table), "list"


def _listing(graph, table: list[Kernel]) -> str:
    """The readable fallback without Graphviz: a box per kernel with its ops, then the edges
    fusion left in memory."""
    parts = [
        '<p class="note">Graphviz (<code>dot</code>) is not installed: the kernels are '
        'listed instead of drawn.</p><div class="kernel-list">'
    ]
    for k in table:
        body = k.node.subgraph.nodes if k.node.subgraph is not None else [k.node]
        ops = "".join(
            f'<li title="{html.escape(_tooltip(m))}">{html.escape(_op_label(m))}</li>'.replace(
                "\\n", " "
            )
            for m in body
            if m.op != "parameter"
        )
        parts.append(
            f'<div class="kernel" data-kernel="{html.escape(k.name)}">'
            f"<b>{html.escape(k.name)}</b> <span>{html.escape(k.where)}</span>"
            f"<ul>{ops}</ul></div>"
        )
    parts.append(
        '</div><table class="edges"><tr><th>value</th><th>read by</th>'
        "<th>bytes</th><th>why not fused</th></tr>"
    )
    index = {n: i for i, n in enumerate(graph.nodes)}
    for v, c, why, nbytes in boundaries(graph):
        parts.append(
            f"<tr><td>%{index[v]} {html.escape(v.type_str())}</td>"
            f"<td>%{index[c]} {html.escape(c.op)}</td><td>{nbytes:,}</td>"
            f"<td>{html.escape(why)}</td></tr>"
        )
    parts.append("</table>")
    return "".join(parts)
