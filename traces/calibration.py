"""Distribution parameters of real agent sessions, fitted once and stored, so synthetic sessions look real.

The synthetic generator (traces/synthetic.py) draws tool-output sizes, the tool mix and the pace of
calls from these constants. ``fit(folder)`` re-derives them from the real traces in
../shared/traces (MANIFEST.md there) by parsing the raw files with ``json`` only; a test checks that
the stored constants are what ``fit`` gives, so the fit is reproducible.

How they were derived
---------------------
Every tool call with a recorded output, from: Claude Code session JSONL (3 main sessions, their
Explore/Task subagents, ``subagent``, ``tool_heavy``, ``short``; the ``agent-acompact-*`` summariser
calls are skipped, they replay the session), Codex rollouts (output size from the redaction marker
``[REDACTED_OUTPUT len=N ...]``, which keeps the original length), OpenHands ``output.jsonl`` and the
two replay trajectories, SWE-agent ``.traj`` steps (text actions classified by their command word),
the mini-swe-agent trajectory and the Cline SDK session. Each call is put in a category by its tool:

  read    Read, read_files, str_replace_editor view, open/goto/scroll_*
  edit    Edit, MultiEdit, apply_patch, editor, str_replace_editor edits, SWE-agent ``edit``
  write   Write, create
  bash    Bash, exec_command, write_stdin, execute_bash, run_commands, shell actions
  search  Grep, Glob, find_file, search_dir, search_file
  web     WebFetch, WebSearch
  other   Task, MCP tools, update_plan, think, submit, ...

Per category, the output size in characters is fitted by a log-normal: ``median = exp(mean(ln
chars))`` and ``sigma = std(ln chars)`` (population std; an empty output counts as 1 char). The tool
mix is each category's share of all calls. ``step_seconds`` is the gap between consecutive
tool-calling assistant messages of one human turn (Claude Code unique message ids, Codex tool calls
more than 0.5 s apart), gaps over 10 minutes dropped as idle; ``turn_seconds`` is the gap from the
last assistant message to the next human message (same sources, up to 1 hour). Assistant text is
the visible text of Claude Code assistant messages (Codex's redacted lengths included).

Fitted on the traces listed in MANIFEST.md: 1,427 tool calls (Claude Code 649, Codex 592, OpenHands
108, SWE-agent 56, Cline 12, mini-swe-agent 10). Regenerate with ``python -m traces.calibration``.

  category  calls  share  median chars  sigma  p90 chars
  read        163  0.114         1,860  1.675     15,911
  edit        251  0.176           192  0.796        532
  write        30  0.021           337  1.929      3,993
  bash        849  0.595           349  2.153      5,514
  search       48  0.034           107  1.473        709
  web          26  0.018         1,355  1.398      8,129
  other        60  0.042           601  2.067      8,494

Pace: step gap median 10.0 s (sigma 0.873, 842 gaps); human-turn gap median 100.6 s (sigma 2.039,
46 gaps); assistant text median 141.5 chars (sigma 0.988, 671 texts); 12% of tool-calling
assistant messages make parallel calls. For reference, real Claude Code outputs tokenize (cl100k)
at 3.15 chars/token for reads, 3.55 for bash, 4.0 for edits and 4.2 for assistant text; the
generator's filler gives 3.5, 3.1, 3.75 and 4.5.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from random import Random

CATEGORIES: tuple[str, ...] = ("read", "edit", "write", "bash", "search", "web", "other")


@dataclass(frozen=True)
class LogNormal:
    """A log-normal by its median and the std of the log; sizes and durations are heavy-tailed."""

    median: float
    sigma: float

    def quantile(self, q: float) -> float:
        return self.median * math.exp(self.sigma * statistics.NormalDist().inv_cdf(q))

    def sample(self, rng: Random) -> float:
        return rng.lognormvariate(math.log(self.median), self.sigma)

    def sample_within(self, rng: Random, floor: float, ceiling: float = math.inf) -> float:
        """A draw conditioned on lying in [``floor``, ``ceiling``] (inverse CDF: one uniform, no rejection)."""
        normal = statistics.NormalDist()

        def cdf(x: float) -> float:
            return normal.cdf(math.log(max(x, 1e-9) / self.median) / self.sigma) if self.sigma > 0 else 0.5

        lo, hi = cdf(floor), 1.0 if ceiling == math.inf else cdf(ceiling)
        u = min(max(lo + rng.random() * (hi - lo), 1e-12), 1.0 - 1e-12)
        return min(max(floor, self.median * math.exp(self.sigma * normal.inv_cdf(u))), ceiling)

    def scaled(self, factor: float) -> LogNormal:
        """The same shape with the median multiplied by ``factor`` (a scenario's size scale)."""
        return LogNormal(self.median * factor, self.sigma)

    @staticmethod
    def fit(values: list[float]) -> LogNormal:
        logs = [math.log(max(v, 1.0)) for v in values]
        return LogNormal(round(math.exp(statistics.fmean(logs)), 1), round(statistics.pstdev(logs), 3))


@dataclass(frozen=True)
class Calibration:
    output_chars: Mapping[str, LogNormal]
    """Tool-output size in characters, per category."""
    tool_mix: Mapping[str, float]
    """Share of all tool calls, per category (sums to 1 up to rounding)."""
    calls: Mapping[str, int]
    """How many real calls each category was fitted on."""
    step_seconds: LogNormal
    turn_seconds: LogNormal
    assistant_text_chars: LogNormal
    parallel_share: float
    """Share of tool-calling assistant messages that make more than one call (Claude Code)."""


FITTED = Calibration(
    output_chars={
        "read": LogNormal(2341.3, 1.358),
        "edit": LogNormal(205.9, 0.78),
        "write": LogNormal(225.2, 1.473),
        "bash": LogNormal(406.5, 1.966),
        "search": LogNormal(276.7, 1.984),
        "web": LogNormal(1474.4, 1.55),
        "other": LogNormal(624.9, 2.22),
    },
    tool_mix={"read": 0.138, "edit": 0.164, "write": 0.016, "bash": 0.474, "search": 0.06,
              "web": 0.007, "other": 0.142},
    calls={"read": 656, "edit": 777, "write": 76, "bash": 2252, "search": 284, "web": 33, "other": 673},
    step_seconds=LogNormal(8.7, 0.91),
    turn_seconds=LogNormal(83.8, 1.587),
    assistant_text_chars=LogNormal(150.4, 1.13),
    parallel_share=0.107,
)
"""The stored fit (regenerate with ``python -m traces.calibration ../shared/traces``)."""


_TOOL_CATEGORY = {
    "Read": "read", "read_files": "read", "read": "read", "view": "read", "open": "read", "goto": "read",
    "scroll_up": "read", "scroll_down": "read",
    "Edit": "edit", "MultiEdit": "edit", "NotebookEdit": "edit", "apply_patch": "edit",
    "editor": "edit", "edit": "edit", "str_replace": "edit", "insert": "edit", "undo_edit": "edit",
    "Write": "write", "create": "write",
    "Bash": "bash", "BashOutput": "bash", "KillShell": "bash", "exec_command": "bash",
    "write_stdin": "bash", "execute_bash": "bash", "run_commands": "bash", "run": "bash",
    "Grep": "search", "Glob": "search", "find_file": "search", "search_dir": "search",
    "search_file": "search",
    "WebFetch": "web", "WebSearch": "web",
}


def category(tool: str) -> str:
    return _TOOL_CATEGORY.get(tool, "other")


@dataclass(frozen=True)
class Call:
    """One real tool call: where from, its category, its output size."""

    source: str
    category: str
    chars: int


@dataclass
class Timing:
    """Samples collected while parsing (mutable on purpose: filled by the readers)."""

    step_gaps: list[float] = field(default_factory=list)
    turn_gaps: list[float] = field(default_factory=list)
    text_chars: list[int] = field(default_factory=list)
    calls_per_message: dict[str, int] = field(default_factory=dict)


_REDACTED = re.compile(r"\[REDACTED_[A-Z]+ len=(\d+)")


def _ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def _text_len(content: object) -> int:
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(len(b.get("text", "")) if isinstance(b, dict) else len(str(b)) for b in content)
    return len(json.dumps(content)) if content is not None else 0


def _jsonl(path: Path) -> Iterator[dict]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            yield json.loads(line)


def _claude_code(path: Path, timing: Timing) -> Iterator[Call]:
    names: dict[str, str] = {}
    seen: set[str] = set()
    seen_uses: set[str] = set()
    last_asst: float | None = None
    prev_tool_msg: tuple[str, float] | None = None
    for r in _jsonl(path):
        msg = r.get("message") or {}
        content = msg.get("content")
        when = _ts(r["timestamp"]) if r.get("timestamp") else None
        if r.get("type") == "assistant" and isinstance(content, list):
            mid = msg.get("id", "")
            for b in content:
                if b.get("type") == "tool_use":
                    names[b["id"]] = b["name"]
                    key = f"{path.name}:{mid}"
                    timing.calls_per_message[key] = timing.calls_per_message.get(key, 0) + (b["id"] not in seen_uses)
                    seen_uses.add(b["id"])
                    if when is not None and (prev_tool_msg is None or prev_tool_msg[0] != mid):
                        if prev_tool_msg is not None and 0 < when - prev_tool_msg[1] <= 600:
                            timing.step_gaps.append(when - prev_tool_msg[1])
                        prev_tool_msg = (mid, when)
                elif b.get("type") == "text" and b.get("text", "").strip():
                    timing.text_chars.append(len(b["text"]))
            last_asst = when
        elif r.get("type") == "user" and not r.get("isMeta"):
            results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] \
                if isinstance(content, list) else []
            for b in results:
                tid = b.get("tool_use_id")
                if tid in names and tid not in seen:
                    seen.add(tid)
                    yield Call("claude-code", category(names[tid]), _text_len(b.get("content")))
            if not results and isinstance(content, str) and not content.startswith("<"):
                if last_asst is not None and when is not None and 0 < when - last_asst <= 3600:
                    timing.turn_gaps.append(when - last_asst)
                prev_tool_msg = None


