"""Conversation context: the recent threads of a channel (`channel_context`) and a compressed recent
history of a channel or a user (`history`, the pyramid), rendered as prompt-ready blocks."""

from .service import ConversationService
from .threads import cut_words

__all__ = ["ConversationService", "cut_words"]
