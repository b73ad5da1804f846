"""Whose memory it is, and whose the question asks about: the owner's, or someone else's.

One bi-encoder puts "what sport do I play?" as close to "Melanie: what type of music do you play?"
as to "Plays five-a-side football on Thursday evenings." The words say who a memory is about: a
speaker label ("Melanie: ...", after a time as conversation turns are stored), another person's
possession ("User's partner Sam ...", "My brother ...") or the owner ("User ...", "I ...", a bare
"Plays ..."). A question says it too: "my partner", a name, or just "I" / "my". The people words
are English's closed class of relations (family, partner, friend, work), like the stopwords.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from symbiote.embedding import stamp
from symbiote.retrieval.informative import information

RELATIONS = frozenset(
    """partner wife husband spouse girlfriend boyfriend fiance fiancee mum mom mother dad father parent parents
    son daughter kid kids child children baby brother sister sibling siblings twin grandma grandmother grandpa
    family
    grandfather grandparents grandson granddaughter aunt uncle cousin niece nephew friend friends bestie
    roommate flatmate housemate neighbour neighbor boss manager colleague coworker teammate mentor
    landlord stepson stepdaughter stepmother stepfather inlaws""".split()
)
OWNER_WORDS = frozenset({"user", "i", "me", "my", "mine", "myself", "the user", "owner"})
_SPEAKER = re.compile(r"^([A-Z][a-z]+(?: [A-Z][a-z]+)?):\s")
_POSSESSOR = re.compile(r"^(?:the )?(?:user|owner)(?:'s|’s)\s+(\w+)|^my\s+(\w+)", re.IGNORECASE)
_OWNER_START = re.compile(r"^(?:the )?(?:user|owner)\b(?!'|’)|^i\b|^i'|^i’", re.IGNORECASE)
_QUERY_WORD = re.compile(r"[A-Za-z]+")
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|me|my|mine|myself|user|user's)\b", re.IGNORECASE)
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]{2,})\b")


def _relation(word: str) -> str | None:
    """The relation a word names ("sisters" -> "sister"), or None."""
    word = word.lower()
    for form in (word, word[:-1] if word.endswith("s") else word):
        if form in RELATIONS:
            return form
    return None


class Holder(NamedTuple):
    """Who a text is about: the owner, someone named or related (`who`: the name or relation), or unknown."""

    kind: str  # "owner", "other" or "unknown"
    who: frozenset[str] = frozenset()


UNKNOWN = Holder("unknown")


@lru_cache(maxsize=4096)  # the same memories come back search after search
def of_memory(text: str) -> Holder:
    body = stamp.body(text.strip())  # "3:19 pm on 8 May, 2023 Melanie: ..." is Melanie's, as "Melanie: ..." is
    speaker = _SPEAKER.match(body)
    if speaker and speaker.group(1).lower() not in OWNER_WORDS:
        name = speaker.group(1).lower()
        if information(name.split()[0]) >= 4.0:  # a name, not "Note:" or "Update:" (common words)
            return Holder("other", frozenset(name.split()))
    possessor = _POSSESSOR.match(body)
    if possessor:
        relation = _relation(possessor.group(1) or possessor.group(2))
        return Holder("other", frozenset({relation})) if relation else Holder("owner")
    if _OWNER_START.match(body):
        return Holder("owner")
    first = body.split(" ", 1)[0]
    if first[:1].isupper() and first.lower().endswith("s") and not first.lower().endswith("'s"):
        return Holder("owner")  # a bare "Plays ...", "Works ...": an assistant's note about the owner
    return UNKNOWN


def of_query(text: str) -> Holder:
    """Whom a query asks about: a relation it names ("my partner", "any siblings"), else the owner if it
    speaks in the first person ("when is my trip to Lisbon?"), else the people it names ("what did Melanie paint?")."""
    names = {m.group(1).lower() for m in _NAME.finditer(text.strip())}
    relations = {r for m in _QUERY_WORD.finditer(text) if (r := _relation(m.group(0)))}
    if relations:
        return Holder("other", frozenset(relations | names))
    if _FIRST_PERSON.search(text):
        return Holder("owner")
    return Holder("other", frozenset(names)) if names else UNKNOWN


def agreement(query: Holder, memory: Holder, memory_text: str) -> float:
    """+1 when the memory is about whom the question asks, -1 when about someone else, 0 when unknown."""
    if query.kind == "unknown" or memory.kind == "unknown":
        return 0.0
    if query.kind == "owner":
        return 1.0 if memory.kind == "owner" else -1.0
    if memory.kind == "other":  # two relations may still be one person ("siblings", "my sister")
        return 1.0 if query.who & memory.who else 0.0 if query.who <= RELATIONS else -1.0
    lowered = memory_text.lower()
    return 0.0 if any(re.search(rf"\b{re.escape(w)}", lowered) for w in query.who) else -1.0
