"""Registries: every key names its pass/target/dialect, and nothing shadows xDSL's own."""

from __future__ import annotations

from autofusion.dialects import get_all_dialects
from autofusion.lowering import get_all_targets
from autofusion.passes import get_all_passes


def test_pass_keys_match_pass_names() -> None:
    for key, factory in get_all_passes().items():
        assert factory().name == key, f"registry key {key!r} != pass name {factory().name!r}"


def test_passes_do_not_shadow_xdsl() -> None:
    from xdsl.transforms import get_all_passes as xdsl_passes

    clash = set(get_all_passes()) & set(xdsl_passes())
    assert not clash, f"autofusion passes shadow xDSL passes: {sorted(clash)}"


def test_pass_names_are_kebab_case() -> None:
    import re

    for key in get_all_passes():
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", key), key


def test_dialect_keys_match_names() -> None:
    for key, factory in get_all_dialects().items():
        assert factory().name == key


def test_dialects_do_not_shadow_xdsl() -> None:
    from xdsl.universe import Universe

    clash = set(get_all_dialects()) & set(Universe.get_multiverse().all_dialects)
    assert not clash, f"autofusion dialects shadow xDSL dialects: {sorted(clash)}"


def test_target_keys_match_names() -> None:
    for key, factory in get_all_targets().items():
        assert factory().name == key


def test_backends_implement_the_protocol() -> None:
    """Every registry line names a Backend whose name is its key, whose lowering passes are
    registered, and whose printer is the -t target of the same name."""
    from autofusion.lowering import BACKENDS, get_backend
    from autofusion.lowering.backend import Backend, RunnableBackend, SimulatedBackend
    from autofusion.pipeline import PipelineOptions

    passes = get_all_passes()
    fields = set(PipelineOptions.__dataclass_fields__)
    for key in BACKENDS:
        b = get_backend(key)
        assert isinstance(b, Backend), key
        assert b.name == key
        assert b.lowering, key
        assert all(p.split("{")[0] in passes for p in b.lowering), b.lowering
        assert b.target().name == key
        assert set(b.option_fields) <= fields, b.option_fields
        assert isinstance(b, RunnableBackend | SimulatedBackend), (
            f"{key} can neither run nor simulate"
        )
    assert set(get_all_targets()) == set(BACKENDS)
