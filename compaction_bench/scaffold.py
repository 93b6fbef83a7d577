"""``compaction-bench new-strategy NAME``: a commented strategy skeleton and its test, ready to run.

The skeleton is the README's example strategy (clear old tool outputs above a share of the window)
with every line explained; the test replays a synthetic session through it beside ``none``.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

STRATEGY = '''\
"""{title}: my own context-compaction strategy for compaction-bench.

Run it:  compaction-bench run --strategies none ./{module}.py:{cls} './{module}.py:{cls}@keep=2|5|10'
Test it: python -m pytest -q test_{module}.py
Edit freely: the task key includes this file's source, so a re-run never resumes stale results.
"""

from __future__ import annotations

from dataclasses import dataclass

from strategies import Outcome, Strategy, event, rewrite_results


# One frozen dataclass: its fields are the parameters (`--strategies ./{module}.py:{cls}@keep=3`).
@dataclass(frozen=True, kw_only=True)
class {cls}(Strategy):
    """Above `trigger` of the window, replace all but the newest `keep` tool outputs by a marker."""

    name = "{name}"  # how the report labels the family
    citation = "my own strategy (no real agent)"  # where the behaviour comes from
    trigger: float = 0.8  # share of the model's context window that sets it off
    keep: int = 5  # tool outputs kept verbatim, newest first

    # Hooks (all optional; each returns None or an Outcome(new context, events)):
    #   on_tool_result(ctx, session) after each tool result is appended,
    #   before_call(ctx, session) before every model call,
    #   on_overflow(ctx, session) when the request did not fit the window (a 413),
    #   project(ctx, session) -> the context actually sent (a view; the history is kept).
    # ctx.truth is what the provider counts (the recorded usage spread over the messages, with the
    # system prompt and tool schemas), the number the window holds; ctx.estimate is an agent's own
    # estimate (chars/4 by default), about half of it on real sessions: a trigger on it fires late
    # and overflows. session.model.context_window is the window; session.summarize(...) asks the
    # run's summarizer.
    def before_call(self, ctx, session):
        if ctx.truth < self.trigger * session.model.context_window:
            return None
        ids = [r.tool_use_id for m in ctx.messages for r in m.tool_results]
        old = set(ids[: max(0, len(ids) - self.keep)])
        if not old:
            return None
        new = ctx.replace(rewrite_results(m, lambda r: "[cleared]" if r.tool_use_id in old else None)
                          for m in ctx.messages)
        # Every change is reported as an event: the report counts and charts them.
        return Outcome(new, (event("prune", ctx, new, touched=len(old)),))
'''

TEST = '''\
"""{cls} replayed beside `none` on a synthetic session: it runs, and never sends more than `none`."""

from pathlib import Path

import compaction_bench

HERE = Path(__file__).resolve().parent


def test_{module}_runs_and_saves(tmp_path):
    spec = f"{{HERE / '{module}.py'}}:{cls}@trigger=0.05"  # a low trigger so it acts on a short session
    result = compaction_bench.run(traces=["synthetic:short"], strategies=["none", spec], out=str(tmp_path),
                                  name="test", executor="local", workers=1)
    table = result.table.set_index("strategy")
    assert (table.error.fillna("") == "").all(), table.error
    assert table.loc[spec, "input_tokens"] <= table.loc["none", "input_tokens"]
'''


def write(name: str, directory: Path | str = ".") -> tuple[Path, Path]:
    """Write ``<module>.py`` and ``test_<module>.py`` into ``directory``; refuse to overwrite."""
    module = re.sub(r"\W", "_", name.strip().lower()).strip("_")
    if not module or module[0].isdigit() or keyword.iskeyword(module):
        raise ValueError(f"new-strategy: {name!r} does not make a Python module name; use letters, digits, - or _")
    cls = "".join(part.capitalize() for part in module.split("_") if part)
    directory = Path(directory)
    paths = (directory / f"{module}.py", directory / f"test_{module}.py")
    existing = [str(p) for p in paths if p.exists()]
    if existing:
        raise ValueError(f"new-strategy: {', '.join(existing)} already exist(s); pick another name or move it")
    directory.mkdir(parents=True, exist_ok=True)
    fill = {"title": name, "module": module, "cls": cls, "name": module.replace("_", "-")}
    paths[0].write_text(STRATEGY.format(**fill), encoding="utf-8")
    paths[1].write_text(TEST.format(**fill), encoding="utf-8")
    return paths
