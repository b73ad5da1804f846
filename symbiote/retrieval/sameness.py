"""Whether a new memory is about the same thing as an older one: a duplicate, or an update of it.

People change jobs, coaches and editors; a store that shows the older fact first teaches the
assistant something no longer true. Decided from general signals only, no word lists of ours:
how close the two texts are (the cosine of their vectors), how many content words they share (a
word no typical memory uses, one of `retrieval/cohort`'s, counts twice only when a number
changed between the two: "standup" at 9:30, then at 10:00 is an update; "I prefer TypeScript" does
not update "a React app with TypeScript"), and who or what each is about when it opens with a
possessive ("My sister ...", "Mum's ...") or a label ("Melanie: ..."), and how much closer the
older one is than the other memories nearest the new one:
"My sister lives in Hamburg" and "My brother lives in Munich" have the same shape and a high
cosine, but different holders, so they are never linked. Three constants, set on the fitting half
of `eval/updates_set.json` and LoCoMo conversation 26 (docs/performance.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Literal

from symbiote.retrieval import cohort
from symbiote.retrieval import holders as whose
from symbiote.storage import query_terms

SHARED_COSINE = 0.45  # the cosine from which two memories sharing two content words are about one thing
ALONE_COSINE = 0.70  # the cosine from which they are, whatever words they share
STANDOUT = 0.15  # how much closer than the other nearest memories the older one must be
OPENING_TOKENS = 3  # a possessive this close to the start names what the memory is about
JUDGED_CHARS = 4000  # what a memory says about its subject is in its head (the whole text's vector reads less)
# Offers (`may_replace`): what the rule above is not sure of, for the assistant to confirm. Set on
# the fitting half, its update-free stores and LoCoMo conversation 26 (docs/performance.md, issue 41).
OFFER_COSINE = 0.30  # the cosine from which an older memory of the same holder that stands out may be an earlier value
OFFER_STANDOUT = 0.15  # how much closer than the other nearest an offered memory must be

LinkKind = Literal["update", "duplicate"]

_TOKEN = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+(?:['\u2019]s?)?")
_POSSESSORS = frozenset({"my", "our", "his", "her", "their", "your"})
LABEL = re.compile(r"^[^:\n]{0,40}?\b([A-Za-z][\w'\u2019-]*)\s*:(?!\d)")  # "Melanie: ...", "Goal: ..."


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


@functools.lru_cache(maxsize=512)
def content_words(text: str, numbers: bool = False) -> frozenset[str]:
    """The text's content words (of its first JUDGED_CHARS), crudely stemmed ("coaches" and "coach"
    are one word). Numbers are values, not what a memory is about: left out unless asked for.
    Cached: storing judges each of its nearest memories several ways, a batch each item against many."""
    words = query_terms(text[:JUDGED_CHARS])
    return frozenset(_stem(word) for word in words if numbers or not any(ch.isdigit() for ch in word))


@functools.cache
def common_words() -> frozenset[str]:
    """The content words typical memories use (the background's): shared, they say little."""
    return frozenset(word for text in cohort.texts() for word in content_words(text))


def holders(text: str) -> frozenset[str]:
    """Whom or what the memory opens by naming as the holder: "my sister", "Mum's", "Leo's"."""
    tokens = _TOKEN.findall(text[:200])[: OPENING_TOKENS + 1]
    found: set[str] = set()
    for position, token in enumerate(tokens[:OPENING_TOKENS]):
        word = token.lower().replace("\u2019", "'")
        if word.endswith(("'s", "s'")):  # "Mum's", "parents'"; not "doesn't"'s "doesn'"
            found.add(_stem(word.split("'", 1)[0]))
        elif word in _POSSESSORS and position + 1 < len(tokens):
            found.add(_stem(tokens[position + 1].lower().split("'", 1)[0].split("\u2019", 1)[0]))
    return frozenset(found - {""})


def names(text: str) -> frozenset[str]:
    """The name an opening holder is given right after its noun ("User's sister Inês", "my coach
    Mark"): "User's sister Inês" and "User's sister Anna" are two sisters. Only after a plain
    lower-case noun ("my brother's Toyota" names a car, not a person)."""
    tokens = _TOKEN.findall(text[:200])[: OPENING_TOKENS + 2]
    found: set[str] = set()
    for position, token in enumerate(tokens[:OPENING_TOKENS]):
        word = token.lower().replace("\u2019", "'")
        if not (word.endswith(("'s", "s'")) or word in _POSSESSORS) or position + 2 >= len(tokens):
            continue
        noun, name = tokens[position + 1], tokens[position + 2]
        if noun.islower() and "'" not in noun and "\u2019" not in noun and name[:1].isupper():
            found.add(_stem(name.lower()))
    return frozenset(found)


def label(text: str) -> str | None:
    """The label before a colon a memory opens with, if any ("Melanie: ...", a speaker's turn)."""
    found = LABEL.match(text)
    return found.group(1).lower() if found else None


def stands_out(cosine: float, rivals: Sequence[float], by: float | None = None) -> bool:
    """Whether the older memory is clearly closer to the new one than the other memories nearest
    it (their cosines), by STANDOUT (a link) or `by`: in a conversation every turn is about as close
    as the next, and none updates another."""
    return not rivals or cosine - max(rivals) >= (STANDOUT if by is None else by)


def offer_stands_out(cosine: float, rivals: Sequence[float]) -> bool:
    """`stands_out` for an offer, which the assistant confirms: by OFFER_STANDOUT."""
    return stands_out(cosine, rivals, OFFER_STANDOUT)


def judge(older: str, newer: str, cosine: float) -> LinkKind | None:
    """Whether `newer` is a "duplicate" of `older` (one says what the other says, perhaps with
    more), an "update" (the same thing, said otherwise: a new value), or neither (None)."""
    old_words, new_words = content_words(older), content_words(newer)
    if not old_words or not new_words:
        return None
    labels = label(older), label(newer)
    if labels[0] and labels[1] and labels[0] != labels[1]:
        return None  # two speakers' turns, two people's notes
    if _holders_differ(older, newer, old_words, new_words) or two_entries(older, newer):
        return None
    both = old_words & new_words - {_stem(word) for word in labels if word}  # a label is a header
    old_values = content_words(older, numbers=True) - old_words
    new_values = content_words(newer, numbers=True) - new_words
    changed = bool(old_values) and bool(new_values) and old_values != new_values
    shared = len(both) + (len(both - common_words()) if changed else 0)  # a rare subject whose number changed
    if not ((shared >= 2 and cosine >= SHARED_COSINE) or cosine >= ALONE_COSINE):
        return None
    old_all, new_all = content_words(older, numbers=True), content_words(newer, numbers=True)
    if old_all <= new_all or new_all <= old_all:  # a number changed is a new value, not a detail
        return "duplicate"
    return "update"


def two_entries(older: str, newer: str) -> bool:
    """Whether the two are two entries written to one template or in one long shared vocabulary
    (weekly reviews, journal days) rather than one fact said again with a new value: they share more
    content words than either changes, and each changes more than one. One value changed, or only
    numbers, is an update of such an entry."""
    old_words, new_words = content_words(older), content_words(newer)
    shared, gone, come = old_words & new_words, old_words - new_words, new_words - old_words
    return len(shared) > max(len(gone), len(come)) and min(len(gone), len(come)) >= 2


def may_be_same(older: str, newer: str, cosine: float) -> bool:
    """Whether `older` may hold an earlier value of what `newer` says: close enough by meaning, and
    neither names another holder or speaker. Looser than `judge`: telling a new value from another
    fact ("Koramangala" then "Whitefield") takes understanding the vectors lack, so it is offered."""
    return cosine >= OFFER_COSINE and one_holder(older, newer)


def one_holder(older: str, newer: str) -> bool:
    """Whether the two may be about one holder: neither names another holder or speaker."""
    labels = label(older), label(newer)
    if labels[0] and labels[1] and labels[0] != labels[1]:
        return False
    return not _holders_differ(older, newer, content_words(older), content_words(newer))


def two_holders(older: str, newer: str) -> bool:
    """Whether the two name two holders, as a search reads them (looser than a link's `one_holder`,
    which a link made unasked needs): two speakers, two names for one noun, the owner's fact and a
    relative's, or each opening with a holder ("my sister", "my brother") the other never mentions.
    "My mobile number is ..." and "New phone number: ..." have one: only one names a holder."""
    labels = label(older), label(newer)
    if labels[0] and labels[1] and labels[0] != labels[1]:
        return True
    older_names, newer_names = names(older), names(newer)
    if older_names and newer_names and not older_names & newer_names:
        return True
    if not any(labels) and whose.agreement(whose.of_memory(older), whose.of_memory(newer), newer) < 0:
        return True
    old_words, new_words = content_words(older), content_words(newer)
    return bool(holders(older) - new_words and holders(newer) - old_words)


def _holders_differ(older: str, newer: str, old_words: frozenset[str], new_words: frozenset[str]) -> bool:
    """True when either memory opens by naming a holder the other never mentions, or both name
    their holder's noun by two different names."""
    older_names, newer_names = names(older), names(newer)
    if older_names and newer_names and not older_names & newer_names:
        return True
    unlabelled = not label(older) and not label(newer)  # a label ("Strings: ...") is compared apart
    if unlabelled and whose.agreement(whose.of_memory(older), whose.of_memory(newer), newer) < 0:
        return True  # "User is a nurse." and "User's sister is a nurse.": the owner's, and the sister's
    return any(holder not in new_words for holder in holders(older)) or any(
        holder not in old_words for holder in holders(newer)
    )


def fuller_is_newer(older: str, newer: str) -> bool:
    """Of two duplicates, whether the newer says more (ties: the newer, as it is the later word)."""
    return len(content_words(newer)) >= len(content_words(older))
