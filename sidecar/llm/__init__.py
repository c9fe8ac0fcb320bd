"""A generic client for OpenAI-compatible chat-completions servers (optional deeper tier)."""

from .client import LLMClient, LLMError, LLMSettings, parse_json_object

__all__ = ["LLMClient", "LLMError", "LLMSettings", "parse_json_object"]
