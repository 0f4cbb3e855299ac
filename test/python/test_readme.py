"""The README says what the tools do: its commands are CI's, every pass and option is listed,
and its Python quick start runs."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import onnxruntime as ort

from autofusion.passes import get_all_passes
from autofusion.testing import assert_close

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", text, re.S)


def test_ci_runs_exactly_the_readme_commands() -> None:
    install, test = (b.strip() for b in _sh_blocks(README)[:2])
    ci = (ROOT / ".ci" / "run").read_text()
    assert install in ci, "README install command differs from .ci/run"
    assert test in ci, "README test command differs from .ci/run"


def test_every_pass_and_option_is_documented() -> None:
    missing = []
    for name, factory in get_all_passes().items():
        if f"`{name}`" not in README:
            missing.append(name)
            continue
        row = next((line for line in README.splitlines() if line.startswith(f"| `{name}`")), "")
        for field in dataclasses.fields(factory()):
            if field.name.replace("_", "-") not in row and field.name not in row:
                missing.append(f"{name}: option {field.name}")
    assert not missing, missing


def test_python_quick_start_runs(tmp_path: Path, monkeypatch) -> None:
    code = re.findall(r"```python\n(.*?)```", README, re.S)[0]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fusion.yaml").write_text("aggressiveness: 2\n")
    scope: dict[str, object] = {}
    import autofusion

    try:
        exec(compile(code, "README.md", "exec"), scope)  # our own README
    finally:
        autofusion.set_memory_limit(None)  # the quick start sets a process-wide default
    from autofusion.zoo import get_model, sample_inputs

    feeds = sample_inputs(get_model("tiny_cnn"))
    sess = ort.InferenceSession(get_model("tiny_cnn").SerializeToString())
    (ref,) = sess.run(None, feeds)
    out = scope["out"]
    assert isinstance(out, dict)
    got = out["logits"]
    assert_close(got, ref, "logits")
    # the custom policy refuses every residual Add, so the second build has a refusal for it
    refusals = scope["m2"].report["refusals"]  # type: ignore[attr-defined]
    assert any(r["code"] == "policy" for r in refusals), refusals
