"""Seeded synthetic agent sessions with planted, typed needles: the bench's default input.

``generate("long", seed=0)`` builds a whole session (system prompt, human turns, assistant messages
with tool calls, tool results) whose tool mix, output sizes and pace follow the fit on real traces
(traces/calibration.py) as reshaped by a named scenario (traces/scenarios.py). Needles are planted
when the session is a chosen fraction of the way through its tokens, so retention can be plotted by
depth and age; every answer occurs only where it was planted (checked; re-drawn otherwise).
Same scenario and seed, same trace, byte for byte.
"""

from __future__ import annotations

import math
from dataclasses import replace
from random import Random

from traces import synthetic_rules as sr
from traces import synthetic_text as tx
from traces.calibration import CATEGORIES, FITTED, Calibration
from traces.model import Message, Needle, Text, ToolResult, ToolUse, Trace, render
from traces.scenarios import ScenarioSpec, resolve
from traces.synthetic_calls import TOOLS, Call, Outputs
from traces.synthetic_needles import Planted, draw

START = 1_768_467_600.0
"""2026-01-15T09:00:00Z; a session starts on a seeded day after it."""
CHARS_PER_TOKEN = {"read": 3.55, "edit": 3.75, "write": 3.8, "bash": 3.1, "search": 3.8, "web": 4.5,
                   "other": 4.5, "text": 4.2}
"""cl100k characters per token of each kind of generated text (measured), to hit a size without tokenizing."""
MAX_ATTEMPTS = 20
MAX_OUTPUT_SHARE = 0.25
"""No one tool output exceeds this share of the target size (binds only for resized scenarios, such as
``long@tokens=30000``, where one capped 120K-char output would otherwise double the session)."""
FAILING_RUN_MIN_CHARS = 2_000
"""Least size of the test run that carries an error needle (header, progress, traceback, summary)."""
ERROR_RUN_MAX_QUANTILE = 0.97
"""The error needle's test run is at most this quantile of the scenario's bash size (keeps a trace near its size)."""
CONFIG_CHARS = (600, 12_000)
"""Size range of the config file read that carries a fact needle."""
ARTIFACT_CHARS = (300, 4_000)
"""Size range of the file written that carries an artifact needle (what other synthetic writes hold)."""

_TASKS = {
    "short": "The {noun} {verb} step crashes with a KeyError when the {noun2} list is empty. Can you find the "
             "cause and fix it, with a regression test?",
    "long": "Let's refactor the {noun} package: split {snake} into smaller functions, move the {noun2} "
            "handling into its own module, and keep every test passing.",
    "logs": "CI is red: the {noun} integration suite fails intermittently. Run it, dig through the logs and "
            "find the root cause.",
    "reads": "I'm new to this codebase. Walk through how a {noun} request flows from the router to the "
             "{noun2} store and explain the main modules.",
}
_FOLLOW = ("Thanks. Next, make {snake} handle a missing {noun} gracefully and add a test.",
           "Good. Now update the {noun2} docs strings and run the full test suite.",
           "OK, please also look at why {snake} is slow with large {noun} batches.",
           "Next step: wire the {noun} changes into the CLI and check the {noun2} command still works.")
_SWITCH = "Let's drop the {noun} work for now. New priority: {task}"


def generate(scenario: str | ScenarioSpec, seed: int = 0, *, calibration: Calibration = FITTED) -> Trace:
    """The synthetic session of ``scenario`` (a name, ``name@key=value``, or a spec) for ``seed``."""
    spec = resolve(scenario)
    for attempt in range(MAX_ATTEMPTS):
        trace = _Session(spec, seed, attempt, calibration).build()
        if trace is not None:
            return trace
    raise RuntimeError(f"could not place the needles of {spec.name} seed {seed} without clashes")


