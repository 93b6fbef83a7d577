"""Behaviour probes after each compaction (issue 27 items 2 and 3), with ``--probe anthropic``.

Needle retention says whether a fact is still *in* the context; these ask whether the agent would still
*act* as it did. After every compaction a real model is asked, through the official SDK:

- **next action**: "what is your next step?" once on the compacted context and once on the full
  (never compacted) context up to the same call. Two steps agree when they name the same tool and
  the same target (file path, by its last two parts, or command). The step the recorded session
  really took is a third reference (Slipstream validates compaction against forward intent this way).
- **constraint choice** (forced choice): for each ``only`` / ``never`` / ``always`` rule the user
  stated, "the next step would be A or B", one option breaking the rule and one keeping it. The
  rule is not restated in the question: the model has to find it in the context. Asked in four arms,
  COMPINT's four cases (Wang et al., "Lost in Compaction", arXiv 2608.11242; the suite's runner
  ZhiqiEliWang/compaction-integrity src/compaction_integrity/scripts/evaluation.py, module docstring,
  commit 5485922), each with the same A/B order per rule so the answers compare:

  - ``obeyed``: the compacted context (COMPINT case 3, compacted_with_sssc);
  - ``obeyed_full``: the full context, the no-compaction baseline (case 1, full_with_sssc);
  - ``obeyed_unstated``: the full context with the rule sentences cut out, the floor: what the
    model picks with no rule at all (case 2, full_without_sssc);
  - ``obeyed_restated``: the compacted context with the user's rule sentences put back in front of
    the question, the upper bound (case 4, compacted_post_sssc: the rule re-presented after
    compaction, in the probe's own user turn).

  The score is COMPINT's effect retention (bench.scoring.stats.effect_retention): the compacted arm's
  gain over the floor as a share of the upper bound's gain, 1 lossless, 0 all lost.
- **retention judge**: is each rule still stated in the compacted context? Decided twice, by the
  exact-presence probe (the needle's text verbatim, as ``constraint_retention``) and by the model
  asked yes or no; their agreement (share and Cohen's kappa, bench.scoring.stats.agreement) is the
  judge agreement COMPINT reports for its retention judge (a second judge beside the first,
  analyze/judge_family_bias.py at the same commit).

Every answer is cached on disk by the hash of its request body (a rerun, or another strategy whose
compacted context is identical, costs nothing; the full-context request is the same for every
strategy). A prober stops asking once its spend reaches ``max_cost`` (its rows then say not asked),
counts the requests it paid for, and the requests the cap stopped (``skipped``). Requests go out in
order of use: next action on both contexts, the compacted and full choices, the upper bound, the
floor, then the judge, so a tight budget loses the later arms first.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.scoring.matching import normalize, path_variants, present
from bench.summarizers import SummarizerError
from bench.summarizers.anthropic import (
    DEFAULT_MODEL,
    CachedMessages,
    default_cache_dir,
    response_text,
    to_messages_api,
)
from bench.tokens.counter import TokenCounter, render
from strategies._files import file_path
from traces.model import Message, Needle, Text, ToolUse

NEXT_PROMPT = ("Stop here and do not call tools. In one line, name the single next step you would take to continue "
               "this work, in the form `TOOL TARGET`: TOOL is the name of the tool you would call and TARGET is the "
               "file path it acts on or the shell command it runs. Write `none` if there is nothing left to do.")
CHOICE_PROMPT = ("Do not call tools. For each numbered situation below, pick the next step you would take given "
                 "everything the user said in the conversation above. Answer one line each, `N. A` or `N. B`.")
RESTATE_PROMPT = "Earlier in this session the user said:"
"""The upper-bound arm: the user's own rule sentences, put back in front of the same choices."""
JUDGE_PROMPT = ("Do not call tools. For each numbered rule below, say whether the conversation above states it "
                "(in any words). Answer one line each, `N. yes` or `N. no`.")
