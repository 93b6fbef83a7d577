"""Named synthetic scenarios: the session shapes compaction strategies are compared on.

A scenario is a frozen spec (HELM style, spec/style.md §2.6): a size in tokens, how many human
turns, how the tool mix and output sizes depart from the calibrated real ones
(traces/calibration.py), how often files are read again, and where needles are planted. Sizes
from 10K to 2M tokens are one parameter away: ``generate("long@tokens=300000")`` or
``dataclasses.replace(SCENARIOS["long"], tokens=...)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from traces.synthetic_needles import NeedlePlan

_ALL_KINDS = (
    NeedlePlan("constraint", 0.03), NeedlePlan("fact", 0.08), NeedlePlan("fact", 0.2),
    NeedlePlan("error", 0.3), NeedlePlan("artifact", 0.42), NeedlePlan("decision", 0.55),
    NeedlePlan("update", 0.7, old_at=0.15), NeedlePlan("constraint", 0.8), NeedlePlan("error", 0.9),
    NeedlePlan("decision", 0.95), NeedlePlan("control", 0.0),
)

_RULE_NEEDLES = (NeedlePlan("constraint", 0.05), NeedlePlan("fact", 0.2), NeedlePlan("error", 0.45),
                 NeedlePlan("decision", 0.75), NeedlePlan("control", 0.0))
"""The facts planted beside the rules of the ``instructions`` scenarios (a user constraint among them)."""


@dataclass(frozen=True)
class ScenarioSpec:
    name: str
    description: str
    tokens: int
    """Target size: the sum of every message's tokens (cl100k; generated traces land ~0-25% above it:
    the last step's outputs overshoot, most in ``short`` and ``logs``, whose outputs are large for their size)."""
    turns: int = 4
    """Human turns (more are added where a needle needs a human message)."""
    mix: Mapping[str, float] = field(default_factory=dict)
    """Tool-mix weights that replace the calibrated ones, per category (others keep theirs)."""
    size_scale: Mapping[str, float] = field(default_factory=dict)
    """Multiplies a category's calibrated median output size."""
    max_output_chars: int = 120_000
    """Cap on one tool output (agents truncate long outputs; Claude Code's Bash keeps 30K chars)."""
    reread: float = 0.15
    """Chance that a read targets a file already read (duplicate reads)."""
    failure_at_tail: bool = False
    """Test runs end with their failure summary (log-heavy debugging)."""
    direction_changes: bool = False
    """The user changes direction between turns (multi-task)."""
    needles: tuple[NeedlePlan, ...] = _ALL_KINDS
    instructions: int = 0
    """Rules in a project instruction file loaded at the start (0: none); traces/synthetic_rules.py."""
    skills: tuple[float, ...] = ()
    """Where skills are loaded, as fractions of the session's tokens (one skill each)."""
    rules_per_skill: int = 3
    """Rules each skill carries."""
    layout: str = "claude-code"
    """Where the instruction file and skills go: ``claude-code``, ``codex`` or ``opencode``
    (traces/synthetic_rules.py LAYOUTS)."""
    instruction_chars: int = 0
    """Pad the instruction file to this many characters (0: rules only, ~0.5K chars): a heavy CLAUDE.md /
    AGENTS.md, the fixed overhead that fills the window before the first message (copilot-cli#3539)."""
    model: str = ""
    """The model every call records (each assistant message's ``meta["model"]`` and the trace's model), so
    ``--model recorded`` (the default) windows and prices the session as that model (bench/cost/windows.py:
    ``claude-sonnet-4-5[1m]`` is the 1M window); empty: none recorded, the run's default model."""
    switch_model: str = ""
    """The model the calls record from ``switch_at`` on (empty: no switch): a mid-session model switch,
    which the replay follows call by call (bench/replay/loop.py, ``recorded_models``)."""
    switch_at: float = 0.5
    """Where the switch happens, as a fraction of the session's tokens."""