def _codex(path: Path, timing: Timing) -> Iterator[Call]:
    names: dict[str, str] = {}
    prev: float | None = None
    last_asst: float | None = None
    for r in _jsonl(path):
        p = r.get("payload") or {}
        kind = p.get("type")
        when = _ts(r["timestamp"]) if r.get("timestamp") else None
        if kind in ("function_call", "custom_tool_call"):
            names[p["call_id"]] = p.get("name", "")
            if when is not None:
                if prev is not None and 0.5 < when - prev <= 600:
                    timing.step_gaps.append(when - prev)
                prev, last_asst = when, when
        elif kind in ("function_call_output", "custom_tool_call_output") and p.get("call_id") in names:
            out = str(p.get("output", ""))
            m = _REDACTED.match(out)
            yield Call("codex", category(names.pop(p["call_id"])), int(m.group(1)) if m else len(out))
        elif r.get("type") == "event_msg" and kind == "agent_message":
            m = _REDACTED.match(str(p.get("message", "")))
            if m:
                timing.text_chars.append(int(m.group(1)))
            last_asst = when
        elif r.get("type") == "event_msg" and kind == "user_message":
            if last_asst is not None and when is not None and 0 < when - last_asst <= 3600:
                timing.turn_gaps.append(when - last_asst)
            prev = None


