"""Gemini CLI tool-output masking (google-gemini/gemini-cli@5411f113
packages/core/src/context/toolOutputMaskingService.ts, since v0.29.0): past the newest 50K tokens of
tool output, older function responses become a short preview and the path of a file holding them.
``OutputMasking.mask`` is ``GeminiCli``'s step after the compression check, on its ``mask_*`` fields.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING

from bench.context import Context, Message, Outcome, ToolResult, ToolUse, event, starts_with
from strategies._tools import last_assistant_index
from strategies.gemini_cli._common import COMMIT, _with_blocks, _with_content

if TYPE_CHECKING:
    from bench.context import Session


MASKING_SRC = f"google-gemini/gemini-cli@{COMMIT} packages/core/src/context/toolOutputMaskingService.ts"
MASKED_TAG = "tool_output_masked"
"""MASKING_INDICATOR_TAG (toolOutputMaskingService.ts l.28): a part holding it is masked already."""
MASK_EXEMPT = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})
"""EXEMPT_TOOLS (l.36-41; names from tools/definitions/base-declarations.ts l.97-119): never masked."""
SHELL_TOOL = "run_shell_command"
"""SHELL_TOOL_NAME (base-declarations.ts l.56): its masked preview keeps the shell sections."""
MASK_DIR = "/home/user/.gemini/tmp/project/tool-outputs/session-replay"
"""Where the CLI saves a masked output (l.163-171: the project's temp dir, tool-outputs, session-<id>);
the real path depends on the user's machine, so a fixed stand-in of a typical length."""
_SHELL_SECTION = re.compile(r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M)


def response_tokens(name: str, content: str) -> int:
    """tokenCalculation.ts estimateTokenCountSync([part]) of one functionResponse part
    (estimateFunctionResponseTokens: the tool's name plus JSON.stringify(response), 4 characters a
    token, floored), the response being ``{output: content}``."""
    return (len(name) + len(json.dumps({"output": content}, ensure_ascii=False, separators=(",", ":")))) // 4


def _simple_preview(text: str) -> str:
    """formatSimplePreview (l.350-358): up to 20 lines whole, else the first and last 10."""
    lines = text.split("\n")
    if len(lines) <= 20:
        return text
    return "\n".join(lines[:10]) + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n" + "\n".join(lines[-10:])


def _shell_preview(text: str) -> str:
    """formatShellPreview (l.292-348) of a shell output: its sections (shell.ts's "Output: ",
    "Exit Code: ", ...) with the output cut to a simple preview and the others whole."""
    parts = _SHELL_SECTION.split(text)
    if len(parts) < 3:
        return _simple_preview(text)
    out = [_simple_preview(parts[0].strip())] if parts[0].strip() else []
    for i in range(1, len(parts), 2):
        section = parts[i + 1].strip() if i + 1 < len(parts) else ""
        out.append(f"Output: {_simple_preview(section)}" if parts[i] == "Output" else f"{parts[i]}: {section}")
    return "\n".join(out)


def masked_snippet(name: str, call_id: str, content: str) -> str:
    """The text a masked output is replaced by (mask l.192-231, formatMaskedSnippet l.360-367): a
    preview (shell: its sections; other tools: the first and last 250 characters of the response as
    JSON.stringify(response, null, 2) once that is over 500) and where the whole output was saved."""
    if name == SHELL_TOOL:
        preview = _shell_preview(content)
    else:
        whole = '{\n  "output": ' + json.dumps(content, ensure_ascii=False) + "\n}"
        preview = f"{whole[:250]}\n... [TRUNCATED] ...\n{whole[-250:]}" if len(whole) > 500 else whole
    safe = re.sub(r"[^a-z0-9_.-]", "_", f"{name or 'unknown_tool'}_{call_id}".lower())
    salt = hashlib.sha256(call_id.encode("utf-8", "replace")).hexdigest()[:5]  # Math.random().toString(36)
    return (f"<{MASKED_TAG}>\n{preview}\n\nOutput too large. Full output available at: "
            f"{MASK_DIR}/{safe}_{salt}.txt\n</{MASKED_TAG}>")


class OutputMasking:
    """``GeminiCli``'s tool-output masking (its ``mask_*`` fields set it)."""

    if TYPE_CHECKING:
        mask_protect_tokens: int
        mask_min_prunable_tokens: int
        mask_protect_latest_turn: bool

    # -- tool-output masking (toolOutputMaskingService.ts) ------------------------------------------
    def mask(self, ctx: Context, session: Session) -> Outcome | None:
        """ToolOutputMaskingService.mask (l.68-270) over the chat history before this request.

        Walking back from the newest Content (the last one skipped, ``mask_protect_latest_turn``),
        function responses not masked yet and not of an exempt tool add up; the newest
        ``mask_protect_tokens`` of them are protected, and the one that crosses that line and every
        older one are prunable. Only when the prunable ones total ``mask_min_prunable_tokens`` are
        they masked, each replaced by ``masked_snippet`` where that saves tokens (l.233-242). The CLI
        keeps the masked history, so a masked output stays masked and counts no more.

        Cheap on the calls where nothing is masked: the unmasked total over the history is kept
        across calls (a history that only grew adds its new messages; another one keeps the counts of
        the outputs it still holds), and the protected part is
        found by a walk over the newest outputs only; the whole history is walked when it masks.
        """
        msgs = ctx.messages
        head = 1 if ctx.system else 0
        step = last_assistant_index(msgs) + 1  # the request (this step's messages) is not history yet
        end = step - 1 if self.mask_protect_latest_turn else step
        if end <= head:
            return None
        names, parts, seen = session.state.setdefault("gemini_mask", ({}, {}, [(), 0]))
        region = msgs[head:end]
        for m in msgs[len(seen[0]) + head if starts_with(region, seen[0]) else head:step]:
            for b in m.blocks:
                if isinstance(b, ToolUse):
                    names[b.id] = b.name

        def tokens(b: ToolResult) -> int:  # 0: exempt or masked already
            hit = parts.get(id(b))
            if hit is None or hit[0] is not b:
                name = names.get(b.tool_use_id, "")
                n = 0 if name in MASK_EXEMPT or f"<{MASKED_TAG}" in b.content else response_tokens(name, b.content)
                hit = parts[id(b)] = (b, n, name)
            return hit[1]

        def held(m: Message) -> int:
            return sum(tokens(b) for b in m.blocks if isinstance(b, ToolResult)) if m.role == "user" else 0

        previous, total = seen
        if previous and starts_with(region, previous):
            total += sum(map(held, region[len(previous):]))
        else:  # another history (a compression, a mask): what it still holds is kept, the rest let go
            kept = {id(b): hit for m in region if m.role == "user" for b in m.tool_results
                    if (hit := parts.get(id(b))) is not None and hit[0] is b
                    and hit[2] == names.get(b.tool_use_id, "")}  # a count the name it was taken under gives
            parts.clear()
            parts.update(kept)
            total = sum(map(held, region))
        seen[:] = [region, total]
        if total < self.mask_min_prunable_tokens:
            return None
        protected = 0
        for m in reversed(region):  # the newest outputs until the protection line is crossed
            if not held(m):
                continue
            for b in reversed(m.blocks):
                if isinstance(b, ToolResult) and (n := tokens(b)):
                    if protected + n > self.mask_protect_tokens:
                        break
                    protected += n
            else:
                continue
            break
        if total - protected < self.mask_min_prunable_tokens:
            return None
        out, masked, saved, cum = list(msgs), 0, 0, 0
        for i in range(end - 1, head - 1, -1):
            m = msgs[i]
            if not held(m):
                continue
            blocks = list(m.blocks)
            for j in range(len(blocks) - 1, -1, -1):
                b = blocks[j]
                if not isinstance(b, ToolResult) or not (n := tokens(b)):
                    continue
                cum += n
                if cum <= self.mask_protect_tokens:
                    continue
                name = names.get(b.tool_use_id, "")
                snippet = masked_snippet(name, b.tool_use_id, b.content)
                gain = n - response_tokens(name, snippet)
                if gain > 0:
                    blocks[j] = _with_content(b, snippet)
                    masked, saved = masked + 1, saved + gain
            if blocks != list(m.blocks):
                out[i] = _with_blocks(m, tuple(blocks))
        if not masked:
            return None
        after = ctx.replace(out)
        return Outcome(after, (event("mask", ctx, after, touched=masked,
                                     detail=f"tool outputs masked: {masked}, ~{saved:,} tokens saved by the "
                                            f"CLI's estimate ({total - protected:,} prunable)"),))
