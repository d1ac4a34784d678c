"""The cuda backend's Executable: a Program's kernels loaded once, launched in order per call.

A call uploads NumPy inputs (device inputs are used in place), allocates the temporaries,
launches every kernel on one stream with no host synchronization between them, and either
copies the results back (NumPy inputs) or returns device arrays (device inputs). Launch
configs were computed from the sizes when the graph was compiled.

Kernels that can fail where NumPy raises (a gather index out of bounds, an integer to a
negative power) store a code in an error flag instead; after the last launch the call reads
the flag (a 4-byte copy that waits for the stream, only for such graphs) and raises NumPy's
exception.

A loop (program.HostLoop) runs its step's launches while the flag the step computes is
true: the host reads the flag back after every trip (and the error flag, so a failing step
stops the loop as NumPy's raise would).
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings

import numpy as np

from jitc.backends import Executable
from jitc.backends.cuda import launch, modules
from jitc.backends.cuda.device import current, is_numba_array
from jitc.backends.cuda.lowering import (
    ERR_INDEX,
    ERR_NEGATIVE_POWER,
    ERR_NOT_POSITIVE_DEFINITE,
    ERR_SCATTER,
    ERR_SINGULAR,
)
from jitc.backends.cuda.program import HostLoop, Launch, LibraryDot, Program, Raise, build_program
from jitc.core import config, failures
from jitc.core.device_arrays import is_device_array
from jitc.core.ir import Graph

# The simulator runs one kernel at a time per process (a global kernel context).
_SIMULATOR_LOCK = threading.Lock()

_ERRORS = {
    ERR_INDEX: (IndexError, "index out of bounds in a gather (integer-array indexing)"),
    ERR_NEGATIVE_POWER: (ValueError, "Integers to negative integer powers are not allowed."),
    ERR_SCATTER: (IndexError, "index out of bounds in integer-array assignment (scatter)"),
    ERR_SINGULAR: (np.linalg.LinAlgError, "Singular matrix"),
    ERR_NOT_POSITIVE_DEFINITE: (np.linalg.LinAlgError, "Matrix is not positive definite"),
}
# The primitive behind each code (jitc.core.failures names the nodes that can fail so).
_FAILURE_OF = {
    ERR_INDEX: failures.GATHER,
    ERR_NEGATIVE_POWER: failures.NEGATIVE_POWER,
    ERR_SCATTER: failures.SCATTER,
    ERR_SINGULAR: failures.LINALG,
    ERR_NOT_POSITIVE_DEFINITE: failures.LINALG,
}


def _argument(values: list, buffer):
    """A loop step's parameter: its carried values, then its invariants."""
    return values[buffer.index]


