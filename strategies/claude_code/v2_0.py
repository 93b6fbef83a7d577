"""Claude Code 2.0 up to 2.1.20 (registry ``claude-code:2.0``; from 2.1.17 ``claude-code:2.1.17``, the same
with the legacy microcompact, strategies/claude_code/microcompact.py): the 1.0 rules, plus invoked skills.

- Trigger unchanged: reserve = Claude Code's max-output setting, 32K, uncapped (``reserve_cap=
  32_000``) -> 155,000 on 200K. Data: every recorded 2.0.76-2.1.20 auto compaction fired there.
- Skills: each skill body the session loaded (the ``isMeta`` user message "Base directory for this
  skill: ..." after a ``Skill`` call or a typed /skill, which the importer marks ``injected``), cut
  to 5K tokens, 25K together (POST_COMPACT_MAX_TOKENS_PER_SKILL, POST_COMPACT_SKILLS_TOKEN_BUDGET as
  quoted by public analyses of the 2026 source). Skills exist from 2.0.20 (CHANGELOG L4954); since
  when they are re-injected is not known: 2.1.45 (L4042) fixes a bug of the re-injection, so it
  existed then; the 2.1.20 session's first post-compaction prompt leaves no room for its 2.1K-token
  skill, so the registry turns it on from 2.1.21 (``restore_skills``). Low-medium confidence.
"""

from __future__ import annotations

from bench.context import Message
from strategies._tools import text_user
from strategies.claude_code.common import SKILL_TRUNCATED, _FileKnowledge
from strategies.claude_code.v1_0 import Rules10


class Rules20(Rules10):
    """Skills re-injected after compacting, when ``restore_skills`` is on."""

    def _skills_restored(self, know: _FileKnowledge) -> list[Message]:
        if self.restore_skills and know.skills:
            return [self._skill_attachment(know.skills)]
        return []

    def _skill_attachment(self, skills: dict[str, str]) -> Message:
        """Invoked skills, newest first, each cut to its limit, together within the budget."""
        parts, used = [], 0
        for name, body in list(skills.items())[::-1]:
            cap = self.restore_skill_tokens * 4
            body = body if len(body) <= cap else body[:cap] + SKILL_TRUNCATED
            if used + len(body) / 4 > self.restore_skills_total:
                break
            used += len(body) / 4
            parts.append(f"### Skill: {name}\n\n{body}")
        return text_user("Skills loaded earlier in this session (their instructions still apply):\n\n"
                         + "\n\n---\n\n".join(parts), synthetic=True)
