"""Reference interpreter: numpy semantics of ``nn`` and ``fusion`` IR at any stage before
lowering.

``run_module(module, feeds)`` runs ``func.func @main`` on inputs keyed by their ONNX names
(the ``onnx.name`` argument attributes; ``arg0``, ``arg1``, ... where absent) and returns
outputs keyed the same way. ``evaluate(func_op, args)`` works positionally. Each op class
maps to a numpy implementation in ``IMPLS``; ``register`` adds more::

    from autofusion.interpreter import register

    @register(MyOp)
    def _my_op(op, args):
        return args[0] * 2

Semantics follow ONNX (and onnxruntime's float32 arithmetic) for the normalised properties
documented on each op in ``autofusion/dialects/nn.py``.
"""

from autofusion.interpreter import (
    contraction,
    elementwise,
    kernel,
    movement,
    reduction,
    resize,
)
from autofusion.interpreter.core import (
    IMPLS,
    evaluate,
    evaluate_block,
    input_names,
    main_function,
    output_names,
    register,
    run_module,
)

del contraction, elementwise, kernel, movement, reduction, resize

__all__ = [
    "IMPLS",
    "evaluate",
    "evaluate_block",
    "input_names",
    "main_function",
    "output_names",
    "register",
    "run_module",
]
