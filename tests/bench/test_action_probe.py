"""Behaviour probes (next action, constraint choice) through the real SDK over an httpx2 mock transport.

The mocked model answers from the context it is given, like a model would: it names the file being
edited only when that file is in the conversation, and keeps a "never" rule only when the rule is there.
"""

from __future__ import annotations

import json
import math
import re

import httpx2
import pandas as pd
import pytest

from bench.cli.main import main
from bench.scoring.action_probe import (
    CHOICE_PROMPT,
    JUDGE_PROMPT,
    NEXT_PROMPT,
    RESTATE_PROMPT,
    Action,
    ActionProber,
    agree,
    choices_prompt,
    parse_action,
    parse_choices,
    probe_rows,
    recorded_next_action,
    rule_of,
)
from bench.scoring.behaviour import behaviour_lines, behaviour_table
from bench.scoring.metrics import behaviour_scores, by_strategy
from bench.summarizers import SummarizerError
from tests.bench.test_anthropic_summarizer import reply
from traces import native
from traces.model import Message, Needle, ToolResult, ToolUse

EDITED = "/src/app/adapter.py"
RULE_TEXT = "Never push to the main branch."
MESSAGES = (
    Message.text_message("system", "You are a coding agent."),
    Message.text_message("user", f"Fix the retry bug in {EDITED}. {RULE_TEXT}"),
    Message("assistant", (ToolUse("c1", "read", {"path": EDITED}),)),
    Message("user", (ToolResult("c1", "class Adapter:\n    retries = 3\n"),)),
    Message.text_message("assistant", "The retry count is wrong; I will edit it."),
    Message("assistant", (ToolUse("c2", "edit", {"path": EDITED, "old": "3", "new": "5"}),)),
    Message("user", (ToolResult("c2", "ok"),)),
)
CUT = 5  # the call that makes the edit: its prompt holds messages 0-4
RULE = Needle("derived:constraint:1", "constraint", RULE_TEXT, "Which rules did the user set?", RULE_TEXT, 1)


def _context_text(body: dict) -> str:
    """Everything the request shows the model except the final question."""
    parts = [json.dumps(body.get("system", ""))]
    parts += [json.dumps(m["content"]) for m in body["messages"][:-1]]
    last = body["messages"][-1]["content"]
    parts += [json.dumps(b) for b in last[:-1]] if isinstance(last, list) else []
    return "\n".join(parts)


