"""Claude Code session JSONL (``~/.claude/projects/<slug>/<sessionId>.jsonl``), spec/formats.md §3.

Why the work: the file is a log, not the context. Records form a tree (``uuid``/``parentUuid``)
that can branch after rewinds, parallel tool results hang off side branches, one API response is
written as one line per content block (shared ``message.id``), and most lines are ``progress`` or
``file-history-snapshot`` noise. We walk the chain from the last record, regroup each response,
attach every tool result to its call, and keep the agent's own compaction (``compact_boundary`` +
``isCompactSummary``) as a RecordedCompaction. Subagent (sidechain) records become their own traces.
Checked against Claude Code v2.1.38–39 files (marot/spotter @ 8cc42b0, test/fixtures/transcripts).
Claude Code 1.0.x (2025) wrote no boundary: its summary is a root record (``parentUuid`` null) in the
same file, and the chain goes on to the records before it in file order. A model call that is not on
the chain (a rewound branch) is counted in ``meta["skipped_calls"]`` and the notes, never lost silently.

What the model sees, and what it does not. Which records reach the API is read in the CLI's own
request builder, ``normalizeMessagesForAPI`` and ``normalizeAttachmentForAPI`` in
``src/utils/messages.ts`` of the 2.1.88 source (mirror DroxKiwi/claude-code-leak-packaged @
fb1320d1baf5b77a0a02c15f41efb1dfa9aeff4b, lines 1879–2160 and 3261–4040):

- ``system`` records are dropped, except ``local_command`` ones (the output of a slash command),
  which go to the model as a user message (so it can refer to them later); we import those.
- ``attachment`` records (saved to the transcript since 2.1.97, CHANGELOG: "lost mid-turn input from
  attachment messages not being saved") become injected user messages, one type at a time: the
  types the builder drops (``hook_system_message``, ``command_permissions``, a ``hook_success`` of
  any event but SessionStart/UserPromptSubmit, …) are counted as passed over, the rest imported (see
  ``_attachment_text``). Their fixed instruction wording is the CLI's and is not reproduced: we
  render the recorded fields (the task list, the skill listing, the diagnostics, the hook output) in
  a short frame of our own, so a rendered attachment runs some tokens short of the real one.
- ``<synthetic>`` assistant records are written by the CLI itself, never by the model: they are not
  calls (no usage, not billed, not in ``n_calls``). The builder drops the API-error ones
  (``isApiErrorMessage``), which we count as passed over; any other (in every real file so far "No
  response requested.", which ``conversationRecovery.ts`` appends after a trailing user turn when a
  session is resumed, lines 212–228) stays in the history the next requests send, so its text is kept
  as an injected user message marked ``synthetic_assistant`` (the trace model has no assistant turn
  that is not a call). Fairly sure for 2.1.x (read in 2.1.88's source; every real one sits after
  ``/exit`` and before the next prompt, i.e. written on resume); not checked for 1.0.x.
- Every other record type (``progress``, ``file-history-snapshot``, ``permission-mode``,
  ``last-prompt``, ``ai-title``, and any type a later version adds) is metadata: counted per type in
  one note line and in ``meta["passed_over"]``; an unknown type never stops detection or reading.

Compactions. A file may *begin* with a compaction (the pre-compaction part lives in another file):
its RecordedCompaction has ``message_index`` 0, which tells the fidelity code that no recorded call
precedes it. A boundary whose ``compactMetadata.preservedSegment`` names messages kept verbatim
(``annotateBoundaryWithPreservedSegment``, ``services/compact/compact.ts`` lines 315–341; the loader
``applyPreservedSegmentRelinks`` in ``utils/sessionStorage.ts``) is read as the CLI rebuilds it: the
kept messages stay where they were recorded (their calls were made before the compaction), and a
copy of them follows the summary as the context after it (suffix-preserving: anchor = the summary;
prefix-preserving: anchor = the boundary, the copy comes before the summary). The copy is one
injected user message (``meta["preserved"]``) of their text, so no call is counted twice.
``subagents/agent-acompact-*.jsonl`` beside a session is the summarizer call of one of its
compactions: read alone it yields no trace (one note names its session); read with its session its
usage becomes that compaction's ``call_usage`` (before 2.1.98 the recorded ``output_tokens`` there is a
streaming placeholder, CHANGELOG 2.1.98 "carry final token usage instead of streaming placeholders").

The 1M window. The transcript names the model without the ``[1m]`` suffix the user chose, so
``meta["window_hint"] = "1m"`` is set only where the session itself shows it (``_WindowEvidence``),
with ``meta["window_evidence"]`` saying where; nothing is inferred from prompt sizes here.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from traces.formats import ReadResult
from traces.formats._common import (
    Skips,
    anthropic_blocks,
    finish,
    get_dict,
    get_int,
    get_str,
    iter_jsonl,
    repair_notes,
    too_deep,
    ts_seconds,
)
from traces.model import (
    Block,
    Message,
    RecordedCompaction,
    Text,
    ToolResult,
    ToolUse,
    Trace,
    TraceError,
    Usage,
)

NAME = "claude-code"
AGENT = "claude-code"
CONTENT_TYPES = ("user", "assistant", "system")
CHAIN_TYPES = CONTENT_TYPES + ("attachment",)
"""Record types that can be sent to the model (and so can end the conversation's chain)."""
NOISE_TYPES = ("progress", "file-history-snapshot", "queue-operation", "summary")
METADATA_TYPES = NOISE_TYPES + ("permission-mode", "last-prompt", "custom-title", "ai-title", "agent-name",
                                "pr-link", "tag")
"""Record types seen in real files that carry no conversation; used only to recognise a file whose first
64 KB hold nothing else. Any other type is passed over and counted just the same."""
SYNTHETIC = "<synthetic>"
NO_MATCH = "no Claude Code record (type user/assistant/system with sessionId and parentUuid)"


@dataclass
class _Rec:
    """One parsed record that takes part in the uuid tree (content, attachments, progress links)."""

    line: int
    kind: str
    uuid: str
    parent: str | None
    logical_parent: str | None
    side: str
    timestamp: float | None = None
    blocks: tuple[Block, ...] = ()
    msg_id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    subtype: str | None = None
    compact_summary: bool = False
    compact_meta: dict[str, Any] = field(default_factory=dict)
    is_meta: bool = False
    synthetic: bool = False
    api_error: bool = False
    content: str = ""
    """A system record's text (``local_command`` output)."""
    attachment: dict[str, Any] = field(default_factory=dict)
    preserved: bool = False
    """A copy of a preserved-segment record, placed after its compaction (never a call)."""


def sniff_file(path: Path, head: str) -> str | None:
    """Claude Code's when a record of the uuid tree (``uuid``, ``parentUuid``, ``sessionId``) shows up
    in the head, whatever its type; or when the head holds only Claude Code metadata records (a later
    version can open a file with many). Record types we do not know are skipped, never a refusal."""
    lines = head.split("\n")
    complete = lines if len(head) < 64 * 1024 else lines[:-1]
    bad = 0
    metadata = 0
    for line in complete:
        if not line.strip():
            continue
        try:
            if too_deep(line):  # parsing it would overflow the stack
                raise ValueError("nested too deep")
            rec = json.loads(line)
        except ValueError:  # one bad line (truncated, garbage) is the reader's to report, by line
            bad += 1
            if bad > 1:
                return "lines are not JSON"
            continue
        if not isinstance(rec, dict):
            return "lines are not JSON objects"
        kind = rec.get("type")
        if not isinstance(kind, str):
            return NO_MATCH
        if "sessionId" in rec and "parentUuid" in rec and ("uuid" in rec or kind in CONTENT_TYPES):
            return None
        metadata += kind in METADATA_TYPES and ("sessionId" in rec or "messageId" in rec or "leafUuid" in rec)
    if lines and re.search(r'"parentUuid":', lines[0]) and re.search(r'"sessionId":', lines[0]):
        return None
    if metadata and not bad and len(head) >= 64 * 1024:
        return None  # 64 KB of Claude Code metadata and nothing else: the conversation comes later
    if bad:
        return "a line is not JSON"
    return NO_MATCH


def _usage(u: Any, path: Path, line: int) -> Usage | None:
    if not isinstance(u, dict):
        return None
    g = lambda k: get_int(u, k, 0, path=path, line=line)  # noqa: E731
    return Usage(g("input_tokens"), g("output_tokens"), g("cache_read_input_tokens"),
                 g("cache_creation_input_tokens"))


def _parse(obj: dict[str, Any], path: Path, line: int) -> _Rec | None:
    kind = get_str(obj, "type", path=path, line=line)
    if kind not in CHAIN_TYPES:
        # progress, or a type a later version added: a link of the tree when it has the fields of one
        # (read without complaint: an unknown record is counted, never an error), else not in the tree
        uuid, parent, agent = obj.get("uuid"), obj.get("parentUuid"), obj.get("agentId")
        if not isinstance(uuid, str) or not (parent is None or isinstance(parent, str)):
            return None
        side = (agent if isinstance(agent, str) else "sidechain") if obj.get("isSidechain") is True else ""
        logical = obj.get("logicalParentUuid")
        return _Rec(line, kind, uuid, parent, logical if isinstance(logical, str) else None, side,
                    ts_seconds(obj.get("timestamp")))
    uuid = get_str(obj, "uuid", path=path, line=line)
    side = get_str(obj, "agentId", "sidechain", path=path, line=line) if obj.get("isSidechain") is True else ""
    rec = _Rec(line, kind, uuid, get_str(obj, "parentUuid", None, path=path, line=line),
               get_str(obj, "logicalParentUuid", None, path=path, line=line), side, ts_seconds(obj.get("timestamp")))
    if kind in ("user", "assistant"):
        message = get_dict(obj, "message", path=path, line=line)
        rec.blocks = anthropic_blocks(message.get("content"), path=path, line=line)
        rec.is_meta = obj.get("isMeta") is True
        rec.compact_summary = obj.get("isCompactSummary") is True
        if kind == "assistant":
            rec.msg_id = get_str(message, "id", uuid, path=path, line=line)
            rec.model = get_str(message, "model", None, path=path, line=line)
            rec.usage = _usage(message.get("usage"), path, line)
            rec.synthetic = rec.model == SYNTHETIC
            rec.api_error = obj.get("isApiErrorMessage") is True
    elif kind == "system":
        rec.subtype = get_str(obj, "subtype", None, path=path, line=line)
        rec.compact_meta = get_dict(obj, "compactMetadata", {}, path=path, line=line)
        if rec.subtype == "microcompact_boundary":
            rec.compact_meta = get_dict(obj, "microcompactMetadata", {}, path=path, line=line)
        content = obj.get("content")
        rec.content = content if isinstance(content, str) else ""
    elif kind == "attachment":
        att = obj.get("attachment")  # a shape a later version changed is counted, not an error
        rec.attachment = att if isinstance(att, dict) else {}
    return rec


# --- attachments -------------------------------------------------------------------------------

_DROPPED_ATTACHMENTS = frozenset({
    "already_read_file", "command_permissions", "edited_image_file", "hook_cancelled",
    "hook_error_during_execution", "hook_non_blocking_error", "hook_system_message", "structured_output",
    "hook_permission_decision", "dynamic_skill", "context_efficiency",
    # legacy types the builder still accepts and drops
    "autocheckpointing", "background_task_status", "todo", "task_progress", "ultramemory",
})
"""Attachment types ``normalizeAttachmentForAPI`` turns into nothing (2.1.88, messages.ts 3513–3516,
3911–3924, 4010–4034)."""

_SENT_ATTACHMENTS = frozenset({
    "directory", "edited_text_file", "file", "compact_file_reference", "pdf_reference", "selected_lines_in_ide",
    "opened_file_in_ide", "plan_file_reference", "invoked_skills", "todo_reminder", "task_reminder",
    "nested_memory", "relevant_memories", "skill_listing", "queued_command", "output_style", "diagnostics",
    "plan_mode", "plan_mode_reentry", "plan_mode_exit", "auto_mode", "auto_mode_exit", "critical_system_reminder",
    "mcp_resource", "agent_mention", "task_status", "async_hook_response", "token_usage", "budget_usd",
    "output_token_usage", "hook_blocking_error", "hook_success", "hook_additional_context",
    "hook_stopped_continuation", "compaction_reminder", "date_change", "ultrathink_effort", "deferred_tools_delta",
    "agent_listing_delta", "mcp_instructions_delta", "companion_intro", "verify_plan_reminder",
    "teammate_mailbox", "team_context", "skill_discovery",
})
"""Attachment types the builder sends (as a user message, most wrapped in ``<system-reminder>``)."""

_NOT_CONTENT = frozenset({"type", "toolUseID", "hookEvent", "command", "durationMs", "exitCode", "stdout",
                          "stderr", "uuid", "source_uuid", "isMeta", "commandMode", "origin", "reminderType",
                          "isSubAgent", "planExists", "isInitial", "showConcurrencyNote", "addedNames",
                          "addedTypes", "severity", "range", "code", "mtimeMs"})
"""Recorded fields that steer how the CLI words an attachment but are not its text."""


def _strings(value: Any) -> list[str]:
    """The text leaves of a recorded attachment field, in order."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for k, v in value.items() if k not in _NOT_CONTENT for s in _strings(v)]
    return []


def _attachment_text(att: dict[str, Any]) -> tuple[str | None, bool]:
    """(the text the model is sent for this attachment or None when it is sent nothing, human input).

    Conditions follow ``normalizeAttachmentForAPI`` (see the module docstring); the text is the recorded
    content in a frame of our own words, not the CLI's fixed wording.
    """
    kind = att.get("type")
    if kind in _DROPPED_ATTACHMENTS or kind not in _SENT_ATTACHMENTS:
        return None, False
    name = att.get("hookName") if isinstance(att.get("hookName"), str) else ""
    if kind == "hook_success":
        content = att.get("content")
        if att.get("hookEvent") not in ("SessionStart", "UserPromptSubmit") or not isinstance(content, str) \
                or not content:
            return None, False
        body = f"{name} hook success: {content}"
    elif kind == "hook_additional_context":
        lines = _strings(att.get("content"))
        if not lines:
            return None, False
        body = f"{name} hook additional context: " + "\n".join(lines)
    elif kind in ("skill_listing", "diagnostics") and not _strings(att.get("content") or att.get("files")):
        return None, False
    elif kind == "queued_command":
        prompt = _strings(att.get("prompt"))
        human = att.get("origin") is None and att.get("isMeta") is not True and att.get("commandMode") != \
            "task-notification"
        return ("\n".join(prompt) if prompt else None), human
    elif kind == "task_reminder" or kind == "todo_reminder":
        items = att.get("content") if isinstance(att.get("content"), list) else []
        lines = [f"#{t.get('id', i + 1)} [{t.get('status', '')}] {t.get('subject') or t.get('content') or ''}"
                 for i, t in enumerate(items) if isinstance(t, dict)]
        body = f"[{kind}] the task tools have not been used recently" + ("; tasks:\n" + "\n".join(lines)
                                                                          if lines else "")
    elif kind == "diagnostics":
        lines = []
        for f in att.get("files") if isinstance(att.get("files"), list) else []:
            if isinstance(f, dict):
                lines.append(str(f.get("uri", "")))
                lines += [f"  {d.get('severity', '')} {d.get('message', '')}" for d in f.get("diagnostics") or []
                          if isinstance(d, dict)]
        body = "<new-diagnostics>" + "\n".join(lines) + "</new-diagnostics>"
    else:
        body = f"[{kind}] " + "\n".join(_strings(att))
    return f"<system-reminder>\n{body}\n</system-reminder>", False


# --- the 1M window -----------------------------------------------------------------------------

_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
"""A session id that can name the folder beside its file (Claude Code's are UUIDs): one path component, short."""


def _compaction_calls_beside(path: Path, sid: str) -> list[Path]:
    """The recorded summarizer calls of session ``sid`` beside ``path`` (``<sid>/subagents/agent-acompact-*``).
    The id comes from the file: one that cannot be a folder name (a path, a 100,000-character string found
    by `make fuzz`, which the file system refused with an OSError) has no such folder, and an unreadable
    folder has none that can be read."""
    if not _FOLDER_NAME.fullmatch(sid):
        return []
    try:
        return sorted((path.parent / sid / "subagents").glob("agent-acompact-*.jsonl"))
    except OSError:
        return []


_MODEL_1M = re.compile(r"\b(claude-[\w.\-]+|opus|sonnet|haiku|opusplan|fable)\[1m\]", re.I)
_SET_MODEL = re.compile(r"(Set model to|Kept model as)[^<]*?(\[1m\]|1M context)", re.I)
_TRAILER = re.compile(r"Co-Authored-By: (Claude [^<\n]*?\(1M context\))")


class _WindowEvidence:
    """Where a session shows it ran with a 1M window, per side (main thread or sub-agent).

    Only what the CLI itself wrote about this session counts: a ``/model`` output ("Set model to …
    [1m]" / "(1M context)"), a model id with ``[1m]`` in a record's own ``model`` field, a SessionStart
    hook's recorded output naming the model with ``[1m]`` (the CLI hands the session's model to the
    hook), and the commit trailer the CLI tells the model to write ("Co-Authored-By: Claude Opus 4.6 (1M
    context)": ``getAttributionTexts`` builds it from the main-loop model, ``src/utils/attribution.ts``
    66–76 and ``getPublicModelDisplayName`` in ``src/utils/model/model.ts`` 330–360, 2.1.88). Tool
    results and prompts are never read for it: they mention other sessions and documentation.
    """

    def __init__(self) -> None:
        self.found: dict[str, str] = {}

    def _add(self, side: str, where: str) -> None:
        self.found.setdefault(side, where)

    def see(self, obj: dict[str, Any], rec: _Rec | None, line: int) -> None:
        side = rec.side if rec is not None else ""
        model = obj.get("model")
        if isinstance(model, str) and model.endswith("[1m]"):
            self._add(side, f"line {line}: {obj.get('type')} record model {model}")
        if rec is None:
            return
        if rec.kind == "system" and rec.subtype == "local_command" or rec.kind == "user":
            text = rec.content if rec.kind == "system" else Message("user", rec.blocks).text
            if "local-command-stdout" in text:
                m = _SET_MODEL.search(text)
                if m:
                    self._add(side, f"line {line}: /model output {_clip(m.group(0))!r}")
        elif rec.kind == "attachment" and rec.attachment.get("hookEvent") == "SessionStart":
            for key in ("stdout", "stderr", "content"):
                value = rec.attachment.get(key)
                m = _MODEL_1M.search(value) if isinstance(value, str) else None
                if m:
                    self._add(side, f"line {line}: SessionStart hook output names {m.group(0)}")
                    break
        elif rec.kind == "assistant":
            for b in rec.blocks:
                text = b.input_json() if isinstance(b, ToolUse) else b.text if isinstance(b, Text) else ""
                m = _TRAILER.search(text.replace("\\n", "\n"))
                if m:
                    self._add(side, f"line {line}: commit trailer the CLI words from the model: {m.group(1)!r}")
                    break


def _clip(s: str, n: int = 80) -> str:
    s = re.sub(r"\x1b\[[0-9;]*m", "", s)
    return s if len(s) <= n else s[: n - 1] + "…"


# --- the chain ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Segment:
    """A live ``preservedSegment`` of one boundary: head..tail kept verbatim after the compaction."""

    boundary: _Rec
    head: str
    tail: str
    anchor: str
    members: frozenset[str]
    summaries: tuple[_Rec, ...]

    @property
    def prefix(self) -> bool:
        """Prefix-preserving (partial compact "from here"): the kept part comes before the summary."""
        return self.anchor == self.boundary.uuid


def _segments(recs: list[_Rec]) -> dict[str, _Segment]:
    """Each boundary's preserved segment whose tail→head walk holds (as the CLI's loader checks), by
    boundary uuid; a broken one is ignored (the loader then falls back to the plain chain too)."""
    by_uuid = {r.uuid: r for r in recs}
    out: dict[str, _Segment] = {}
    for b in recs:
        seg = b.compact_meta.get("preservedSegment") if b.subtype == "compact_boundary" else None
        if not isinstance(seg, dict):
            continue
        head, tail, anchor = (seg.get(k) for k in ("headUuid", "tailUuid", "anchorUuid"))
        if not all(isinstance(v, str) for v in (head, tail, anchor)):
            continue
        members: set[str] = set()
        cur = by_uuid.get(tail)
        while cur is not None and cur.uuid not in members:
            members.add(cur.uuid)
            if cur.uuid == head:
                break
            cur = by_uuid.get(cur.parent) if cur.parent else None
        if head not in members:
            continue
        summaries = tuple(r for r in recs if r.compact_summary and r.parent == b.uuid)
        out[b.uuid] = _Segment(b, head, tail, anchor, frozenset(members), summaries)
    return out


def _chain(recs: list[_Rec]) -> tuple[list[_Rec], int]:
    """The records on the path from the root to the last content record, and how many links broke.

    A parent that is absent (a lost line, or a boundary whose logical parent was never written)
    is bridged to the nearest earlier record in file order, so no history is silently dropped.
    Claude Code 1.0.x writes no ``compact_boundary``: its summary record (``isCompactSummary``) has
    ``parentUuid`` null, and the pre-compaction records precede it in the same file; the walk goes
    on through it the same way (not counted as a broken link).

    A boundary with a preserved segment: the records after it hang off the segment's tail (the kept
    messages were not written again), so walking back from there first meets the kept messages as the
    context after the compaction. Those are taken as copies (``preserved``), the summary and boundary
    are put where the CLI's loader relinks them, and the walk goes on from the last record written
    before the boundary, which meets the kept messages again, this time as the history they were.
    """
    by_uuid = {r.uuid: r for r in recs}
    pos = {id(r): i for i, r in enumerate(recs)}
    segs = _segments(recs)
    seg_of: dict[str, _Segment] = {}
    for s in segs.values():
        for u in s.members:
            seg_of.setdefault(u, s)
    leaves = [r for r in recs if r.kind in CHAIN_TYPES and not r.preserved]
    cur: _Rec | None = leaves[-1] if leaves else None
    out: list[_Rec] = []
    seen: set[str] = set()
    done: set[str] = set()  # boundaries whose segment has been laid out
    breaks = 0
    while cur is not None and cur.uuid not in seen:
        seg = seg_of.get(cur.uuid)
        if seg is not None and seg.boundary.uuid not in done and pos[id(cur)] < pos[id(seg.boundary)]:
            cur = _lay_out(seg, by_uuid, recs, pos, out, seen)
            done.add(seg.boundary.uuid)
            continue
        if cur.compact_summary and cur.parent in segs and cur.parent not in done:
            seg = segs[cur.parent]  # the records after it hang off the summary: same layout
            cur = _lay_out(seg, by_uuid, recs, pos, out, seen)
            done.add(seg.boundary.uuid)
            continue
        seen.add(cur.uuid)
        out.append(cur)
        link = cur.parent or cur.logical_parent
        if link is None and not cur.compact_summary:
            break
        nxt = by_uuid.get(link) if link is not None else None
        if nxt is None or nxt.uuid in seen:
            # A lost parent, or a 1.0.x compaction summary (a root: ``parentUuid`` null, no boundary):
            # what came before is the nearest earlier record in file order.
            i = pos[id(cur)] - 1
            while i >= 0 and recs[i].uuid in seen:
                i -= 1
            nxt = recs[i] if i >= 0 else None
            breaks += nxt is not None and link is not None and cur.subtype != "compact_boundary"
        cur = nxt
    out.reverse()
    return out, breaks


def _lay_out(seg: _Segment, by_uuid: dict[str, _Rec], recs: list[_Rec], pos: dict[int, int],
             out: list[_Rec], seen: set[str]) -> _Rec | None:
    """Append (backwards) one preserved-segment compaction; return where the walk goes on.

    Forward order laid out: boundary, then summary + copies (suffix) or copies + summary (prefix).
    The walk goes on from the last content record written before the boundary: the history as it
    was when the compaction ran.
    """
    kept: list[_Rec] = []
    cur = by_uuid.get(seg.tail)
    while cur is not None and cur.uuid in seg.members and len(kept) < len(seg.members):
        kept.append(replace(cur, preserved=True))
        if cur.uuid == seg.head:
            break
        cur = by_uuid.get(cur.parent) if cur.parent else None
    summaries = list(reversed(seg.summaries))  # backwards
    for s in summaries:
        seen.add(s.uuid)
    out.extend(summaries + kept if seg.prefix else kept + summaries)
    seen.add(seg.boundary.uuid)
    out.append(seg.boundary)
    i = pos[id(seg.boundary)] - 1
    while i >= 0 and not (recs[i].kind in ("user", "assistant") and recs[i].uuid not in seen):
        i -= 1
    return recs[i] if i >= 0 else None


def _assistant(lines: list[_Rec]) -> Message:
    blocks: list[Block] = []
    use_ids: set[str] = set()
    for r in lines:
        for b in r.blocks:
            if b.type == "tool_use":
                if b.id in use_ids:  # type: ignore[union-attr]
                    continue
                use_ids.add(b.id)  # type: ignore[union-attr]
            blocks.append(b)
    usage = next((r.usage for r in reversed(lines) if r.usage is not None), None)
    model = lines[-1].model
    return Message("assistant", tuple(blocks), usage=usage, timestamp=lines[0].timestamp, id=lines[0].msg_id,
                   meta={"model": model} if model else {})


def _flatten(recs: list[_Rec]) -> str:
    """The text of preserved messages, in order (their tool calls and results written out as text)."""
    parts = []
    for r in recs:
        if r.kind == "system":
            parts.append(r.content)
            continue
        if r.kind == "attachment":
            text, _ = _attachment_text(r.attachment)
            if text:
                parts.append(text)
            continue
        for b in r.blocks:
            if isinstance(b, Text) or b.type == "thinking":
                parts.append(b.text)  # type: ignore[union-attr]
            elif isinstance(b, ToolUse):
                parts.append(f"[{r.kind} tool call {b.name}] {b.input_json()}")
            elif isinstance(b, ToolResult):
                parts.append(f"[tool result] {b.content}")
    return "\n\n".join(p for p in parts if p)


class _Passed:
    """Records counted as passed over (not sent to the model), by type (``system:<subtype>`` etc.)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def note(self, path: Path) -> str | None:
        total = sum(self.counts.values())
        if not total:
            return None
        kinds = ", ".join(f"{k} {n:,}" for k, n in self.counts.most_common())
        return (f"{path}: passed over {total:,} record(s) of {len(self.counts)} type(s) not sent to the model: "
                f"{kinds}")


def _trace(recs: list[_Rec], path: Path, session: str, side: str, versions: list[str],
           passed: _Passed) -> tuple[Trace, list[str]]:
    chain, breaks = _chain(recs)
    groups: dict[str, list[_Rec]] = {}
    results: dict[str, tuple[ToolResult, _Rec]] = {}
    for r in recs:
        if r.kind == "assistant":
            groups.setdefault(r.msg_id or r.uuid, []).append(r)
        elif r.kind == "user":
            for b in r.blocks:
                if isinstance(b, ToolResult):
                    results.setdefault(b.tool_use_id, (b, r))
    messages: list[Message] = []
    compactions: list[RecordedCompaction] = []
    emitted: set[str] = set()
    attached: set[str] = set()
    used: set[str] = set()  # uuids of records imported (on the chain, or grouped / attached to one that is)
    boundary: _Rec | None = None
    summarized: set[str] = set()  # summary records whose compaction is recorded already
    kept_run: list[_Rec] = []
    synthetic_kept = 0

    def add_user(blocks: tuple[Block, ...], r: _Rec, meta: dict[str, Any], own_id: bool = True) -> None:
        nonlocal boundary
        if boundary is not None or (r.compact_summary and r.uuid not in summarized):
            cm = boundary.compact_meta if boundary is not None else {}
            pre = cm.get("preTokens")
            summary_rec = r if r.compact_summary else next(
                (s for s in recs if s.compact_summary and boundary is not None and s.parent == boundary.uuid), None)
            text = Message("user", summary_rec.blocks).text if summary_rec is not None else ""
            if summary_rec is not None:
                summarized.add(summary_rec.uuid)
            compactions.append(RecordedCompaction(  # 1.0.x: no boundary, so no trigger recorded
                len(messages), str(cm.get("trigger") or ("auto" if boundary is not None else "unrecorded")),
                pre if isinstance(pre, int) and not isinstance(pre, bool) else None, text))
            boundary = None
        if r.compact_summary:
            meta = {**meta, "summary": True}
        messages.append(Message("user", blocks, timestamp=r.timestamp, id=r.uuid if own_id else None, meta=meta))

    def flush_kept() -> None:
        if kept_run:
            text = _flatten(kept_run)
            add_user((Text(text),) if text else (Text("[preserved messages]"),), kept_run[0],
                     {"injected": True, "preserved": True, "preserved_messages": len(kept_run)}, own_id=False)
            kept_run.clear()

    for r in chain:
        if r.preserved:
            kept_run.append(r)
            continue
        flush_kept()
        used.add(r.uuid)
        if r.kind == "assistant" and r.synthetic:
            text = Message("assistant", r.blocks).text
            if r.api_error or not text:
                passed.counts["assistant:<synthetic> API error" if r.api_error else "assistant:<synthetic> empty"] += 1
            else:
                synthetic_kept += 1
                add_user((Text(text),), r, {"injected": True, "synthetic_assistant": True})
        elif r.kind == "assistant" and (r.msg_id or r.uuid) not in emitted:
            emitted.add(r.msg_id or r.uuid)
            group = groups[r.msg_id or r.uuid]
            used.update(g.uuid for g in group)
            answer = _assistant(group)
            messages.append(answer)
            found = [results[u.id] for u in answer.tool_uses if u.id in results]
            if found:
                attached.update(b.tool_use_id for b, _ in found)
                used.update(s.uuid for _, s in found)
                stamps = [s.timestamp for _, s in found if s.timestamp is not None]
                messages.append(Message("user", tuple(b for b, _ in found), timestamp=max(stamps, default=None)))
        elif r.kind == "system" and r.subtype == "compact_boundary":
            boundary = r
        elif r.kind == "system" and r.subtype == "microcompact_boundary" and messages:
            # Claude Code cleared these tool outputs before the next call (2.1.x's legacy
            # microcompact, see strategies/claude_code/microcompact.py): the replay honours it.
            ids = r.compact_meta.get("compactedToolIds")
            cleared = tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else ()
            if cleared:
                last = messages[-1]
                messages[-1] = replace(last, meta={**last.meta, "microcompact": (
                    *last.meta.get("microcompact", ()), *cleared)})
            else:
                passed.counts["system:microcompact_boundary (no tool ids)"] += 1
        elif r.kind == "system" and r.subtype == "local_command" and r.content:
            add_user((Text(r.content),), r, {"local_command": True})
        elif r.kind == "system":
            passed.counts[(f"system:{r.subtype}" if r.subtype else "system")] += 1
        elif r.kind == "attachment":
            text, human = _attachment_text(r.attachment)
            kind = r.attachment.get("type")
            if text is None:
                known = kind in _DROPPED_ATTACHMENTS or kind in _SENT_ATTACHMENTS
                passed.counts[f"attachment:{kind}" + ("" if known else " (type unknown here)")] += 1
            else:
                add_user((Text(text),), r, {} if human else {"injected": True, "attachment": str(kind)})
        elif r.kind == "user":
            blocks = tuple(b for b in r.blocks if not (isinstance(b, ToolResult) and b.tool_use_id in attached))
            if not blocks:
                continue
            add_user(blocks, r, {"injected": True} if r.is_meta else {})
        elif r.kind != "assistant":
            passed.counts[r.kind] += 1  # progress (a link of the tree) or a later version's linked type
    flush_kept()
    if boundary is not None:  # the file ends at a boundary: nothing was sent after it
        passed.counts["system:compact_boundary (nothing after it)"] += 1
    notes = []
    messages, recorded, filled, orphans = finish(messages, compactions)
    notes += repair_notes(path, filled, orphans)
    if breaks:
        notes.append(f"{path}: {breaks} broken parentUuid link(s) bridged in file order")
    off_chain = sum(1 for k, g in groups.items() if k not in emitted and not all(r.synthetic for r in g))
    on_chain = {id(r) for r in chain}
    rest = 0  # user records off the chain (a rewound prompt, the results of a rewound call)
    for r in recs:  # records never on the chain: rewound branches, or progress/other links off it
        if r.uuid in used or id(r) in on_chain:
            continue
        if r.kind == "assistant" and r.synthetic:
            passed.counts["assistant:<synthetic> (off the main chain)"] += 1
        elif r.kind == "user":
            rest += 1
        elif r.kind != "assistant":  # an off-chain call's lines are in off_chain
            key = ((f"system:{r.subtype}" if r.subtype else "system") if r.kind == "system" else
                   f"attachment:{r.attachment.get('type')}" if r.kind == "attachment" else r.kind)
            passed.counts[key + (" (off the main chain)" if r.kind in CHAIN_TYPES else "")] += 1
    if off_chain or rest:
        what = [f"{off_chain} model call(s)"] * bool(off_chain) + [f"{rest} user record(s)"] * bool(rest)
        notes.append(f"{path}: skipped {' and '.join(what)} on branches off the main chain (rewinds)")
    models = Counter(m.meta.get("model") for m in messages
                     if m.role == "assistant" and m.meta.get("model") not in (None, SYNTHETIC))
    meta: dict[str, Any] = {"session_id": session, "version": versions[-1] if versions else None,
                            "sidechain": bool(side), "skipped_calls": off_chain,
                            **({"agent_id": side} if side else {})}
    if len(versions) > 1:
        meta["versions"] = list(versions)
    if synthetic_kept:
        meta["synthetic_messages"] = synthetic_kept
    trace = Trace(
        id=f"{session}/{side}" if side else session, messages=tuple(messages), agent=AGENT,
        model=models.most_common(1)[0][0] if models else None, source=str(path),
        compactions=recorded, meta=meta,
    )
    return trace, notes


# --- the summarizer call of a compaction (agent-acompact-*.jsonl) ------------------------------


def _is_compaction_call(side: str) -> bool:
    return side.startswith("acompact")


@dataclass(frozen=True)
class _CompactCall:
    path: Path
    usage: Usage | None
    timestamp: float | None
    text: str


def _compact_calls(recs: list[_Rec], path: Path) -> list[_CompactCall]:
    """The summarizer answers in one compaction transcript (one per file in every real one)."""
    groups: dict[str, list[_Rec]] = {}
    for r in recs:
        if r.kind == "assistant" and not r.synthetic:
            groups.setdefault(r.msg_id or r.uuid, []).append(r)
    out = []
    for g in groups.values():
        m = _assistant(g)
        out.append(_CompactCall(path, m.usage, m.timestamp, m.text))
    return out


def _summary_body(text: str) -> str:
    m = re.search(r"<summary>(.*?)(</summary>|$)", text, re.S)
    body = m.group(1) if m else re.sub(r"<analysis>.*?</analysis>", "", text, flags=re.S)
    return " ".join(body.split())


def _attach_calls(trace: Trace, calls: list[_CompactCall]) -> tuple[Trace, list[str]]:
    """Each compaction call's usage onto the recorded compaction it produced.

    Matched by text (the session's summary holds the summarizer's ``<summary>``, reformatted), else by
    time (the first compaction recorded within two minutes after the answer).
    """
    comps = list(trace.compactions)
    notes: list[str] = []
    taken: set[int] = set()
    for call in calls:
        body = _summary_body(call.text)
        probe = body[len(body) // 3: len(body) // 3 + 200] if len(body) > 60 else body
        k = next((i for i, c in enumerate(comps) if i not in taken and probe and probe in " ".join(c.summary.split())),
                 None)
        if k is None and call.timestamp is not None:
            near = [(trace.messages[c.message_index].timestamp - call.timestamp, i) for i, c in enumerate(comps)
                    if i not in taken and c.message_index < len(trace.messages)
                    and trace.messages[c.message_index].timestamp is not None
                    and 0 <= trace.messages[c.message_index].timestamp - call.timestamp <= 120]
            k = min(near)[1] if near else None
        if k is None:
            notes.append(f"{call.path}: a compaction call that matches no recorded compaction of {trace.id}; "
                         "its usage is not attached")
            continue
        taken.add(k)
        comps[k] = replace(comps[k], call_usage=call.usage)
    return replace(trace, compactions=tuple(comps)), notes


def _split_runs(recs: list[_Rec]) -> dict[str, list[_Rec]]:
    """1.0.x wrote every Task sub-agent run into the session file, marked ``isSidechain`` but with no
    ``agentId``: each run is its own tree (its prompt a root). One trace per run, ``sidechain-1``, … in
    file order (``sidechain`` when there is one), never one run kept and the others counted as rewinds."""
    by_uuid = {r.uuid: r for r in recs}
    roots: dict[str, str] = {}

    def root(r: _Rec) -> str:
        path: list[str] = []
        cur = r
        while cur.uuid not in roots and cur.parent in by_uuid and cur.uuid not in path:
            path.append(cur.uuid)
            cur = by_uuid[cur.parent]
        top = roots.get(cur.uuid, cur.uuid)
        for u in path + [cur.uuid]:
            roots[u] = top
        return top

    runs: dict[str, list[_Rec]] = {}
    for r in recs:
        runs.setdefault(root(r), []).append(r)
    content = [k for k, v in runs.items() if any(r.kind in ("user", "assistant") for r in v)]
    if len(content) <= 1:
        return {"sidechain": recs}
    out: dict[str, list[_Rec]] = {}
    for n, k in enumerate(content, start=1):
        side = f"sidechain-{n}"
        out[side] = [replace(r, side=side) for r in runs[k]]
    rest = [r for k, v in runs.items() if k not in content for r in v]
    if rest:  # links with no content of their own (progress): counted with the first run
        out["sidechain-1"] += [replace(r, side="sidechain-1") for r in rest]
        out["sidechain-1"].sort(key=lambda r: r.line)
    return out


def _read_records(path: Path, lenient: bool, skips: Skips, passed: _Passed,
                  evidence: _WindowEvidence | None) -> tuple[dict[str, list[_Rec]], str | None, list[str]]:
    parts: dict[str, list[_Rec]] = {}
    session: str | None = None
    versions: list[str] = []
    for lineno, obj in iter_jsonl(path, lenient, skips):
        try:
            rec = _parse(obj, path, lineno)
        except TraceError:
            if not lenient:
                raise
            skips.count += 1
            continue
        if session is None and isinstance(obj.get("sessionId"), str):
            session = obj["sessionId"]
        version = obj.get("version")
        if isinstance(version, str) and version not in versions[-1:]:
            if version in versions:
                versions.remove(version)
            versions.append(version)
        if evidence is not None:
            evidence.see(obj, rec, lineno)
        if rec is None:
            kind = obj.get("type")
            passed.counts[kind if isinstance(kind, str) else "untyped"] += 1
            continue
        parts.setdefault(rec.side, []).append(rec)
    return parts, session, versions


def read_file(path: Path, *, lenient: bool = False) -> ReadResult:
    path = Path(path)
    skips = Skips()
    passed = _Passed()
    evidence = _WindowEvidence()
    parts, session, versions = _read_records(path, lenient, skips, passed, evidence)
    if "sidechain" in parts:
        parts.update(_split_runs(parts.pop("sidechain")))
    result = ReadResult([], skips.count)
    calls: list[_CompactCall] = []
    for side, recs in parts.items():
        if not any(r.kind in ("user", "assistant") for r in recs):
            passed.counts.update(r.kind for r in recs)
            continue
        if _is_compaction_call(side):
            calls += _compact_calls(recs, path)
            if all(_is_compaction_call(s) for s in parts):
                parent = session or "?"
                result.notes.append(
                    f"{path}: the recorded summarizer call of a compaction in session {parent} ({len(recs)} "
                    f"records), not a session: read with {parent}.jsonl, its usage goes to that compaction")
            continue
        trace, notes = _trace(recs, path, session or path.stem, side, versions, passed)
        meta = dict(trace.meta)
        if side in evidence.found:
            meta["window_hint"], meta["window_evidence"] = "1m", evidence.found[side]
        trace = replace(trace, meta=meta)
        result.traces.append(trace)
        result.notes += notes
    main = next((i for i, t in enumerate(result.traces) if not t.meta.get("sidechain")), None)
    if main is not None:
        for sid in dict.fromkeys([path.stem, session or path.stem]):
            for f in _compaction_calls_beside(path, sid):
                try:
                    sub_parts, _, _ = _read_records(f, True, Skips(), _Passed(), None)
                except (TraceError, OSError):
                    result.notes.append(f"{f}: compaction call unreadable; its usage is not attached")
                    continue
                calls += [c for s, rs in sub_parts.items() if _is_compaction_call(s) for c in _compact_calls(rs, f)]
        if calls:
            result.traces[main], notes = _attach_calls(result.traces[main], calls)
            result.notes += notes
    note = passed.note(path)
    if note:
        result.notes.append(note)
        if main is not None:  # the file's count, on its main trace only (so a sum over traces counts it once)
            result.traces[main] = replace(result.traces[main],
                                          meta={**result.traces[main].meta, "passed_over": dict(passed.counts)})
    if not result.traces and not lenient and not calls:
        raise TraceError("no user or assistant record in a Claude Code file", path=str(path))
    return result
