"""Finding what a query asks for: fusion and the relevance model (`ranking`), whether a new memory
updates an older one (`sameness`), the cohort a query's closeness is judged against
(`cohort`), vague-question topics, a query's intent and subjects.

This is the package's door: other packages import from `symbiote.retrieval`, never from a module
inside it (tests/test_layers.py checks). `ranking`, `sameness`, `succession` and `cohort` are let out whole:
their callers use them as namespaces (`ranking.judge`, `sameness.judge`, `cohort.embedded`);
so is `thresholds`, the ranking's hand-set numbers, each with where it came from.
"""

from symbiote.retrieval.informative import load_lists, make_word_table
from symbiote.retrieval.intent import Intent, intent_of
from symbiote.retrieval.subjects import mentions, subjects_of
from symbiote.retrieval.topics import TopicIndex

__all__ = [
    "Intent",
    "TopicIndex",
    "cohort",
    "intent_of",
    "load_lists",
    "make_word_table",
    "mentions",
    "ranking",
    "sameness",
    "subjects_of",
    "succession",
    "thresholds",
]