class ContextModel:
    """A mock transport handler that answers from the context it is sent, and keeps every body."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        last = body["messages"][-1]["content"]
        question = last if isinstance(last, str) else last[-1]["text"]
        seen = _context_text(body)
        if question.startswith(NEXT_PROMPT):
            return reply(f"edit {EDITED}" if EDITED in seen else "glob **/*.py")
        if question.startswith(JUDGE_PROMPT):  # the retention judge: says yes when the rule is in the context
            return reply("\n".join(f"{m.group(1)}. {'yes' if 'Never push' in seen else 'no'}"
                                   for m in re.finditer(r"^(\d+)\. ", question, re.MULTILINE)))
        if question.startswith(RESTATE_PROMPT):  # the upper bound: the rule is in the question itself
            seen += question
        else:
            assert question.startswith(CHOICE_PROMPT)
        answers = []
        for line in question.splitlines():
            if m := re.match(r"(\d+)\. A\) (.*)  B\) (.*)$", line):
                n, a, b = m.groups()
                breach = "A" if a.startswith("push") else "B"
                keep = "B" if breach == "A" else "A"
                answers.append(f"{n}. {keep if 'Never push' in seen else breach}")
        return reply("\n".join(answers))


def prober(handler, tmp_path, **kw) -> ActionProber:
    client = httpx2.Client(transport=httpx2.MockTransport(handler))
    return ActionProber(api_key="sk-test", cache_dir=tmp_path / "cache", http_client=client, **kw)


def test_actions_parse_and_agree_on_tool_and_target():
    assert parse_action("**edit** `/src/app/adapter.py`\nbecause...") == Action("edit", EDITED)
    assert parse_action("bash: pytest -q") == Action("bash", "pytest -q")
    assert parse_action("none, it is done") is None
    assert agree(Action("Edit", "/home/x/src/app/adapter.py"), Action("edit", "app/adapter.py")) is True
    assert agree(Action("edit", "app/adapter.py"), Action("edit", "app/other.py")) is False
    assert agree(Action("read", EDITED), Action("edit", EDITED)) is False  # same file, another tool
    assert agree(Action("bash", "pytest  -q"), Action("Bash", "pytest -q")) is True
    assert agree(None, Action("bash", "ls")) is None
    assert recorded_next_action(MESSAGES, CUT) == Action("edit", EDITED)


def test_only_never_always_become_rules_with_a_breaking_and_a_keeping_option():
    never = rule_of(RULE)
    assert never is not None and (never.polarity, never.action) == ("never", "push to the main branch")
    assert never.options() == ("push to the main branch", "continue the task without that step")
    always = rule_of(Needle("a", "constraint", "Also, always run `make check` before you say done.", "q", "x", 1))
    assert always is not None and always.polarity == "always" and always.options()[1].startswith("run `make check`")
    only = rule_of(Needle("o", "constraint", "Please only touch src/app.py, nothing else.", "q", "x", 1))
    assert only is not None and only.action == "touch src/app.py"
    assert rule_of(Needle("m", "constraint", "You must test it.", "q", "x", 1)) is None  # no only/never/always
    assert rule_of(Needle("f", "fact", "never mind", "q", "x", 1)) is None
    prompt = choices_prompt([never, always])
    breach_letter = "A" if never.broken_first() else "B"
    keep_letter = "B" if breach_letter == "A" else "A"
    assert f"{breach_letter}) push to the main branch" in prompt.splitlines()[2]
    assert parse_choices(f"1. {keep_letter}\n", [never, always]) == {never.needle: True, always.needle: None}
    assert parse_choices(f"**1.** {breach_letter})", [never]) == {never.needle: False}


def test_both_probes_ask_the_model_on_the_compacted_and_the_full_context(tmp_path):
    model = ContextModel()
    p = prober(model, tmp_path)
    kept = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}. {RULE_TEXT}"), MESSAGES[4])
    rows = probe_rows(p, MESSAGES, CUT, kept, [RULE])
    nxt, choice = rows
    assert nxt["next_action"] == f"edit {EDITED}" and nxt["next_action_full"] == f"edit {EDITED}"
    assert nxt["next_action_recorded"] == f"edit {EDITED}"
    assert nxt["agrees_full"] is True and nxt["agrees_recorded"] is True
    assert choice["probe"] == "constraint_choice" and choice["obeyed"] is True and choice["obeyed_full"] is True
    assert choice["obeyed_restated"] is True and choice["obeyed_unstated"] is False  # upper bound, floor
    assert choice["retained_exact"] is True and choice["retained_judged"] is True
    # next action ×2, choices on the compacted and full contexts, the upper bound, the floor, the judge
    assert len(model.bodies) == 7 and p.paid == 7 and p.cost > 0 and p.skipped == 0
    assert all(b["model"] == "claude-haiku-4-5" for b in model.bodies)
    assert model.bodies[0]["messages"][0]["content"][0]["text"].startswith("Summary:")  # the compacted context
    assert RULE_TEXT not in model.bodies[2]["messages"][-1]["content"][-1]["text"]  # the rule is not restated
    restated = model.bodies[4]["messages"][-1]["content"][-1]["text"]
    assert restated.startswith(RESTATE_PROMPT) and f"- {RULE_TEXT}" in restated  # restated in the question
    assert restated.endswith(model.bodies[2]["messages"][-1]["content"][-1]["text"].split("\n\n", 1)[1])  # same A/B
    floor = json.dumps(model.bodies[5])
    assert RULE_TEXT not in floor and "Fix the retry bug" in floor  # the full context, the rule sentence cut out
    assert model.bodies[6]["messages"][-1]["content"][-1]["text"].startswith(JUDGE_PROMPT)


def _scores(rows: list[dict]) -> dict:
    return behaviour_scores([{"moment": "behaviour", **r} for r in rows])


def test_a_compaction_that_drops_the_rule_falls_below_the_baseline_and_the_upper_bound_restores_it(tmp_path):
    """COMPINT's four arms on one compaction that keeps the rule and one that drops it."""
    p = prober(ContextModel(), tmp_path)
    keeps = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}. {RULE_TEXT}"))
    drops = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}."))
    kept, dropped = probe_rows(p, MESSAGES, CUT, keeps, [RULE])[1], probe_rows(p, MESSAGES, CUT, drops, [RULE])[1]
    assert (dropped["obeyed"], dropped["obeyed_full"]) == (False, True)  # below the no-compaction baseline
    assert dropped["obeyed_restated"] is True and dropped["obeyed_unstated"] is False  # restated: restored
    good, bad = _scores([kept]), _scores([dropped])
    assert good["constraint_effect_retention"] == 1.0 and bad["constraint_effect_retention"] == 0.0
    assert bad["constraint_obedience_restated"] == 1.0 and bad["constraint_obedience_unstated"] == 0.0
    assert (dropped["retained_exact"], dropped["retained_judged"]) == (False, False)
    assert good["constraint_judge_agreement"] == bad["constraint_judge_agreement"] == 1.0
    # a model that keeps the rule even with none stated leaves nothing to lose: no score, not a perfect one
    assert math.isnan(_scores([{**dropped, "obeyed_unstated": True}])["constraint_effect_retention"])
    table = behaviour_table(pd.DataFrame([{"trace": "t", "strategy": s, "moment": "behaviour", **r}
                                          for s, r in (("keeps", kept), ("drops", dropped))])).set_index("strategy")
    assert table.loc["drops", "constraint_effect_retention"] == 0.0
    assert table.loc["keeps", "constraint_effect_retention"] == 1.0
    assert table.loc["drops", "judge_agreement"] == 1.0 and table.loc["drops", "judge_n"] == 1


