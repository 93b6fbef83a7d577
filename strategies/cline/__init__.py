"""Cline, both generations: the VS Code extension's ContextManager (``cline-half``,
``cline-quarter``: drop a growing middle range of the history after removing duplicate file reads,
spec/strategies.md §2.2-2.4; ``context_manager``) and the 2026 SDK's summary compaction
(``cline:sdk``, §2.7; ``sdk``). What both read (the file-read tools, a call's path) is in ``_common``.

Sources: cline/cline @94f5a47a59d4de809463911aad9b9672ab1cbbbf apps/vscode/src/core/context/
context-management/ContextManager.ts (extension); cline/cline @21cb8d2525bcedf1f4b6890b27a74a14fe7451e4
sdk/packages/core/src/extensions/context/compaction.ts (SDK).
"""