SCENARIOS: dict[str, ScenarioSpec] = {s.name: s for s in (
    ScenarioSpec("short", "bugfix: a short session that never needs compaction", tokens=22_000, turns=2,
                 max_output_chars=16_000,
                 needles=(NeedlePlan("constraint", 0.05), NeedlePlan("fact", 0.25), NeedlePlan("error", 0.45),
                          NeedlePlan("artifact", 0.7), NeedlePlan("control", 0.0))),
    ScenarioSpec("long", "long refactor: ~850K tokens over a few hundred calls, crosses a 200K window "
                 "several times", tokens=800_000, turns=8, size_scale={"read": 2.5, "bash": 2.5},
                 reread=0.25),
    ScenarioSpec("logs", "log-heavy debugging: huge test outputs with the failure at the tail", tokens=450_000,
                 turns=4, mix={"bash": 0.8}, size_scale={"bash": 6.0}, max_output_chars=240_000,
                 failure_at_tail=True),
    ScenarioSpec("reads", "read-heavy exploration: many file reads, the same files read again", tokens=350_000,
                 turns=5, mix={"read": 0.55, "search": 0.12, "bash": 0.2}, size_scale={"read": 1.5}, reread=0.45),
    ScenarioSpec("multitask", "multi-task: the user changes direction; a later value supersedes an earlier one",
                 tokens=300_000, turns=7, direction_changes=True,
                 needles=(*_ALL_KINDS, NeedlePlan("update", 0.85, old_at=0.35))),
    ScenarioSpec("tiny", "a 10K-token session, the smallest size", tokens=10_000, turns=1, max_output_chars=6_000,
                 needles=(NeedlePlan("fact", 0.3), NeedlePlan("error", 0.6), NeedlePlan("control", 0.0))),
    ScenarioSpec("instructions", "rules that must survive: a CLAUDE.md of five rules in the first turn's reminder "
                 "and two skills loaded mid-session (three rules each), Claude Code's layout", tokens=400_000,
                 turns=5, instructions=5, skills=(0.3, 0.6), needles=_RULE_NEEDLES),
    ScenarioSpec("instructions-codex", "`instructions` laid out as Codex does: the AGENTS.md user message, skills "
                 "as injected user messages", tokens=400_000, turns=5, instructions=5, skills=(0.3, 0.6),
                 needles=_RULE_NEEDLES, layout="codex"),
    ScenarioSpec("instructions-opencode", "`instructions` laid out as OpenCode does: the AGENTS.md text in the "
                 "system prompt, skills as `skill` tool results", tokens=400_000, turns=5, instructions=5,
                 skills=(0.3, 0.6), needles=_RULE_NEEDLES, layout="opencode"),
    ScenarioSpec("huge", "a 2M-token marathon (opt-in: slow to replay)", tokens=1_900_000, turns=16,
                 size_scale={"read": 2.5, "bash": 2.5}, reread=0.25),
    # -- the failures users filed (bench/scoring/detectors.py), one scenario each; opt-in (FAILURES) --
    ScenarioSpec("window-1m", "`long` on the 1M window (claude-sonnet-4-5[1m], the 1M beta): a trigger set as a "
                 "share of the window first compacts above 800K (late_trigger, cline#14329)", tokens=1_250_000,
                 turns=8, size_scale={"read": 2.5, "bash": 2.5}, reread=0.25, model="claude-sonnet-4-5[1m]"),
    ScenarioSpec("heavy-instructions", "a 140K-token CLAUDE.md on a 200K window, two skills loaded mid-session: "
                 "the fixed part fills the window before the first message (overhead_fills_window, "
                 "copilot-cli#3539), and an agent that keeps or re-injects it compacts again and again "
                 "(ineffective_compactions, runaway_compactions: copilot-cli#3621, claude-code#22195)",
                 tokens=400_000, turns=5, instructions=5, skills=(0.3, 0.6), needles=_RULE_NEEDLES,
                 instruction_chars=600_000, model="claude-sonnet-4-5", layout="opencode"),
    ScenarioSpec("model-switch", "a session on gpt-4.1 (1M window) switched to gpt-5 (272K input) 75% of the way "
                 "in, its context above the new window's trigger: the strategy compacts on the switch "
                 "(model_switch_compactions, codex#33833)", tokens=450_000, turns=5, model="gpt-4.1",
                 switch_model="gpt-5", switch_at=0.75),
)}

FAILURES: tuple[str, ...] = ("window-1m", "heavy-instructions", "model-switch")
"""Scenarios built to show the failure detectors fire (bench/scoring/detectors.py); opt-in:
``--traces synthetic:window-1m synthetic:heavy-instructions synthetic:model-switch``."""

DEFAULT_BENCH: tuple[str, ...] = ("short", "long", "logs", "reads", "multitask", "instructions")
"""What ``make bench`` runs; ``huge``, ``tiny``, the other layouts of ``instructions`` and the failure
scenarios (``FAILURES``) are opt-in.

``instructions`` is in it so that every ``make bench`` measures which strategies keep the rules of an
instruction file and of skills loaded mid-session (the ``instructions`` and ``skills`` columns, and the
default objective's ``instructions>=0.9``): 400K of the bench's 2.3M tokens, about +21% over the five
rule-free scenarios. One layout is enough there: Claude Code's puts the rules in an ordinary user turn
and an injected user message, which every strategy family can keep or cut; the Codex and OpenCode
layouts stay opt-in (``--traces synthetic:instructions-codex``)."""


def resolve(scenario: str | ScenarioSpec) -> ScenarioSpec:
    """A spec from a name, or ``name@key=value,key=value`` overriding numeric/bool fields."""
    if isinstance(scenario, ScenarioSpec):
        return scenario
    name, _, params = scenario.partition("@")
    try:
        spec = SCENARIOS[name]
    except KeyError:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}") from None
    if not params:
        return spec
    types = {f.name: type(getattr(spec, f.name)) for f in fields(spec)}
    changes: dict[str, object] = {}
    for item in params.split(","):
        key, _, value = item.partition("=")
        if types.get(key) not in (int, float, bool):
            raise ValueError(f"scenario parameter {key!r} cannot be set from text; settable: "
                             f"{', '.join(k for k, t in types.items() if t in (int, float, bool))}")
        changes[key] = value.lower() in ("1", "true", "yes") if types[key] is bool else types[key](float(value))
    return replace(spec, name=f"{name}@{params}", **changes)