RULE = re.compile(r"\b(never|always|only)\b\s+(.{3,200})", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[,;:]\s|\.(?:\s|$)|\s[-–—]\s")
"""Where the rule's action ends: a clause break (a path's dots and slashes stay inside)."""
_ACTION = re.compile(r"^\s*`?\s*([A-Za-z_][\w.\-]*)\s*[: ]\s*(.+?)\s*`?\s*$")
_CHOICE = re.compile(r"^\s*\**\s*(\d+)\s*[.):]\s*\**\s*\(?([AaBb])\b")
_YES_NO = re.compile(r"^\s*\**\s*(\d+)\s*[.):]\s*\**\s*(yes|no)\b", re.IGNORECASE)
COMMAND_KEYS = ("command", "cmd")
HEADROOM = 2_000
NEXT_TOKENS = 100
PER_CHOICE_TOKENS = 10


@dataclass(frozen=True)
class Action:
    """A next step: the tool and what it acts on (a file path or a command)."""

    tool: str
    target: str


@dataclass(frozen=True)
class Rule:
    """An ``only`` / ``never`` / ``always`` user statement, and the two steps the forced choice offers."""

    needle: str
    polarity: str
    action: str
    statement: str = ""
    """The user's sentence that set the rule: restated by the upper-bound arm, cut out by the floor."""

    def options(self) -> tuple[str, str]:
        """(the step that breaks the rule, the step that keeps it). Both sides are shown on the compacted
        and on the full context alike, so a wording that leans one way shifts both: compare the two."""
        a = self.action.rstrip(".!?")
        if self.polarity == "never":
            return a, "continue the task without that step"
        if self.polarity == "always":
            return "skip that this time and go on", a
        return "widen the work beyond that", f"only {a}"

    def broken_first(self) -> bool:
        """Which option is shown as A: fixed per rule (by hash), so half the rules put the breach first."""
        return hashlib.sha256(self.needle.encode()).digest()[0] % 2 == 0


def rule_of(needle: Needle) -> Rule | None:
    """The rule in a constraint needle's sentence, when it says only, never or always."""
    if needle.kind != "constraint" or (m := RULE.search(needle.text or needle.answer)) is None:
        return None
    action = _CLAUSE_END.split(m.group(2).strip(), maxsplit=1)[0].strip()
    return Rule(needle.id, m.group(1).lower(), action, (needle.text or needle.answer).strip()) \
        if len(action.split()) >= 1 else None


def action_of(use: ToolUse) -> Action:
    target = file_path(use) or next((str(use.input[k]) for k in COMMAND_KEYS if isinstance(use.input.get(k), str)), "")
    return Action(use.name, target)


def recorded_next_action(messages: Sequence[Message], cut: int) -> Action | None:
    """The first tool call the recorded session made at or after message ``cut``."""
    for m in messages[cut:]:
        if m.role == "assistant":
            for b in m.blocks:
                if isinstance(b, ToolUse):
                    return action_of(b)
    return None


def parse_action(text: str) -> Action | None:
    """``TOOL TARGET`` from the model's first non-empty line (None for ``none`` or no such line)."""
    for line in text.splitlines():
        line = line.replace("*", "").strip()
        if not line:
            continue
        if line.lower().startswith("none"):
            return None
        m = _ACTION.match(line)
        return Action(m.group(1), m.group(2).strip("`")) if m else None
    return None


def _tool(name: str) -> str:
    return re.sub(r"[^a-z]", "", name.lower())


def _target(text: str) -> str:
    return normalize(text).strip("`'\"")


def agree(a: Action | None, b: Action | None) -> bool | None:
    """Same tool and same target (a path also by its last two parts); None when either is missing."""
    if a is None or b is None:
        return None
    if _tool(a.tool) != _tool(b.tool):
        return False
    ta, tb = _target(a.target), _target(b.target)
    if ta == tb:
        return True
    if "/" in ta or "/" in tb:
        va = {normalize(v) for v in path_variants(a.target)}
        return bool(va & {normalize(v) for v in path_variants(b.target)})
    return False


def parse_choices(text: str, rules: Sequence[Rule]) -> dict[str, bool | None]:
    """``N. A`` lines → whether the model kept each rule (None when the number is missing)."""
    picked: dict[int, str] = {}
    for line in text.splitlines():
        if (m := _CHOICE.match(line)) is not None:
            picked.setdefault(int(m.group(1)), m.group(2).upper())
    out: dict[str, bool | None] = {}
    for i, r in enumerate(rules, 1):
        p = picked.get(i)
        out[r.needle] = None if p is None else (p == "B") == r.broken_first()
    return out


def parse_judgements(text: str, rules: Sequence[Rule]) -> dict[str, bool | None]:
    """``N. yes`` lines → whether the model says each rule is stated (None when the number is missing)."""
    said: dict[int, bool] = {}
    for line in text.splitlines():
        if (m := _YES_NO.match(line)) is not None:
            said.setdefault(int(m.group(1)), m.group(2).lower() == "yes")
    return {r.needle: said.get(i) for i, r in enumerate(rules, 1)}


def restated_prompt(rules: Sequence[Rule]) -> str:
    """The upper-bound arm's question: the rules in the user's words, then the same choices."""
    said = "\n".join(f"- {r.statement}" for r in rules)
    return f"{RESTATE_PROMPT}\n{said}\n\n{choices_prompt(rules)}"


def judge_prompt(rules: Sequence[Rule]) -> str:
    return JUDGE_PROMPT + "\n\n" + "\n".join(f"{i}. {r.statement}" for i, r in enumerate(rules, 1))


def without_rules(messages: Sequence[Message], rules: Sequence[Rule]) -> tuple[tuple[Message, ...], set[str]]:
    """The messages with every rule sentence cut out of their text, and the rules that were found.

    The floor arm's context (COMPINT's full_without_sssc): a rule whose sentence is not found as
    written (a derived needle worded apart from its message) has no floor, rather than a floor that
    still shows it.
    """
    found: set[str] = set()
    out = []
    for m in messages:
        blocks = []
        for b in m.blocks:
            if isinstance(b, Text):
                text = b.text
                for r in rules:
                    if r.statement and r.statement in text:
                        found.add(r.needle)
                        text = text.replace(r.statement, "")
                b = b if text == b.text else Text(text)
            blocks.append(b)
        same = all(x is y for x, y in zip(blocks, m.blocks, strict=True))
        out.append(m if same else replace(m, blocks=tuple(blocks)))
    return tuple(out), found


def stated_exactly(messages: Sequence[Message], needles: Sequence[Needle]) -> dict[str, bool]:
    """The exact-presence judge: each constraint needle's text verbatim (normalized) in the messages,
    the test ``constraint_retention`` applies (bench.scoring.probes.classify)."""
    haystack = normalize("\n".join(render(m) for m in messages))
    return {n.id: present(n.answer, haystack) for n in needles}


def choices_prompt(rules: Sequence[Rule]) -> str:
    lines = []
    for i, r in enumerate(rules, 1):
        broken, kept = r.options()
        a, b = (broken, kept) if r.broken_first() else (kept, broken)
        lines.append(f"{i}. A) {a}  B) {b}")
    return CHOICE_PROMPT + "\n\n" + "\n".join(lines)


class ActionProber:
    """Asks Claude (``claude-haiku-4-5`` by default) for next steps and forced choices, cached on disk."""

    def __init__(self, *, model: str = DEFAULT_MODEL, api_key: str | None = None,
                 cache_dir: str | Path | None = None, max_retries: int = 4, http_client: Any = None,
                 counter: TokenCounter | None = None, max_cost: float | None = None) -> None:
        from bench.cost.pricing import UnknownModelError, profile

        self.api = CachedMessages(
            api_key=api_key, max_retries=max_retries, http_client=http_client,
            cache_dir=Path(cache_dir) if cache_dir is not None else default_cache_dir().parent / "actions",
            who="the behaviour probe", instead="score by exact match only (--probe exact)")
        try:
            p = profile(model, strict=True)
        except UnknownModelError as e:
            raise SummarizerError(f"behaviour probe: {str(e).splitlines()[0]}") from None
        self.model, self.window, self.rates = model, p.context_window, p.rates
        self.counter = counter or TokenCounter()
        self.max_cost = max_cost
        self.paid = 0
        """Requests answered by the API (not the disk cache)."""
        self.asked = 0
        self.skipped = 0
        """Requests not sent because the spend had reached ``max_cost`` (their rows say not asked)."""
        self.cost = 0.0

    def _ask(self, messages: Sequence[Message], prompt: str, max_tokens: int) -> str | None:
        if sum(self.counter.truth(m) for m in messages) + HEADROOM > self.window:
            return None
        body = {"model": self.model, "max_tokens": max_tokens, **to_messages_api(tuple(messages), prompt)}
        if self.max_cost is not None and self.cost >= self.max_cost and not self.api.stored_path(body).exists():
            self.skipped += 1
            return None  # over the cap: only answers already on disk (free) are read
        fresh: list[bool] = []

        def keep(r: Any) -> dict[str, Any]:
            fresh.append(True)
            return {"text": response_text(r), "served_by": r.model,
                    "usage": {"input_tokens": r.usage.input_tokens, "output_tokens": r.usage.output_tokens}}

        stored = self.api.answer(body, keep)
        self.asked += 1
        if fresh:
            u = stored["usage"]
            self.paid += 1
            self.cost += (u["input_tokens"] * self.rates.input + u["output_tokens"] * self.rates.output) / 1e6
        return str(stored["text"])

    def next_action(self, messages: Sequence[Message]) -> tuple[Action | None, bool]:
        """(the step the model names, whether it was asked)."""
        text = self._ask(messages, NEXT_PROMPT, NEXT_TOKENS)
        return (None, False) if text is None else (parse_action(text), True)

    def choices(self, messages: Sequence[Message], rules: Sequence[Rule], *,
                restate: bool = False) -> dict[str, bool | None]:
        """Whether the model keeps each rule; ``restate`` puts the rules' sentences in the question
        (the upper-bound arm)."""
        if not rules:
            return {}
        prompt = restated_prompt(rules) if restate else choices_prompt(rules)
        text = self._ask(messages, prompt, 64 + PER_CHOICE_TOKENS * len(rules))
        return {r.needle: None for r in rules} if text is None else parse_choices(text, rules)

    def judge(self, messages: Sequence[Message], rules: Sequence[Rule]) -> dict[str, bool | None]:
        """Whether the model finds each rule stated in the messages (the second retention judge)."""
        if not rules:
            return {}
        text = self._ask(messages, judge_prompt(rules), 64 + PER_CHOICE_TOKENS * len(rules))
        return {r.needle: None for r in rules} if text is None else parse_judgements(text, rules)


def _fmt(a: Action | None) -> str | None:
    return None if a is None else f"{a.tool} {a.target}".strip()


def probe_rows(prober: ActionProber, trace_messages: Sequence[Message], cut: int, compacted: Sequence[Message],
               needles: Sequence[Needle]) -> list[dict[str, Any]]:
    """One ``next_action`` row and one ``constraint_choice`` row per stated rule, for one compaction.

    ``trace_messages[:cut]`` is the full context at the call (the no-compaction baseline); the
    recorded next action is the first tool call from ``cut`` on. A choice row carries the four arms
    (``obeyed``, ``obeyed_full``, ``obeyed_restated``, ``obeyed_unstated``; None when not asked) and
    the two retention judges (``retained_exact``, ``retained_judged``).
    """
    full = trace_messages[:cut]
    mine, asked = prober.next_action(compacted)
    base, _ = prober.next_action(full)
    recorded = recorded_next_action(trace_messages, cut)
    rows: list[dict[str, Any]] = [{
        "probe": "next_action", "asked": asked,
        "next_action": _fmt(mine), "next_action_full": _fmt(base), "next_action_recorded": _fmt(recorded),
        "agrees_full": agree(mine, base) if asked else None,
        "agrees_recorded": agree(mine, recorded) if asked else None,
        "full_agrees_recorded": agree(base, recorded),
    }]
    stated = {n.id: n for n in needles if 0 <= n.message_index < cut}
    rules = [r for n in stated.values() if (r := rule_of(n)) is not None]
    if not rules:
        return rows
    kept = prober.choices(compacted, rules)
    kept_full = prober.choices(full, rules)
    kept_restated = prober.choices(compacted, rules, restate=True)
    bare, found = without_rules(full, rules)
    floored = [r for r in rules if r.needle in found]
    kept_unstated = prober.choices(bare, floored) if floored else {}
    exact = stated_exactly(compacted, [stated[r.needle] for r in rules])
    judged = prober.judge(compacted, rules)
    for r in rules:
        rows.append({"probe": "constraint_choice", "needle": r.needle, "polarity": r.polarity,
                     "asked": kept.get(r.needle) is not None,
                     "obeyed": kept.get(r.needle), "obeyed_full": kept_full.get(r.needle),
                     "obeyed_restated": kept_restated.get(r.needle), "obeyed_unstated": kept_unstated.get(r.needle),
                     "retained_exact": exact[r.needle], "retained_judged": judged.get(r.needle)})
    return rows