class _Session:
    """Builds one session; mutable while building, discarded after."""

    def __init__(self, spec: ScenarioSpec, seed: int, attempt: int, cal: Calibration) -> None:
        self.spec, self.seed, self.cal = spec, seed, cal
        self.rng = Random(f"{spec.name}/{seed}")
        needle_rng = Random(f"{spec.name}/{seed}/needles/{attempt}")
        self.project = self.rng.choice(tx.NOUNS) + self.rng.choice(tx.NOUNS)
        cap = min(spec.max_output_chars, round(spec.tokens * MAX_OUTPUT_SHARE * CHARS_PER_TOKEN["read"]))
        self.out = Outputs(self.rng, cal, self.project, dict(spec.size_scale), cap, spec.reread, spec.failure_at_tail)
        self.mix = [spec.mix.get(c, cal.tool_mix[c]) for c in CATEGORIES]
        self.messages: list[Message] = []
        self.est = 0.0
        self.now = START + 86_400 * self.rng.randint(0, 60)
        self.calls = 0
        self.turn = 0
        kinds_seen: dict[str, int] = {}
        self.planted: list[tuple[Planted, list[int]]] = []  # needle, [message_index, old_index]
        self.events: list[tuple[float, int, str, Planted | None]] = []
        for i, plan in enumerate(spec.needles):
            variant = kinds_seen[plan.kind] = kinds_seen.get(plan.kind, -1) + 1
            p = draw(plan.kind, needle_rng, self.project, variant)
            self.planted.append((p, [-1, -1]))
            if plan.kind != "control":
                self.events.append((plan.at, i, "needle", p))
            if plan.old_at is not None:
                self.events.append((plan.old_at, i, "old", p))
        self.events += [(k / spec.turns, -1, "turn", None) for k in range(1, spec.turns)]
        # rules (traces/synthetic_rules.py): their own generator, so a scenario without them is unchanged
        if spec.layout not in sr.LAYOUTS:
            raise ValueError(f"scenario {spec.name}: unknown layout {spec.layout!r}; known: {', '.join(sr.LAYOUTS)}")
        rule_rng = Random(f"{spec.name}/{seed}/rules/{attempt}")
        drawn = sr.draw_rules(rule_rng, spec.instructions + spec.rules_per_skill * len(spec.skills))
        self.instruction_rules = drawn[:spec.instructions]
        self.instruction_at = -1
        self.skills: list[tuple[str, tuple[sr.Rule, ...], str, int]] = []  # name, rules, body, message index
        names = rule_rng.sample(sr.SKILL_NAMES, len(spec.skills)) if spec.skills else []
        for k, name in enumerate(names):
            first = spec.instructions + k * spec.rules_per_skill
            rules = drawn[first:first + spec.rules_per_skill]
            self.skills.append((name, rules, sr.skill_body(rule_rng, name, rules), -1))
            self.events.append((spec.skills[k], 1_000 + k, "skill", None))
        self.events.sort(key=lambda e: (e[0], e[1]))
        self.switch_index: int | None = None  # the first message recorded as ``switch_model``'s

    # -- building -----------------------------------------------------------------------------
    def build(self) -> Trace | None:
        system = tx.system_prompt(self.rng, self.project, TOOLS)
        rules_file = (sr.instruction_file(self.rng, self.project, self.instruction_rules)
                      if self.instruction_rules else "")
        if rules_file and self.spec.instruction_chars > len(rules_file):  # a heavy file: its own generator
            pad = Random(f"{self.spec.name}/{self.seed}/instruction-notes")
            rules_file = sr.pad_instructions(pad, rules_file, self.spec.instruction_chars)
        if rules_file and self.spec.layout == "opencode":
            system += "\n\n" + sr.opencode_instructions(f"{self._cwd}/AGENTS.md", rules_file)
        self._add(Message.text_message("system", system, timestamp=self.now))
        if rules_file and self.spec.layout == "opencode":
            self.instruction_at = 0
        elif rules_file and self.spec.layout == "codex":
            self.instruction_at = self._add(Message.text_message(
                "user", sr.codex_agents_md(self._cwd, rules_file), timestamp=self.now, meta={"injected": True}))
        self.first_reminder = (sr.claude_md_reminder(f"{self._cwd}/CLAUDE.md", rules_file)
                               if rules_file and self.spec.layout == "claude-code" else None)
        pending: list[Planted] = []
        first = True
        while self.est < self.spec.tokens or self.events or pending:
            frac = self.est / self.spec.tokens
            if self.spec.switch_model and self.switch_index is None and frac >= self.spec.switch_at:
                self.switch_index = len(self.messages)
            due = [e for e in self.events if e[0] <= frac]
            self.events = [e for e in self.events if e not in due]
            skills_due = [e[1] - 1_000 for e in due if e[2] == "skill"]
            due = [e for e in due if e[2] != "skill"]
            texts = [self._task()] if first else []
            for _, _, what, p in due:
                if what == "turn":
                    texts.append(self._task())
                elif what == "old":
                    texts.append(p.old_human)
                elif p.human is not None:
                    texts.append(p.human)
                else:
                    pending.append(p)
            if texts:
                if not first:
                    self._final()
                    if not any(e[2] == "turn" for e in due):
                        texts.append("Carry on with the current task.")
                self._human(texts, [p for _, _, w, p in due if w in ("needle", "old") and p.human is not None],
                            [p for _, _, w, p in due if w == "old"])
                first = False
            for k in skills_due:
                self._skill(k)
            self._step(pending.pop(0) if pending else None)
        self._final()
        return self._trace()

    def _add(self, m: Message, chars_per_token: float = CHARS_PER_TOKEN["text"]) -> int:
        self.messages.append(m)
        self.est += len(render(m)) / chars_per_token if m.role != "user" or not m.is_tool_result else 0
        return len(self.messages) - 1

    def _fmt(self, template: str) -> str:
        r = self.rng
        return template.format(noun=r.choice(tx.NOUNS), noun2=r.choice(tx.NOUNS), verb=r.choice(tx.VERBS),
                               snake=tx.snake(r), task=self._fmt(r.choice(_FOLLOW)) if "{task}" in template else "")

    def _task(self) -> str:
        self.turn += 1
        name = self.spec.name.split("@")[0]
        if self.turn == 1:
            return self._fmt(_TASKS.get(name, _TASKS["long"]))
        if self.spec.direction_changes and self.rng.random() < 0.7:
            return self._fmt(_SWITCH)
        return self._fmt(self.rng.choice(_FOLLOW))

    @property
    def _cwd(self) -> str:
        return f"/home/dev/{self.project}"

    def _human(self, texts: list[str], carried: list[Planted], old: list[Planted]) -> None:
        self.now += min(3600.0, self.cal.turn_seconds.sample(self.rng))
        if self.first_reminder is not None:  # Claude Code: the CLAUDE.md reminder heads the first user turn
            i = self._add(Message("user", (Text(self.first_reminder), Text("\n\n".join(texts))),
                                  timestamp=round(self.now, 3)))
            self.first_reminder, self.instruction_at = None, i
        else:
            i = self._add(Message.text_message("user", "\n\n".join(texts), timestamp=round(self.now, 3)))
        for p, where in self.planted:
            if any(p is q for q in old):
                where[1] = i
            elif any(p is q for q in carried):
                where[0] = i

    def _say(self, lead: str, scale: float = 1.0) -> str:
        size = max(len(lead), round(self.cal.assistant_text_chars.sample(self.rng) * scale))
        return tx.fill(lead, tx.prose_lines(self.rng), min(size, 4000))

    def _final(self) -> None:
        if self.messages[-1].role == "assistant" and not self.messages[-1].tool_uses:
            return
        self.now += min(600.0, self.cal.step_seconds.sample(self.rng))
        self._add(Message.text_message("assistant", self._say("Done. Summary of what changed:", 3.0),
                                       timestamp=round(self.now, 3)))

    def _step(self, needle: Planted | None) -> None:
        r = self.rng
        n = 1 + (r.random() < self.cal.parallel_share) * r.choice((1, 1, 2))
        calls = [self.out.call(c) for c in r.choices(CATEGORIES, self.mix, k=n)]
        if needle is not None and needle.call is not None:
            calls[0] = self._needle_call(needle)
        lead = _lead(calls[0])
        if needle is not None and needle.assistant is not None:
            lead = f"{needle.assistant}\n\n{lead}"
        uses = [ToolUse(f"toolu_{self.seed:04d}_{self.calls + k:05d}", c.tool, c.input) for k, c in enumerate(calls)]
        self.calls += len(calls)
        self.now += min(600.0, self.cal.step_seconds.sample(r))
        ai = self._add(Message("assistant", (Text(self._say(lead)), *uses), timestamp=round(self.now, 3)))
        self.now += min(300.0, r.lognormvariate(math.log(1.2), 1.0))
        results = tuple(ToolResult(u.id, c.output, c.is_error) for u, c in zip(uses, calls, strict=True))
        ri = self._add(Message("user", results, timestamp=round(self.now, 3)))
        self.est += sum(len(c.output) / CHARS_PER_TOKEN[c.category] for c in calls)
        if needle is not None:
            where = next(w for p, w in self.planted if p is needle)
            where[0] = ai if needle.kind in ("artifact", "decision") else ri

    def _skill(self, k: int) -> None:
        """Load skill ``k`` where the scenario's agent puts a skill (traces/synthetic_rules.py)."""
        name, rules, body, _ = self.skills[k]
        layout = self.spec.layout
        self.now += min(600.0, self.cal.step_seconds.sample(self.rng))
        if layout == "codex":  # an injected user message, no tool call
            path = f"{self._cwd}/.codex/skills/{name}/SKILL.md"
            text = f"<skill>\n<name>{name}</name>\n<path>{path}</path>\n{body}\n</skill>"
            at = self._add(Message.text_message("user", text, timestamp=round(self.now, 3), meta={"injected": True}))
            self.skills[k] = (name, rules, body, at)
            return
        use = ToolUse(f"toolu_{self.seed:04d}_{self.calls:05d}", "Skill" if layout == "claude-code" else "skill",
                      {"skill": name} if layout == "claude-code" else {"name": name})
        self.calls += 1
        self._add(Message("assistant", (Text(f"This is {name.replace('-', ' ')} work; loading the {name} skill."), use),
                          timestamp=round(self.now, 3)))
        self.now += 0.5
        if layout == "opencode":  # the body is the tool result
            out = f'<skill_content name="{name}">\n# Skill: {name}\n\n{body}\n</skill_content>'
            at = self._add(Message("user", (ToolResult(use.id, out),), timestamp=round(self.now, 3)))
            self.est += len(out) / CHARS_PER_TOKEN["text"]
        else:  # Claude Code: "Launching skill", then the body as an injected (isMeta) user message
            self._add(Message("user", (ToolResult(use.id, f"Launching skill: {name}"),), timestamp=round(self.now, 3)))
            text = f"{sr.SKILL_LEAD} /home/dev/.claude/skills/{name}\n\n{body}"
            at = self._add(Message.text_message("user", text, timestamp=round(self.now, 3),
                                                meta={"injected": True, "is_meta": True}))
        self.skills[k] = (name, rules, body, at)

    def _needle_call(self, p: Planted) -> Call:
        """The tool call that carries a needle, sized like the real calls it stands for.

        * error: a failing test run prints at least its header, progress, the ``FAILURES`` section
          with the traceback, and the summary. Its size is the scenario's bash fit conditioned on
          lying between ``FAILING_RUN_MIN_CHARS`` and the ``ERROR_RUN_MAX_QUANTILE`` quantile: the
          real failing test runs in ../shared/traces (Claude Code ``mix test`` runs not piped
          through ``tail``) are 2.8K-10K chars, and the conditioned fit gives 2K-20K, median ~4.4K,
          at the calibrated scale. Where a scenario puts failures at the tail of huge outputs
          (``failure_at_tail``), the floor is the scenario's 90th-percentile bash size instead
          (33K-120K chars, median ~55K, in ``logs``): the error line ends one of its largest outputs.
        * fact in a file: a whole TOML file of a read-sized length (the scenario's read fit
          conditioned on ``CONFIG_CHARS``; median ~2.4K at the calibrated scale), the needle's
          section a random 10-70% into it.
        * artifact: the created file holds a module of ``ARTIFACT_CHARS`` characters, like other writes.

        The sizes come from the session's own seeded draw, so a trace stays the same for a seed.
        """
        assert p.call is not None
        tool, args, tail = p.call
        r = self.rng
        if tool == "bash":
            floor = max(FAILING_RUN_MIN_CHARS, self.out.quantile("bash", 0.9) if self.spec.failure_at_tail else 0)
            ceiling = max(floor, self.out.quantile("bash", ERROR_RUN_MAX_QUANTILE))
            run = self.out.test_run(self.out.size_within("bash", floor, ceiling), tail=tail)
            return replace(run, input=args, is_error=True)
        if tool == "read_file":
            size = self.out.size_within("read", *CONFIG_CHARS)
            return Call(tool, args, self.out.config_file(tail, size), category="read")
        content = tx.fill(args["content"], tx.code_lines(r), r.randint(*ARTIFACT_CHARS))
        return Call(tool, {**args, "content": content}, tail, category="write")

    # -- checking -------------------------------------------------------------------------------
    def _trace(self) -> Trace | None:
        """The trace, or None when an answer occurs anywhere but where it was planted."""
        texts = [render(m) for m in self.messages]
        needles = []
        for k, (p, (index, old_index)) in enumerate(self.planted):
            where = {i for i, t in enumerate(texts) if p.answer in t}
            allowed = {index, index + 1} if p.kind == "artifact" else {index}  # its own tool result echoes it
            if index >= 0 and not ({index} <= where <= allowed) or index < 0 and where:
                return None
            if p.old_answer is not None and {i for i, t in enumerate(texts) if p.old_answer in t} != {old_index}:
                return None
            text = p.human or p.assistant or (f"write {p.answer}" if p.kind == "artifact" else
                                              p.call[2] if p.call else "")
            needles.append(Needle(f"{p.kind}-{k:02d}", p.kind, text,
                                  p.question, p.answer, index, p.old_answer, p.reference))
        for kind, rules, at in ([("instruction", self.instruction_rules, self.instruction_at)]
                                + [("skill", rules, at) for _, rules, _, at in self.skills]):
            for rule in rules:
                if {i for i, t in enumerate(texts) if rule.answer in t} != {at}:
                    return None
                needles.append(Needle(f"{kind}-{len(needles):02d}", kind, rule.text, rule.question, rule.answer, at))
        spec = self.spec
        messages = tuple(self.messages)
        if spec.model:  # each call records its model, so the replay windows it call by call
            switch = self.switch_index if self.switch_index is not None else len(messages)
            messages = tuple(replace(m, meta={**m.meta, "model": spec.model if i < switch else spec.switch_model})
                             if m.role == "assistant" else m for i, m in enumerate(messages))
        return Trace(
            id=f"synthetic/{spec.name}/seed{self.seed}", messages=messages, agent="synthetic",
            model=spec.model or None, source=f"synthetic:{spec.name}", needles=tuple(needles),
            meta={"scenario": spec.name, "seed": self.seed, "description": spec.description,
                  "target_tokens": spec.tokens, "tool_calls": self.calls, "project": self.project},
        )


def _lead(call: Call) -> str:
    """The assistant's one-line intent for its first call."""
    args = call.input
    if call.tool == "bash":
        return f"Running `{args['command']}` to check."
    if "path" in args and call.tool != "grep":
        verb = {"read_file": "Let me read", "edit_file": "I'll update", "write": "Creating"}[call.tool]
        return f"{verb} {args['path']}."
    if call.tool in ("grep", "glob"):
        return f"Searching for `{args['pattern']}`."
    if call.tool == "web_fetch":
        return f"Checking the documentation at {args['url']}."
    return "Updating the task list."