class CudaExecutable(Executable):
    def __init__(self, graph: Graph):
        self.graph = graph
        self.device = current()
        self.program = build_program(graph, library_dots=self.device.has_blas)
        if config.DUMP_DIR:
            modules.dump(graph.name, self.program.kernels, config.DUMP_DIR)
        policy = launch.SIMULATOR if self.device.simulator else launch.GPU
        self.functions = {k.name: modules.load(k) for k in self.program.kernels}
        launches = [s for s in self.program.all_steps() if isinstance(s, Launch)]
        self.configs = {id(s): launch.config(s.kernel, policy) for s in launches}
        # Per launch step, the device's faster launch once it has launched once (CuPy's).
        self.direct: dict = {}
        self.uses_err = any(k.uses_err for k in self.program.kernels)
        self.constants = {}
        self.n_params = len(graph.params)
        self.single_output = len(self.program.outputs) == 1
        self._sealed = False

    # -- the call
    def __call__(self, *arrays):
        out = self.run(*arrays)
        return [out] if self.single_output else list(out)

    def run(self, *arrays):
        if len(arrays) != self.n_params:
            raise TypeError(
                f"{self.graph.name}: expected {self.n_params} arrays, got {len(arrays)}"
            )
        guard = self._simulator_guard() if self.device.simulator else contextlib.nullcontext()
        with guard:
            outs = self._run(arrays)
        if not self._sealed:
            modules.seal(self.program.kernels)
            self._sealed = True
        return outs

    @contextlib.contextmanager
    def _simulator_guard(self):
        """One simulated kernel at a time; NumPy scalar math warns where CUDA is silent."""
        with _SIMULATOR_LOCK, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            yield

    def _run(self, arrays):
        dev = self.device
        on_device = [a for a in arrays if is_device_array(a)]
        numba_arrays = bool(on_device) and all(is_numba_array(a) for a in on_device)

        def argument(b):
            a = arrays[b.index]
            return dev.adopt(a) if is_device_array(a) else dev.upload(np.asarray(a, dtype=b.dtype))

        bufs = self._buffers(self.program, argument)
        err = dev.zeros_int32(1) if self.uses_err else None
        self._steps(self.program, bufs, err)
        self._raise_failure(err)
        outs = []
        for bid, shape, alias in zip(
            self.program.outputs, self.program.output_shapes, self.program.output_aliases_input
        ):
            if on_device:
                outs.append(
                    dev.to_result(dev.copy(bufs[bid]) if alias else bufs[bid], shape, numba_arrays)
                )
            else:
                outs.append(dev.to_host(bufs[bid], shape))
        if on_device:
            dev.finish()
        return outs[0] if self.single_output else tuple(outs)

    def _buffers(self, program: Program, argument) -> list:
        """The device arrays of `program`'s buffers, `argument(buffer)` its parameters'."""
        bufs = []
        for bid, b in enumerate(program.buffers):
            if b.kind == "param":
                bufs.append(argument(b))
            elif b.kind == "const":
                bufs.append(self._constant(program, bid, b))
            elif b.kind == "view":
                bufs.append(bufs[b.index][b.offset : b.offset + b.size])
            elif b.kind == "loop":
                bufs.append(None)  # its HostLoop step puts the loop's result there
            else:
                bufs.append(self.device.empty(b.size, b.dtype))
        return bufs

    def _steps(self, program: Program, bufs: list, err):
        for step in program.steps:
            if isinstance(step, Launch):
                self._launch(step, bufs, err)
            elif isinstance(step, LibraryDot):
                self._library_dot(step, bufs)
            elif isinstance(step, HostLoop):
                self._host_loop(step, bufs, err)
            elif isinstance(step, Raise):
                raise step.exc(step.message)

    def _host_loop(self, loop: HostLoop, bufs: list, err):
        dev, body = self.device, loop.body
        state = [dev.copy(bufs[b]) for b in loop.carried]
        invariants = [bufs[b] for b in loop.invariants]
        flag = bufs[loop.flag]
        while dev.to_host(flag, (1,))[0]:
            inner = self._buffers(body, functools.partial(_argument, state + invariants))
            self._steps(body, inner, err)
            self._raise_failure(err)
            *outs, flag = (inner[b] for b in body.outputs)
            aliases = body.output_aliases_input
            state = [dev.copy(o) if alias else o for o, alias in zip(outs, aliases)]
        for b, value in zip(loop.results, state):
            bufs[b] = value

    def _raise_failure(self, err):
        """NumPy's exception for the code a kernel stored in the error flag, if any."""
        code = 0 if err is None else self.device.read_int(err)
        if code:
            exc, message = _ERRORS[code]
            kind = _FAILURE_OF[code]
            raise failures.located(
                failures.sites(self.graph, kind), kind, exc, f"{self.graph.name}: {message}"
            )

    def _constant(self, program: Program, bid: int, b):
        key = (id(program), bid)
        if key not in self.constants:
            self.constants[key] = self.device.upload(b.value)
        return self.constants[key]

    def _launch(self, step: Launch, bufs, err):
        cfg = self.configs[id(step)]
        if cfg.empty:
            return
        k = step.kernel
        args = [bufs[i] for i in step.inputs] + [bufs[i] for i in step.outputs]
        args += [self.device.empty(max(cfg.scratch_elements, 1), d) for d in k.scratch]
        if k.uses_err:
            args.append(err)
        args += k.sizes
        direct = self.direct.get(id(step))
        if direct is not None:
            direct(args)
        else:
            self.direct[id(step)] = self.device.launch(
                self.functions[k.name], cfg.grid, cfg.block, args
            )

    def _library_dot(self, step: LibraryDot, bufs):
        """cuBLAS through cupy.matmul on (B, M, K) x (B, K, N) views (GPU with CuPy only)."""
        from jitc.backends.cuda.dot import DotLayout

        lay = DotLayout(step.dot)
        lhs_node, rhs_node = step.dot.operands
        lhs = bufs[step.lhs].reshape(lhs_node.shape).transpose(tuple(lay.lb + lay.lf + lay.lc))
        rhs = bufs[step.rhs].reshape(rhs_node.shape).transpose(tuple(lay.rb + lay.rc + lay.rf))
        out = bufs[step.out].reshape(lay.B, lay.M, lay.N)
        self.device.matmul(lhs.reshape(lay.B, lay.M, lay.K), rhs.reshape(lay.B, lay.K, lay.N), out)

    # -- introspection
    def stats(self) -> dict:
        from jitc.fusion.stats import graph_stats

        stats = graph_stats(self.graph)
        stats["launches"] = sum(
            1 for s in self.program.all_steps() if isinstance(s, (Launch, LibraryDot))
        )
        return stats

    def as_text(self, stage: str = "ptx", arch: str = "sm_90") -> str:
        """The PTX of every kernel (stage "ptx") or their numba source (stage "kernels")."""
        from jitc.backends.cuda.ptx import program_ptx

        if stage == "kernels":
            return "\n\n".join(k.source for k in self.program.kernels)
        if stage == "ptx":
            return "\n".join(
                f"// jitc kernel {name} ({arch})\n{ptx}"
                for name, ptx in program_ptx(self.program, arch).items()
            )
        raise ValueError(f"cuda backend: unknown stage {stage!r}; use 'ptx' or 'kernels'")
