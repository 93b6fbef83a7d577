"""OpenHands condensers, one module each: LLM summarizing (V1 SDK and V0: ``summarizing``),
observation masking (``masking``), recent events (``recent``), amortized forgetting (``amortized``);
what they share (V0's conversation-memory ``render``, the sent-view base) is in ``_common``.

OpenHands counts *events*. We map one event to one message: an assistant message with tool
calls is the action, the user message with their results is the observation, a human message
is a MessageAction, the system prompt is event 0. V0 renders the condensed view through its
conversation memory, which (a) puts the system prompt and the initial user message back when
they were forgotten and (b) drops an assistant tool call whose result is gone (a pending call
is only emitted once all its results arrive) and any result without its call; ``render``
reproduces both. Masking and recent-events act on the view every step (sent only); the rolling
condensers forget events from the stored history.

Sources: V0 OpenHands/OpenHands@d6fab190 openhands/memory/condenser/impl/*.py and
openhands/memory/conversation_memory.py; V1 OpenHands/software-agent-sdk@611629e6
openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py (``_common.V0``, ``_common.V1``).
"""
