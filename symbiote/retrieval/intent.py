"""Whether a query asks for a fact or for help: the two want different memories.

"What's my dog called?" is answered by one memory or by none, and the nearest memory about
something else is no answer. "Help me write a script" is answered by no memory: it wants the
person's standing preferences, projects and constraints on its subject, which only share the
subject with it. So a question is scored as a question (is the answer stored?) and a request,
a statement or a bare phrase also as a request for context (is its subject stored?). The test
is on the words a person types; a question that asks for advice ("what should I cook?") is a
request.
"""

from __future__ import annotations

import re
from typing import Literal

Intent = Literal["question", "request"]

_FILLER = re.compile(r"^(?:(?:hey|hi|hello|ok|okay|so|um|uh|well|btw|yo|please|pls|quick question)\b[\s,:;!.-]*)+")
_QUESTION_START = re.compile(
    r"^(?:what|what's|whats|who|who's|whom|whose|where|where's|when|when's|which|why|how|how's|"
    r"is|are|am|was|were|do|does|did|have|has|had|will|would|can|could|should|shall|may|might)\b(?!')"
)
_ADVICE = re.compile(
    r"^(?:"
    r"(?:what|which|where|how|when)\b[^?]*?\b(?:should|could|can|shall|might)\s+(?:i|we)\b"  # what should I cook?
    r"|(?:what|which)(?:'s| is| are| would be)?\s+(?:a|an|some|the)?\s*(?:good|nice|fun|great|best|easy|quick|cheap)\b"
    # how do I fix ...? (not "how do I take my coffee?", a question about the person)
    r"|how\s+(?:do|would|to)\s+(?:i|we|you)\s+(?!like\b|take\b|usually\b)"
    r"|how\s+to\b"
    r"|(?:can|could|would|will)\s+you\b"  # can you write ...?
    r"|(?:should|shall)\s+(?:i|we)\b"
    r"|any\s+(?:ideas?|suggestions?|tips?|recommendations?|thoughts?|advice)\b"
    r"|got\s+any\b"
    r")"
)


def intent_of(text: str) -> Intent:
    """'question' for a question about something (answered by a memory or by none), else 'request'."""
    words = _FILLER.sub("", text.strip().lower().replace("\u2019", "'"))
    if _ADVICE.match(words):
        return "request"
    if _QUESTION_START.match(words) or words.rstrip().endswith("?"):
        return "question"
    return "request"
