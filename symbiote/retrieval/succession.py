"""Which memories the assistant reads answer the same question with a later value: the newer is read first.

People's facts change (a new job, a new dose, a class moved to Thursday) and the older note often
matches the question better than the one that replaced it: it says the question's words, the newer
says what changed. When a memory is stored, a link is made only when the server is sure
(`sameness`); at search time, among what one question shows, a later memory about the same thing
is shown right above the older one, and the older is marked as an earlier note on the same subject
(`newer_note`): the assistant reads both and judges which is true now. Each keeps its score on its
side of the cut-off, unless the server is sure (`Later.sure`: the two stand out from the rest, and
are as close, as two whose words alone changed must be): then a later note under the cut-off joins
the results right above the older with the older's score, as a linked replacement does, whatever
its own distance from the question (the new number says less of "my mobile number" than the old
sentence that says those words).

Decided from general signals only, no word lists: when each was stored; how close the two are in
meaning (their stored vectors, whole text and passages, and for a long note the sentences the
question and the other note are about: a fact changed in the middle of a journal entry is about
that sentence, not the entry), and how much closer to each other than to the other memories shown
beside them (in a conversation every turn is about as close as the next: none stands out); whether
they name two holders (`sameness.two_holders`: the owner's fact and a relative's are two); whether
they are two entries of one template (weekly reviews: they share more words than either changes);
whether the question names something only the older one holds (a name or a number: "Where is
Atlas deployed?" asks about Atlas, not about the other project on the same stack; "where did we
go in 2019?" asks about 2019, not about next summer's plan); and what changed: a name or a number
on each side needs less of a lead than words alone. The cosines, leads and the question's gap
were set on the fitting halves of `eval/update_lives.json` and of LoCoMo, and on facts100's
memories (docs/performance.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from symbiote.retrieval import sameness

SAME_QUESTION = 0.40  # the cosine from which two memories of one holder are about the same thing
CHANGED_LEAD = 0.10  # how much closer to each other two memories are than to the rest read: a name or number changed
WORDS_LEAD = 0.20  # ... when words alone changed ("keeping the bike after all")
WORDS_CLOSE = 0.55  # the cosine from which two whose words alone changed are about one thing, not two on a subject
QUESTION_GAP = 0.20  # how much farther from the question than the older a later note may be and answer it
RIVALS = 2  # the other memories read beside two that must stand out from them: one is no rest to stand out from
LONG_NOTE = 300  # characters from which a memory is also read by its sentences
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+")
# Two entries of one template are told apart without their values (names, days, months): "Book club
# meets on the first Tuesday", then "on the second Thursday" is one value changed. Here only: a link
# made when a memory is stored would join two projects on one stack, which a question tells apart by name.
_CAPITALISED = re.compile(r"\b[A-Z][\w'\u2019-]*")


@dataclass(frozen=True)
class Note:
    """A candidate as the rule reads it: its id, text, when it was stored, and its vectors (rows): its
    stored ones (whole text, then passages), then those of `sentences`, its sentences read apart."""

    memory_id: str
    text: str
    created_us: int
    vectors: np.ndarray
    sentences: tuple[str, ...] = ()
    replaced: bool = False  # a link names its replacement: it follows none, and none follows it

    def read_as(self, row: int) -> str:
        """The text a row of `vectors` stands for: one of `sentences`, or the whole."""
        first = len(self.vectors) - len(self.sentences)
        return self.sentences[row - first] if row >= first else self.text


def sentences(query: str, text: str, others: Sequence[str]) -> list[str]:
    """The sentences a long memory is read by beside its whole, two at most: the one holding most of
    the query's content words, and the one holding most of the words of one of `others` (the first
    on a tie: they come best first). A fact changed in the middle of a journal entry is said in the
    words of the question and of the note it changes. None for a short memory."""
    if len(text) < LONG_NOTE:
        return []
    split = [(sentence, sameness.content_words(sentence, numbers=True)) for sentence in _SENTENCE.split(text)]

    def best(groups: Sequence[str]) -> str | None:
        chosen, held = None, 0
        for other in groups:
            words = sameness.content_words(other, numbers=True)
            for sentence, said in split:
                if len(said & words) > held:
                    chosen, held = sentence, len(said & words)
        return chosen

    return list(dict.fromkeys(s for s in (best([query]), best(others)) if s is not None))


@functools.lru_cache(maxsize=1024)
def _names(text: str, first: bool) -> frozenset[str]:
    """The words `text` writes capitalised, as names are (not a sentence's first word, unless `first`:
    a query's first word is often a name, "Atlas hosting"), and its numbers: what tells one thing
    from another of the same kind (a project, a child, a year), as content words (`sameness`).
    Cached: a search reads each of its notes' texts once per pair."""
    found: set[str] = set()
    for sentence in _SENTENCE.split(text):
        for position, word in enumerate(_WORD.findall(sentence)):
            if any(ch.isdigit() for ch in word) or (word[:1].isupper() and (position or first)):
                found |= sameness.content_words(word, numbers=True)
    return frozenset(found)


def _asks_for_older(query: str, older: str, newer: str) -> bool:
    """Whether the question names something the older memory holds and the newer does not: a name
    or a number ("Where is Atlas deployed?" beside another project on the same stack; "where did we
    go in 2019?" beside next summer's plan; "when does Ella have swimming?" beside her brother's day)."""
    only_older = sameness.content_words(older, numbers=True) - sameness.content_words(newer, numbers=True)
    asked = sameness.content_words(query, numbers=True)
    named = _names(query, first=True) | (_names(older, first=False) & asked)
    return bool(only_older & named)


def same_question(
    query: str, older: Note, newer: Note, rival: float, closeness: np.ndarray | None = None
) -> float | None:
    """How much closer `newer` is to `older` than `rival` (the older's closeness to the other memories
    read beside them) when it answers the question `older` answers with what is true later, else
    None: stored later, close in meaning (any of their vectors) and standing out from the rest (in a
    conversation every turn is about as close as the next), of one holder (read in the texts closest
    to each other when one is long), not two entries of one template, and the question names nothing
    only the older one holds. A pair whose name or number changed needs less of a lead, and less
    closeness, than one whose words alone did. `closeness`: `older.vectors @ newer.vectors.T`, when
    the caller has it."""
    if newer.created_us <= older.created_us:
        return None
    if closeness is None:
        closeness = older.vectors @ newer.vectors.T
    best = float(closeness.max())
    if best < SAME_QUESTION or best - rival < min(CHANGED_LEAD, WORDS_LEAD):
        return None  # not close, or standing out by less than any change needs: the texts need no reading
    i, j = np.unravel_index(int(np.argmax(closeness)), closeness.shape)
    said_old, said_new = older.read_as(int(i)), newer.read_as(int(j))
    if sameness.two_holders(said_old, said_new) or sameness.two_entries(_unnamed(older.text), _unnamed(newer.text)):
        return None
    changed = _value_changed(said_old, said_new)
    if best - rival < (CHANGED_LEAD if changed else WORDS_LEAD) or not (changed or best >= WORDS_CLOSE):
        return None
    return None if _asks_for_older(query, older.text, newer.text) else best - rival


@functools.lru_cache(maxsize=1024)
def _unnamed(text: str) -> str:
    """`text` without its capitalised words: an entry of a template without its values (`_CAPITALISED`)."""
    return _CAPITALISED.sub(" ", text)


def _value_changed(older: str, newer: str) -> bool:
    """Whether each says a name or a number the other does not, of one thing both name in the same
    word: a value replaced ("My GP is Dr. Patel", then "New GP: Dr. Brennan"; metformin 500 mg, then
    850). Two facts of one person ("I cook on weeknights", "I work from home on Fridays"; "Lena lives
    in Hamburg", "Lena's birthday is 3 August": only the name is shared) change none; a change said in words alone ("keeping the bike after
    all") is one only when the two are as close as a link needs (`sameness.ALONE_COSINE`)."""
    old_values, new_values = _names(_unheaded(older), first=False), _names(_unheaded(newer), first=False)
    if not (old_values - new_values and new_values - old_values):
        return False
    shared = sameness.content_words(older) & sameness.content_words(newer)
    return bool(shared - old_values - new_values)  # and what has the value: "GP", "salary", "metformin"


def _unheaded(text: str) -> str:
    """`text` without the label it opens with ("8 May 2023 Melanie: Wow! ..." is read from "Wow"): a
    turn's date and speaker head it, and are no values of what it says."""
    found = sameness.LABEL.match(text)
    return text[found.end() :] if found else text


class Later(NamedTuple):
    """The later note answering the question an older one answers, and whether the server is sure:
    the two stand out from the rest, and are as close, as two whose words alone changed must be; when
    one is a long note read by its sentences, standing out is enough (a sentence says its fact among
    the entry's words, and is never as close to a short note as two short ones are)."""

    newer: str
    sure: bool  # shown above the older even across the cut-off, with its score


def later_notes(query: str, asked: np.ndarray, notes: Sequence[Note]) -> dict[str, Later]:
    """For each note a later one answers the same question for: the one standing out most (a chain
    of changes follows from one to the next). `asked`: the query's vector (unit length). Each pair's
    closeness is worked out once, and a pair is read only when the newer was stored later."""
    if len(notes) < RIVALS + 2:
        return {}
    products = [[one.vectors @ other.vectors.T for other in notes] for one in notes]
    closeness = [[float(product.max()) for product in row] for row in products]
    to_question = [float((note.vectors @ asked).max()) for note in notes]
    later: dict[str, Later] = {}
    for i, older in enumerate(notes):
        if older.replaced:
            continue
        found = []
        for j, newer in enumerate(notes):
            if newer.replaced or newer.created_us <= older.created_us:
                continue
            rival = max(c for k, c in enumerate(closeness[i]) if k not in (i, j))
            if (lead := same_question(query, older, newer, rival, products[i][j])) is None:
                continue
            sure = lead >= WORDS_LEAD and (closeness[i][j] >= WORDS_CLOSE or bool(older.sentences or newer.sentences))
            if not sure and to_question[j] < to_question[i] - QUESTION_GAP:
                continue  # the later one says nothing near what is asked: another fact of the same thing
            found.append((lead, Later(newer.memory_id, sure)))
        if found:
            later[older.memory_id] = max(found)[1]
    return later