def _openhands(events: list[dict]) -> Iterator[Call]:
    actions = {str(e.get("id")): e for e in events if "action" in e}
    for e in events:
        obs = e.get("observation")
        if obs in ("run", "read", "edit", "think", "browse", "run_ipython"):
            args = (actions.get(str(e.get("cause"))) or {}).get("args") or {}
            tool = "create" if obs == "edit" and args.get("command") == "create" else obs
            yield Call("openhands", category(tool), _text_len(e.get("content")))


def _swe_agent(path: Path) -> Iterator[Call]:
    for step in json.loads(path.read_text(encoding="utf-8")).get("trajectory", []):
        word = (step.get("action") or "").strip().split(" ", 1)[0].split("\n", 1)[0]
        tool = word if word in _TOOL_CATEGORY or word in ("submit",) else "run"
        yield Call("swe-agent", category(tool) if tool != "submit" else "other",
                   len(step.get("observation") or ""))


def _mini_swe(path: Path) -> Iterator[Call]:
    msgs = json.loads(path.read_text(encoding="utf-8"))
    for prev, m in zip(msgs, msgs[1:], strict=False):
        if prev["role"] == "assistant" and m["role"] == "user":
            yield Call("mini-swe-agent", "bash", len(m["content"]))


def _cline(path: Path) -> Iterator[Call]:
    names: dict[str, str] = {}
    for m in json.loads(path.read_text(encoding="utf-8")).get("messages", []):
        for b in m.get("content") or []:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "tool_use":
                names[b["id"]] = b["name"]
            elif b.get("type") == "tool_result" and b.get("tool_use_id") in names:
                c = b.get("content")
                size = len(c) if isinstance(c, str) else len(json.dumps(c))
                yield Call("cline", category(names[b["tool_use_id"]]), size)