def test_intervals_narrow_as_more_probes_are_paid_for(tmp_path):
    """Half the compactions keep the rule and the file: the shares stay 50%, their intervals narrow."""
    p = prober(ContextModel(), tmp_path)
    keeps = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}. {RULE_TEXT}"))
    drops = (MESSAGES[0], Message.text_message("user", "Summary: fixing a retry bug."))

    def table(per_trace: int) -> pd.Series:
        rows = [{"trace": f"t{t}", "strategy": "s", "moment": "behaviour", "round": i, **r}
                for t in range(3) for i in range(per_trace)
                for r in probe_rows(p, MESSAGES, CUT, keeps if i % 2 else drops, [RULE])]
        return behaviour_table(pd.DataFrame(rows)).iloc[0]

    few, many = table(2), table(20)
    for col in ("constraint_obedience", "next_action_agreement"):
        assert few[col] == many[col]
        assert few[f"{col}_low"] <= few[col] <= few[f"{col}_high"]
        assert many[f"{col}_high"] - many[f"{col}_low"] < few[f"{col}_high"] - few[f"{col}_low"]
    assert (few.constraint_obedience_n, many.constraint_obedience_n) == (6, 60)
    assert p.paid == 11  # 3 shared full-context asks, 4 per distinct compacted context: the rest from disk


