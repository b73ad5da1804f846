"""The ranking's hand-set numbers, in one place, each with where it came from.

The relevance model's weights are fitted and kept as data (`relevance_model.json`, refit by
`eval/calibrate_relevance.py`); these are the numbers set by hand around it: how many candidates a
search gathers, how they are fused before the model sees them (`storage.fusion`, sent down by
`ranking.fusion`), what the model's features are measured against, and the cut-off after it. Each
moves scores: `eval/owners_eval.py` and `eval/personal_set.py` show by how much (docs/performance.md).
"""

# Gathering: what a search asks of the store, in its one trip (`memory/searching`).
CANDIDATES = (
    50  # nearest memories and keyword matches, each, before fusion: set by hand, with room for the 3 * limit read
)
TOPIC_CANDIDATES = 10  # a vague question's topic members joining them: set by hand, with the topics (performance.md, "Vague questions")
SUBJECT_POOL = 20  # a request's leading candidates among which its subject's members are marked: their texts are read anyway (performance.md, "Subjects")

# Fusion, in the store (`storage/fusion`): cosine + KEYWORD_WEIGHT * bm25 share + TOPIC_BOOST * topic share.
KEYWORD_WEIGHT = (
    0.4  # a weighted sum beat reciprocal rank fusion on LoCoMo, recall@5 0.63 against 0.49-0.59 (performance.md)
)
TOPIC_BOOST = (
    0.25  # a topic member's lift: set by hand with the topics; the model weighs membership itself since issue 40
)
SEMANTIC_FLOOR = 0.25  # below this cosine, meaning alone is not why a memory matched (`matched_by`): set by hand

# The model's features: what they are measured against (`ranking`, `topics`, `background`).
TOPIC_GATE = 0.5  # cosine to a topic's questions from which a query is about it: raised from 0.45 with the first-person questions (performance.md)
SUBJECT_STRENGTH = (
    1.0  # how surely a word naming a subject makes a request about it: full, the subjects' lists are hand-made
)
RIVAL_SPAN = 1.0  # candidates whose evidence is this close (in log-odds) are rivals: set by hand, one unit
MIN_SPREAD = (
    0.02  # the least spread of a query's background cosines: a query whose cosines barely vary is not judged on noise
)

# After the model: what a search shows (`memory/searching`, the console's default).
RELEVANCE_CUTOFF = 30.0  # a calibrated chance of 30 %: hides what the model cannot tell from its neighbours (performance.md, "Shown and offered")
