"""The ``Backend`` protocol: what a code-generation target provides to the rest of autofusion.

A backend is one folder under ``autofusion/lowering/`` plus one line in
:data:`autofusion.lowering.BACKENDS`. It names

- ``lowering``: the pass specs (registered passes, with options if needed) that take fused,
  planned nn/fusion IR to what its printer reads; :class:`autofusion.pipeline.Pipeline`
  appends them after the tensor passes and verifies after each one;
- ``target()``: the xDSL ``Target`` class printing lowered IR (``autofusion-opt -t NAME``);
- ``check_lowered(module)``: raise ``AutofusionError`` naming the first op the printer cannot
  read (so a printer given IR that is not lowered says which ``-p`` to run);
- ``emit(module, out_dir)``: write the generated files of a lowered module;
- ``option_fields``: the :class:`~autofusion.pipeline.PipelineOptions` fields it reads beyond
  the pipeline's own (``cpu`` for C); others must keep their defaults, and the values are
  recorded in the compile report.

A backend whose output runs in this process (:class:`RunnableBackend`) also builds the emitted
folder and loads it; one that can only be simulated here (:class:`SimulatedBackend`) runs a
lowered module on a functional model (``autofusion-bench`` checks its numerics).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from xdsl.dialects.builtin import ModuleOp
    from xdsl.utils.target import Target

    from autofusion.pipeline import PipelineOptions

Feeds = Mapping[str, "np.ndarray"]
Runner = Callable[[Feeds], Mapping[str, "np.ndarray"]]


@runtime_checkable
class Backend(Protocol):
    """A target: lowering passes, a printer, and the files it writes."""

    name: str
    lowering: tuple[str, ...]
    option_fields: tuple[str, ...]

    def target(self) -> type[Target]:
        """The ``Target`` that prints a lowered module (``-t NAME``)."""
        ...

    def check_lowered(self, module: ModuleOp) -> None:
        """Raise ``AutofusionError`` naming the first op this backend cannot print."""
        ...

    def emit(self, module: ModuleOp, out_dir: Path) -> None:
        """Write the generated files of a lowered ``module`` into ``out_dir``."""
        ...


@runtime_checkable
class RunnableBackend(Backend, Protocol):
    """A backend whose emitted folder is built and loaded in this process."""

    def build(
        self,
        out_dir: Path,
        opts: PipelineOptions,
        default_threads: int | None = None,
        say: Callable[[str], None] | None = None,
    ) -> None:
        """Turn the emitted folder into what :meth:`load` opens (e.g. ``libmodel.so``);
        ``default_threads`` is the thread count the build uses when given none, ``say``
        reports progress."""
        ...

    def load(self, out_dir: Path, threads: int | None) -> Any:
        """A loaded model with ``run(feeds)``, ``inputs``, ``outputs`` and ``close()``."""
        ...


@runtime_checkable
class SimulatedBackend(Backend, Protocol):
    """A backend whose kernels run here only on a functional model (numerics, not speed)."""

    latency_note: str

    def simulate(self, module: ModuleOp) -> Runner:
        """Build the lowered ``module`` for the functional model; the result runs it on feeds."""
        ...
