"""User-facing errors: one clear message, exit status 1, never a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


class AutofusionError(Exception):
    """An error caused by the user's input (model, IR, options), reported without traceback."""


def run_cli(tool: str, body: Callable[[], object]) -> int:
    """Run a command-line entry point, turning expected failures into one-line errors."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError, PassFailedException

    try:
        body()
    except AutofusionError as e:
        print(f"{tool}: error: {e}", file=sys.stderr)
        return 1
    except ParseError as e:
        print(f"{tool}: error: {e}", file=sys.stderr)
        return 1
    except (DiagnosticException, PassFailedException) as e:
        print(f"{tool}: error: {e}", file=sys.stderr)
        return 1
    except FileNotFoundError as e:
        print(f"{tool}: error: {e.filename}: no such file", file=sys.stderr)
        return 1
    except OSError as e:
        # permission denied, a directory where a file was expected, a full disk: the
        # environment's fault, not ours, and the file and reason say all there is
        where = f"{e.filename}: " if e.filename else ""
        print(f"{tool}: error: {where}{e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # last line of defence for users
        if os.environ.get("AUTOFUSION_DEBUG"):
            raise
        print(
            f"{tool}: internal error: {type(e).__name__}: {e} "
            "(set AUTOFUSION_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1
    return 0