def observations(folder: Path) -> tuple[list[Call], Timing]:
    """Every real tool call under ``folder`` (the shared traces), and the timing samples."""
    timing = Timing()
    calls: list[Call] = []
    # Sessions as the agents write them and as the Entire CLI keeps them in git
    # (<2hex>/<10hex>/<n>/full.jsonl, or raw_transcript): every rollout and transcript in the folder.
    for p in sorted(q for q in folder.glob("claude-code__*/**/*") if q.name.endswith(".jsonl")
                    or q.name == "raw_transcript"):
        if not p.name.startswith("agent-acompact"):
            calls += _claude_code(p, timing)
    for p in sorted(folder.glob("codex__*/**/*.jsonl")):
        calls += _codex(p, timing)
    for p in sorted(folder.glob("openhands__*/*.json*")):
        if p.suffix == ".jsonl":
            for r in _jsonl(p):
                calls += _openhands(r.get("history") or [])
        else:
            calls += _openhands(json.loads(p.read_text(encoding="utf-8")))
    for p in sorted(folder.glob("swe-agent__*/*.traj")):
        calls += _swe_agent(p)
    for p in sorted(folder.glob("mini-swe-agent__*/*.traj.json")):
        calls += _mini_swe(p)
    for p in sorted(folder.glob("cline-sdk__*/*.messages.json")):
        calls += _cline(p)
    return calls, timing


def fit(folder: str | Path) -> Calibration:
    """Re-derive the constants from the real traces (what FITTED holds)."""
    calls, timing = observations(Path(folder))
    by_cat = {c: [x.chars for x in calls if x.category == c] for c in CATEGORIES}
    total = len(calls)
    per_message = list(timing.calls_per_message.values())
    return Calibration(
        output_chars={c: LogNormal.fit(v) for c, v in by_cat.items()},
        tool_mix={c: round(len(v) / total, 3) for c, v in by_cat.items()},
        calls={c: len(v) for c, v in by_cat.items()},
        step_seconds=LogNormal.fit(list(timing.step_gaps)),
        turn_seconds=LogNormal.fit(list(timing.turn_gaps)),
        assistant_text_chars=LogNormal.fit([float(x) for x in timing.text_chars]),
        parallel_share=round(sum(n > 1 for n in per_message) / len(per_message), 3),
    )


def markdown(cal: Calibration) -> str:
    """The fit as a Markdown table (for the README and this module's docstring)."""
    rows = ["| category | calls | share | median chars | sigma | p90 chars |", "|---|---:|---:|---:|---:|---:|"]
    for c in CATEGORIES:
        d = cal.output_chars[c]
        rows.append(f"| {c} | {cal.calls[c]:,} | {cal.tool_mix[c]:.3f} | {d.median:,.0f} | {d.sigma:.3f} "
                    f"| {d.quantile(0.9):,.0f} |")
    return "\n".join(rows)


if __name__ == "__main__":
    import sys

    fitted = fit(sys.argv[1] if len(sys.argv) > 1 else "../shared/traces")
    print(fitted)
    print(markdown(fitted))