def test_a_compaction_that_drops_the_edited_file_loses_next_action_agreement(tmp_path):
    """The summary keeps the rule but not the file being edited: the model can no longer name it."""
    model = ContextModel()
    p = prober(model, tmp_path)
    keeps_file = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}. {RULE_TEXT}"))
    drops_file = (MESSAGES[0], Message.text_message("user", f"Summary: fixing a retry bug. {RULE_TEXT}"))
    drops_rule = (MESSAGES[0], Message.text_message("user", f"Summary: fixing {EDITED}."))
    good = behaviour_scores([{"moment": "behaviour", **r} for r in probe_rows(p, MESSAGES, CUT, keeps_file, [RULE])])
    bad = behaviour_scores([{"moment": "behaviour", **r} for r in probe_rows(p, MESSAGES, CUT, drops_file, [RULE])])
    ruleless = probe_rows(p, MESSAGES, CUT, drops_rule, [RULE])
    assert good["next_action_agreement"] == 1.0 and good["next_action_recorded_agreement"] == 1.0
    assert bad["next_action_agreement"] == 0.0 and bad["next_action_recorded_agreement"] == 0.0
    assert bad["constraint_obedience"] == 1.0  # the rule was kept
    assert ruleless[1]["obeyed"] is False and ruleless[1]["obeyed_full"] is True  # below the full baseline
    assert (p.asked, p.paid) == (21, 15)  # the 3 full-context requests were paid once, then read from disk


def test_the_prober_stops_paying_at_max_cost_and_a_rerun_is_free(tmp_path):
    model = ContextModel()
    p = prober(model, tmp_path, max_cost=1e-12)  # the first answer already crosses it
    rows = probe_rows(p, MESSAGES, CUT, MESSAGES[:CUT], [RULE])
    assert p.paid == 1 and len(model.bodies) == 1
    assert rows[0]["asked"] is True and rows[1]["obeyed"] is None  # not asked: no answer, not a wrong one
    assert rows[1]["obeyed_restated"] is None and rows[1]["obeyed_unstated"] is None
    assert rows[1]["retained_judged"] is None and rows[1]["retained_exact"] is True  # the exact judge is free
    # the full context is the compacted one here: its next-action answer came from disk; 5 more were stopped
    assert p.skipped == 5
    meta = {"moment": "behaviour", "probe": "prober", "requests": p.asked, "paid": p.paid, "skipped": p.skipped,
            "cost": p.cost}
    assert _scores([*rows, meta])["behaviour_probes_skipped"] == 5
    table = behaviour_table(pd.DataFrame([{"trace": "t", "strategy": "s", "moment": "behaviour", **r}
                                          for r in (*rows, meta)])).iloc[0]
    assert (table.probes_paid, table.probes_skipped, table.constraint_obedience_n) == (1, 5, 0)
    assert any("5 stopped by --max-cost" in line for line in behaviour_lines(behaviour_table(
        pd.DataFrame([{"trace": "t", "strategy": "s", "moment": "behaviour", **r} for r in (*rows, meta)]))))
    again = prober(ContextModel(), tmp_path)
    probe_rows(again, MESSAGES, CUT, MESSAGES[:CUT], [RULE])
    assert (again.asked, again.paid) == (7, 4)  # 5 distinct requests here: the one paid before came from disk
    capped = prober(ContextModel(), tmp_path, max_cost=1e-12)
    assert probe_rows(capped, MESSAGES, CUT, MESSAGES[:CUT], [RULE])[1]["obeyed"] is True  # on disk: read over the cap
    assert capped.paid == 0


def test_missing_key_is_refused_before_any_request(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SummarizerError, match="ANTHROPIC_API_KEY"):
        ActionProber()


