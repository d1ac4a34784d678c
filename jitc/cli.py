"""The `jitc` command: show a function's graph, compile it ahead of time, report sizes.

jitc show examples/mlp.py:layer --arg f32[1,512] [--stage traced|optimized] [--format text|dot]
jitc aot examples/lstm.py:step --arg f32[1,60] ... -o build/ [--target aarch64-linux]
         [--name NAME] [--cpu generic|native|CPU] [--max-bytes N] [--emit-test]
jitc size build/step
jitc report examples/mlp.py:layer --arg f32[1,512] -o report.html
jitc report build/step -o report.html
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from jitc.core.errors import JitcError


class CliError(Exception):
    """A bad command line: one clear line and exit status 2."""


def load_function(target: str):
    """'path/to/file.py:name' -> the function (a jitted one is unwrapped to its Python code)."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise CliError(f"expected FILE.py:FUNCTION, got {target!r}")
    if not os.path.isfile(path):
        raise CliError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(
        f"jitc_cli_{os.path.splitext(os.path.basename(path))[0]}", path
    )
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:
        raise CliError(f"{path}:{e.lineno}: syntax error: {e.msg}") from None
    finally:
        sys.path.pop(0)
    fn = getattr(module, name, None)
    if fn is None:
        raise CliError(f"{path} has no function {name!r}")
    fn = getattr(fn, "fun", fn)
    if not callable(fn):
        raise CliError(f"{path}:{name} is a {type(fn).__name__}, not a function")
    return fn


def parse_specs(texts):
    from jitc.core.specs import spec

    out = []
    for t in texts or []:
        try:
            out.append(spec(t))
        except ValueError as e:
            raise CliError(str(e)) from None
    return out


def to_dot(graph) -> str:
    """Graphviz text of a (fused) graph; each fusion is a cluster of its nested ops."""
    lines = [f'digraph "{graph.name}" {{', "  node [shape=box, fontname=monospace];"]
    ids = {}

    def emit(g, prefix, indent):
        for n in g.nodes:
            nid = f"{prefix}n{len(ids)}"
            ids[(id(g), n)] = nid
            if n.subgraph is not None:
                lines.append(f"{indent}subgraph cluster_{nid} {{")
                lines.append(f'{indent}  label="fusion {n.attrs.get("kind", "")} {n.type_str()}";')
                emit(n.subgraph, nid + "_", indent + "  ")
                lines.append(f"{indent}}}")
                lines.append(f'{indent}{nid} [label="{n.type_str()}", shape=point];')
            else:
                label = f"{n.op}\\n{n.type_str()}"
                lines.append(f'{indent}{nid} [label="{label}"];')
            for o in n.operands:
                lines.append(f"{indent}{ids[(id(g), o)]} -> {nid};")

    emit(graph, "", "  ")
    lines.append("}")
    return "\n".join(lines)


def cmd_show(args):
    import jitc

    fn = load_function(args.target)
    lowered = jitc.jit(fn, backend="reference").lower(*parse_specs(args.arg))
    graph = lowered.graph if args.stage == "traced" else lowered.compile().graph
    print(to_dot(graph) if args.format == "dot" else str(graph))
    return 0


def cmd_aot(args):
    from jitc import aot

    fn = load_function(args.target)
    specs = parse_specs(args.arg)
    name = args.name or args.target.rpartition(":")[2]
    os.makedirs(args.output, exist_ok=True)  # an unwritable -o fails before compiling
    built_from = {
        "function": _absolute_target(args.target),
        "args": list(args.arg or []),
        "max_bytes": args.max_bytes,
    }
    return aot.cli_compile(
        fn,
        specs,
        name=name,
        out_dir=args.output,
        target=args.target_triple,
        cpu=args.cpu,
        max_bytes=args.max_bytes,
        emit_test=args.emit_test,
        built_from=built_from,
    )


def _absolute_target(target: str) -> str:
    path, _, name = target.rpartition(":")
    return f"{os.path.abspath(path)}:{name}"


def cmd_size(args):
    from jitc import aot

    print(aot.read_size_report(args.artifact))
    return 0


def cmd_report(args):
    import jitc
    from jitc import report

    out = os.path.abspath(args.output)
    if os.path.isdir(out) or not os.access(os.path.dirname(out), os.W_OK):
        raise CliError(f"cannot write the report to {args.output}")
    if ".py:" in args.target or args.target.endswith(".py"):
        fn = load_function(args.target)
        report.write(jitc.jit(fn).lower(*parse_specs(args.arg)).compile(), out)
        print(f"wrote {args.output}")
        return 0
    if args.arg:
        raise CliError("--arg is for FILE.py:FUNCTION; an artifact has its arguments")
    from jitc.aot.artifact import lowering

    path, size_report = report.read_artifact(args.target)
    size = report.artifact_size(path, size_report)
    built = size_report.get("built_from")
    compiled = None
    if built:  # the graph the artifact compiled, on the cpu backend: the same kernels
        fn = load_function(built["function"])
        compiled = lowering(fn, parse_specs(built["args"]))[0].compile("cpu")
    report.write(compiled, out, size, title=size_report["name"])
    print(
        f"wrote {args.output}"
        + ("" if built else f" (the size alone: {path} records no function to compile again)")
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="jitc", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    show = sub.add_parser("show", help="print a function's traced or optimized graph")
    show.add_argument("target", help="FILE.py:FUNCTION")
    show.add_argument("--arg", action="append", help="argument spec such as f32[1,512]")
    show.add_argument("--stage", choices=("traced", "optimized"), default="traced")
    show.add_argument("--format", choices=("text", "dot"), default="text")
    show.set_defaults(run=cmd_show)
    aot_p = sub.add_parser("aot", help="compile a function into an object, header and loader")
    aot_p.add_argument("target", help="FILE.py:FUNCTION")
    aot_p.add_argument("--arg", action="append", help="argument spec such as f32[1,60]")
    aot_p.add_argument("-o", "--output", required=True, help="output directory")
    aot_p.add_argument("--name", help="C symbol and file stem (default: the function name)")
    aot_p.add_argument(
        "--target",
        dest="target_triple",
        default="host",
        choices=("host", "x86_64-linux", "aarch64-linux"),
    )
    aot_p.add_argument(
        "--cpu",
        default="generic",
        help="generic (portable baseline: x86-64-v2 / armv8-a), native, or an LLVM cpu name",
    )
    aot_p.add_argument("--max-bytes", type=int, help="fail (exit 1) above this artifact size")
    aot_p.add_argument("--emit-test", action="store_true", help="also write a C test program")
    aot_p.set_defaults(run=cmd_aot)
    size = sub.add_parser("size", help="print the size report of an artifact")
    size.add_argument("artifact", help="DIR/NAME of a compiled artifact")
    size.set_defaults(run=cmd_size)
    rep = sub.add_parser(
        "report", help="write an HTML page: fused graph, size treemap, time per kernel"
    )
    rep.add_argument("target", help="FILE.py:FUNCTION, or DIR/NAME of a compiled artifact")
    rep.add_argument("--arg", action="append", help="argument spec such as f32[1,512]")
    rep.add_argument("-o", "--output", required=True, help="the HTML file to write")
    rep.set_defaults(run=cmd_report)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except CliError as e:
        print(f"jitc {args.command}: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a missing file, an output directory that cannot be written
        print(f"jitc {args.command}: {e}", file=sys.stderr)
        return 2
    # MemoryError: --emit-test computes golden values, impossible for a huge argument
    except (JitcError, TypeError, ValueError, MemoryError) as e:
        print(f"jitc {args.command}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
