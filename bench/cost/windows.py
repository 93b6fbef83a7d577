"""The context window a recorded session ran with: what the session shows, then the agent's rules.

The price table gives a model's *standard* window (bench.cost.pricing). A real session may have run
with another one, and windowing it wrong charges ``none`` with overflows on prompts the agent
really sent, and makes a strategy compact where the agent never did. So, per model the session
recorded, in this order:

1. **The agent's documented rule for its version** (``AGENT_RULES``): e.g. Claude Code runs
   Opus 4.7 with its native 1M window from 2.1.117 on. Rules cite the changelog entry they follow.
2. **What the recording says**: a ``[1m]`` model id, or ``meta["window_hint"] == "1m"`` that an
   importer or the Entire CLI's metadata set (``claude-opus-4-6[1m]``).
3. **What the session proves**: a recorded call whose prompt plus output exceeds the window so far
   could not have been sent under it, so the window is at least that call. It is lifted to the
   model's long-context window (the ``[1m]`` profile) when that covers the call, else to the call
   itself (a lower bound, said as such).

Some agents take a model's limits from the *provider* that served it, not from the model's maker:
OpenCode reads models.dev per provider (``github-copilot/claude-sonnet-4.6`` has a 128K input limit
where Anthropic's model has 1M), and models.dev changed those limits over time, so such a rule names
the provider (``trace.meta["provider"]`` or a call's ``meta["provider"]``, as the importer records
them), the dates the limits held (the session's first timestamp) and the input / output limits too.

Codex records the effective window it compacts against on each call (``model_context_window``);
bench.replay.loop keeps that as the input limit, and rule 3 lifts it the same way.

Every resolved profile says where its window came from (``ModelProfile.window_source``), and the
run's rows carry it, so a user can see which sessions ran on which evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from dataclasses import replace as dc_replace

from bench.cost.pricing import ModelProfile, UnknownModelError, profile, recorded_id
from traces.model import Trace

ONE_M = "[1m]"
LONG_CONTEXT = 1_000_000


@dataclass(frozen=True)
class Rule:
    """Sessions of ``agent`` recorded at a version in [since, until), on a model whose id starts
    with one of ``models``, ran with ``window`` tokens (``context_tier`` when the agent records one).

    A provider rule (``providers``) also names the input and output limits the agent used
    (``max_input``, ``max_output``: None keeps the price table's) and the dates they held
    ([``from_date``, ``to_date``) as epoch seconds, compared with the session's first timestamp; a
    session without timestamps matches only the open-ended rule)."""

    agent: str
    models: tuple[str, ...]
    window: int
    since: tuple[int, ...] | None = None
    until: tuple[int, ...] | None = None
    source: str = ""
    context_tier: str | None = None
    providers: tuple[str, ...] = ()
    max_input: int | None = None
    max_output: int | None = None
    from_date: float | None = None
    to_date: float | None = None
    exact: bool = False
    """``models`` are whole ids, not prefixes (``gpt-5.4`` must not match ``gpt-5.4-mini``)."""

    def covers(self, agent: str, model_id: str, version: tuple[int, ...] | None, tier: str | None,
               provider: str | None = None, when: float | None = None) -> bool:
        if agent != self.agent or not (model_id in self.models if self.exact else model_id.startswith(self.models)):
            return False
        if self.context_tier is not None and tier != self.context_tier:
            return False
        if self.providers and (provider or "").lower() not in self.providers:
            return False
        if self.from_date is not None or self.to_date is not None:
            if when is None:
                if self.to_date is not None:
                    return False
            elif (self.from_date is not None and when < self.from_date) or (
                    self.to_date is not None and when >= self.to_date):
                return False
        if version is None:  # an unversioned session runs as the newest generation
            return self.until is None
        return (self.since is None or version >= self.since) and (self.until is None or version < self.until)


def _utc(text: str) -> float:
    """An ISO-8601 UTC instant as epoch seconds (a models.dev commit's time)."""
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


_CC = "anthropics/claude-code CHANGELOG.md @5cfc0a19"
_COP = "github/copilot-cli changelog.md @9532bdac"
DEFAULT_TIER = "default"
"""Copilot CLI's context tier when the user picked none (``contextTier`` null or absent): the tier
named "default" (changelog 1.0.52 L992: "default ~200K vs 1M tokens")."""
_MODELS_DEV: tuple[tuple[str, str, int, int | None, int, str, str | None, str | None], ...] = (
    # provider, model, context, input, output, models.dev commit, from (UTC), until (UTC): the file
    # providers/<provider>/models/<model>.toml as each commit left it (git history of models.dev).
    ("github-copilot", "claude-sonnet-4.6", 200_000, None, 64_000, "dc1178132", "2026-02-17T23:14:28Z",
     "2026-02-18T00:23:01Z"),
    ("github-copilot", "claude-sonnet-4.6", 128_000, None, 32_000, "c94d025aa", "2026-02-18T00:23:01Z",
     "2026-03-20T02:54:42Z"),
    ("github-copilot", "claude-sonnet-4.6", 200_000, 128_000, 32_000, "cda892e0d", "2026-03-20T02:54:42Z",
     "2026-05-28T22:56:19Z"),
    ("github-copilot", "claude-sonnet-4.6", 200_000, 168_000, 32_000, "6aa32ba56", "2026-05-28T22:56:19Z", None),
    ("github-copilot", "gpt-5.4", 400_000, None, 128_000, "7c68dab3b", "2026-03-06T04:10:42Z", "2026-03-11T20:23:44Z"),
    ("github-copilot", "gpt-5.4", 400_000, 272_000, 128_000, "926585285", "2026-03-11T20:23:44Z", None),
)
"""models.dev limits of the provider/model pairs recorded sessions ran (anomalyco/models.dev history,
read at f3fc6922; checked by a real session: OpenCode 1.4.3 on github-copilot/claude-sonnet-4.6,
2026-04-13, compacted at a total of 112,579 after 105,395 did not, around 128,000 − 20,000)."""
AGENT_RULES: tuple[Rule, ...] = (
    Rule("claude-code", ("claude-opus-4-7",), 200_000, (2, 1, 111), (2, 1, 117),
         f"{_CC} 2.1.117 (L2597): before it Claude Code computed Opus 4.7 sessions against 200K"),
    Rule("claude-code", ("claude-opus-4-7",), LONG_CONTEXT, (2, 1, 117), None,
         f"{_CC} 2.1.117 (L2597): Opus 4.7 runs with its native 1M window"),
    Rule("claude-code", ("claude-fable-5",), LONG_CONTEXT, (2, 1, 170), None,
         f"{_CC} 2.1.170 (L1463): Fable 5 with 1M by default"),
    Rule("claude-code", ("claude-sonnet-5",), LONG_CONTEXT, (2, 1, 197), None,
         f"{_CC} 2.1.197 (L1121): Sonnet 5, 1M native"),
    Rule("claude-code", ("claude-opus-5",), LONG_CONTEXT, (2, 1, 219), None,
         f"{_CC} 2.1.219 (L520): Opus 5 with 1M context"),
    Rule("copilot-cli", ("claude-",), 200_000, (1, 0, 52), None,
         f"{_COP} 1.0.52 (L992): the default context tier (~200K) governs compaction; a recorded 1.0.74 "
         "compaction_start total of 160,095 is 80% of 200K: inferred, medium confidence",
         context_tier=DEFAULT_TIER),
    Rule("copilot-cli", ("claude-",), LONG_CONTEXT, (1, 0, 52), None,
         f"{_COP} 1.0.52 (L992): the long_context tier is the 1M window: medium confidence",
         context_tier="long_context"),
    *(Rule("opencode", (model,), window, None, None,
           f"OpenCode takes limits per provider from models.dev: {provider}/{model} at "
           f"anomalyco/models.dev@{commit} (context {window:,}, input "
           f"{'none' if max_input is None else f'{max_input:,}'}, output {max_output:,})",
           providers=(provider,), max_input=max_input, max_output=max_output,
           from_date=None if start is None else _utc(start), to_date=None if end is None else _utc(end), exact=True)
      for provider, model, window, max_input, max_output, commit, start, end in _MODELS_DEV),
)
"""Agents' documented windows per model and version, first match wins (a model no rule names keeps
the price table's standard window). Not visible in a transcript, so not modelled: Opus 4.6 at 1M by
default for Max/Team/Enterprise plans from 2.1.75 (L3507: plan-dependent; a session that used it
shows it by a prompt over 200K or a ``[1m]`` in its metadata), CLAUDE_CODE_DISABLE_1M_CONTEXT (2.1.50,
L3919; all native-1M models from 2.1.223, L443) and the 400K/500K autocompact windows some accounts
report (anthropics/claude-code#43989, #72600): a session under them simply never reaches 1M.

Copilot CLI: the tier rules name Claude models only, the ones the recorded session and the 1.0.52
entry ("default ~200K vs 1M") speak for; a GPT model's default tier is not documented, so it keeps
the table's window. The tier is in the session log from 1.0.56 (L921: "persists durably in session
events"); a 1.0.52 – 1.0.55 session, or one whose user never picked a tier, runs at the default
tier. Sub-agents record no tier: the default. Per-model thresholds (50% with one GPT model,
github/copilot-cli#4571, 1.0.80) are unexplained and not modelled. OpenCode: models.dev commits
are dated by their author time; OpenCode caches models.dev, so a session within hours of a change
may have run with the limits before it."""


@dataclass(frozen=True)
class SessionWindows:
    """How one session's recorded models are windowed (``apply`` to each call's profile)."""

    long: frozenset[str] = frozenset()
    """Models the session ran with the long-context window (by rule or by what it recorded)."""
    why: Mapping[str, str] | None = None
    """Model id → where its window came from (a rule or the recording)."""
    floor: Mapping[str, tuple[int, int]] | None = None
    """Model id → (tokens, call) of the largest recorded prompt plus output: the window is at least that."""
    ruled: Mapping[str, int] | None = None
    """Model id → the window an agent rule sets below the long context (e.g. 200K)."""
    limits: Mapping[str, tuple[int | None, int | None]] | None = None
    """Model id → (max input, max output) a provider rule sets (None: the price table's)."""

    def apply(self, model: ModelProfile, lookup: Callable[[str], ModelProfile] = profile) -> ModelProfile:
        """``model`` windowed as this session ran it."""
        key = _base(model.id)
        why = (self.why or {}).get(key)
        ruled = (self.ruled or {}).get(key)
        if key in self.long and model.context_window < LONG_CONTEXT:
            model = dc_replace(_long(model, lookup), window_source=why or "the session")
        elif ruled is not None and ruled != model.context_window:
            model = dc_replace(model, context_window=ruled, window_source=why or "")
        limits = (self.limits or {}).get(key)
        if limits is not None:  # a provider's limits replace the table's: input None means none
            max_input, max_output = limits
            model = dc_replace(model, max_input=max_input, max_output=max_output or model.max_output,
                               window_source=why or model.window_source)
        seen = (self.floor or {}).get(key)
        if seen is not None:
            need, call = seen
            limit = model.max_input if model.max_input is not None else model.context_window
            if need > limit:
                longer = _long(model, lookup)
                if longer.context_window >= need and model.context_window < longer.context_window:
                    model = dc_replace(longer, max_input=None,
                                       window_source=f"the session: call {call} sent {need:,} tokens, over "
                                                     f"{limit:,}; the model's long-context window")
                else:
                    model = dc_replace(model, context_window=max(model.context_window, need), max_input=None,
                                       window_source=f"the session: call {call} sent {need:,} tokens, over "
                                                     f"{limit:,} (a lower bound)")
        return model


def _base(model_id: str) -> str:
    return model_id.removesuffix(ONE_M)


def _long(model: ModelProfile, lookup: Callable[[str], ModelProfile]) -> ModelProfile:
    """The model's long-context profile (its ``[1m]`` entry, with that tier's prices), else the
    same prices at 1M."""
    try:
        longer = lookup(_base(model.id) + ONE_M)
    except (UnknownModelError, KeyError):
        longer = None
    if longer is None or longer.context_window <= model.context_window:
        return dc_replace(model, context_window=max(model.context_window, LONG_CONTEXT))
    return dc_replace(longer, id=model.id)


_LAST: list[tuple[Trace, SessionWindows]] = []
"""The windows of the latest trace asked about (one slot): every strategy's replay of a trace, and the
runner's row, ask for the same trace object in turn, so its messages are walked once, not per task."""


def session_windows(trace: Trace) -> SessionWindows:
    """The long-window models of ``trace``, the rules that window the others, and the largest call
    each model was recorded sending (one walk over the messages, kept for the trace object)."""
    if _LAST and _LAST[0][0] is trace:
        return _LAST[0][1]
    windows = _session_windows(trace)
    _LAST[:] = [(trace, windows)]
    return windows


def _session_windows(trace: Trace) -> SessionWindows:
    from collections import Counter

    from traces.model import parse_version

    version = trace.meta.get("version") or trace.meta.get("cli_version")
    parsed = parse_version(version) if isinstance(version, str) else None
    hinted = trace.meta.get("window_hint") == "1m"
    evidence = trace.meta.get("window_evidence")
    main = recorded_id(trace.model)
    floor: dict[str, tuple[int, int]] = {}
    served: dict[str, Counter[str]] = {}  # model → the providers its calls record
    named = {_base(main)} if main else set()
    when = None
    call = 0
    for m in trace.messages:
        if when is None and m.timestamp is not None:
            when = m.timestamp
        if m.role != "assistant":
            continue
        own = recorded_id(m.meta.get("model"))
        model_id = own or main
        if own:
            named.add(_base(own))
            provider = m.meta.get("provider")
            if isinstance(provider, str):
                served.setdefault(_base(own), Counter())[provider] += 1
        if model_id and m.usage is not None:
            need = m.usage.prompt_tokens + m.usage.output_tokens
            if need > floor.get(_base(model_id), (0, 0))[0]:
                floor[_base(model_id)] = (need, call)
        call += 1
    providers = {k: c.most_common(1)[0][0] for k, c in served.items()}
    default = trace.meta.get("provider")
    if isinstance(default, str) and main and _base(main) not in providers:
        providers[_base(main)] = default  # the session's provider, for a main model no call names one
    tier = trace.meta.get("context_tier")
    tier = tier if isinstance(tier, str) else None
    if trace.agent == "copilot-cli" and tier is None:
        tier = DEFAULT_TIER  # no tier chosen (or none recorded): the CLI's default one
    long: set[str] = set()
    why: dict[str, str] = {}
    ruled: dict[str, int] = {}
    limits: dict[str, tuple[int | None, int | None]] = {}
    for model_id in named:
        if model_id + ONE_M in (trace.model or "") or hinted and _same_family(model_id, trace):
            long.add(model_id)
            why[model_id] = f"the recording: {evidence}" if evidence else f"the recording: {trace.model}"
            continue
        rule = next((r for r in AGENT_RULES if r.covers(trace.agent, model_id, parsed, tier,
                                                         providers.get(model_id), when)), None)
        if rule is not None:
            why[model_id] = rule.source
            if rule.providers:
                ruled[model_id] = rule.window
                limits[model_id] = (rule.max_input, rule.max_output)
            elif rule.window >= LONG_CONTEXT:
                long.add(model_id)
            else:
                ruled[model_id] = rule.window
    return SessionWindows(long=frozenset(long), why=why, floor=floor, ruled=ruled, limits=limits)


def _same_family(model_id: str, trace: Trace) -> bool:
    """A window hint names the session's main model; a side call on another family (Claude Code's
    Haiku title calls) keeps its own window."""
    main = _base(recorded_id(trace.model) or "")
    return not main or model_id == main or model_id.split("-")[:2] == main.split("-")[:2]