def test_next_action_agreement_reaches_the_results(tmp_path, monkeypatch):
    """A run with --probe anthropic on a trace that compacts: per-strategy agreement and paid probes."""
    from bench.run import runner
    from bench.scoring.llm_probe import AnthropicProbe
    from traces.synthetic import generate

    model = ContextModel()
    client = httpx2.Client(transport=httpx2.MockTransport(model))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setattr(runner, "_asker", lambda config, counter=None: AnthropicProbe(
        cache_dir=tmp_path / "llm", counter=counter, http_client=httpx2.Client(
            transport=httpx2.MockTransport(lambda r: reply("1. unknown")))))
    monkeypatch.setattr(runner, "_prober", lambda config, counter=None: ActionProber(
        cache_dir=tmp_path / "actions", counter=counter, http_client=client, max_cost=config.max_cost))
    traces = tmp_path / "traces"
    for seed in (3, 4):  # codex compacts each twice
        native.write(generate("reads", seed=seed), traces / f"t{seed}.cbt.jsonl")
    code = main(["run", "--traces", str(traces), "--strategies", "none", "codex", "--probe", "anthropic",
                 "--workers", "1", "--name", "p", "--out", str(tmp_path / "out"), "--quiet", "--no-report"])
    assert code == 0
    table = pd.read_csv(tmp_path / "out" / "p" / "results.csv")
    # the results aggregate: shares with intervals over traces
    summary = by_strategy(table.assign(error=table.error.astype(object).fillna(""))).set_index("strategy")
    share = summary.loc["codex", "next_action_recorded_agreement"]
    assert summary.loc["codex", "next_action_recorded_agreement_low"] <= share
    assert share <= summary.loc["codex", "next_action_recorded_agreement_high"]
    assert 0 <= summary.loc["codex", "constraint_obedience_restated"] <= 1  # the upper bound was asked
    assert summary.loc["codex", "behaviour_probes_skipped"] == 0 and summary.loc["codex", "behaviour_probes_paid"] > 0
    probes = pd.read_csv(tmp_path / "out" / "p" / "probes.csv", low_memory=False)
    behaviour = behaviour_table(probes).set_index("strategy")
    assert behaviour.loc["none", "constraint_obedience_n"] == behaviour.loc["none", "probes_paid"] == 0  # no compaction
    assert behaviour.loc["codex", "probes_paid"] == summary.loc["codex", "behaviour_probes_paid"]
    assert behaviour.loc["codex", "constraint_obedience_restated_n"] > 0
    assert behaviour.loc["codex", "judge_n"] == behaviour.loc["codex", "constraint_obedience_n"]
    run_dir = tmp_path / "out" / "p"  # the report's lines, read from the run folder as the report reads it
    from reports import probestats, sections

    read = probestats.behaviour(run_dir, json.loads((run_dir / "run.json").read_text()), 200).set_index("strategy")
    assert read.loc["codex", "probes_paid"] == behaviour.loc["codex", "probes_paid"]
    page = sections.behaviour_html(read.reset_index(), ["none", "codex"])
    assert "upper bound" in page and "<td class=name>codex</td>" in page and "n=" in page
    assert probestats.behaviour(run_dir, {"config": {"probe": "exact"}}, 200).empty  # no model asked: no scan
    results = table[table.trace == table.trace.iloc[0]].set_index("strategy")
    assert pd.isna(results.loc["none", "next_action_agreement"])  # never compacted: nothing to ask
    assert results.loc["none", "behaviour_probes_paid"] == 0
    assert results.loc["codex", "behaviour_probes_paid"] > 0 and results.loc["codex", "behaviour_probe_cost"] > 0
    # the full context at a compaction (over 400K tokens) is over the probe model's window: not asked, so no
    # agreement with it; the recorded next step is still a reference
    assert pd.isna(results.loc["codex", "next_action_agreement"])
    assert 0 <= results.loc["codex", "next_action_recorded_agreement"] <= 1
    assert 0 <= results.loc["codex", "constraint_obedience"] <= 1  # the synthetic trace plants never/always rules
    assert results.loc["codex", "constraint_retention"] == 1.0
    assert any(b["messages"][-1]["content"][-1]["text"].startswith(NEXT_PROMPT) for b in model.bodies)
