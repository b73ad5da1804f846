"""The kinds of things an assistant remembers about a person, for vague questions.

"What am I building?" and "I'm working on a React app with TypeScript and authentication"
share no word and are unrelated in MiniLM's embedding space: neither retriever can connect
them. But the question is recognisably about the person's projects, and the memory
recognisably is one.
Each topic here has a few generic ways of asking about it (embedded once) and words that
memories of that kind tend to contain (matched by the keyword index, porter-stemmed). When a
query is close enough to a topic's questions, the memories carrying its words join the
candidates. The lists are generic on purpose: none is taken from an evaluation set except the
seed question the product spec names. Each topic is asked about in the third person, as an
assistant asks, and in the first person, as people type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from symbiote.retrieval.thresholds import TOPIC_GATE

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np


TOPICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "projects": (
        (
            "what am I building?",
            "what project is the user busy with?",
            "what is the user developing at the moment?",
            "what projects am I busy with?",
            "what are my projects?",
        ),
        ("working", "build", "project", "app", "develop", "prototype", "startup", "website", "side"),
    ),
    "job": (
        (
            "what does the user do for a living?",
            "tell me about the user's employer",
            "what do I do for work?",
            "where do I work?",
        ),
        ("work", "job", "engineer", "manager", "company", "career", "employer", "office", "colleague"),
    ),
    "family": (
        ("who are the user's relatives?", "tell me about the user's family members", "who are my relatives?"),
        (
            "sister",
            "brother",
            "mother",
            "mom",
            "father",
            "dad",
            "partner",
            "wife",
            "husband",
            "daughter",
            "son",
            "kids",
            "children",
            "parents",
            "family",
        ),
    ),
    "pets": (
        ("tell me about the user's animals", "does the user own a pet?", "tell me about my pets"),
        ("dog", "cat", "pet", "puppy", "kitten", "horse", "rabbit", "parrot"),
    ),
    "food": (
        (
            "what food does the user enjoy?",
            "what are the user's eating habits?",
            "what do I like to eat?",
            "what are my food preferences?",
        ),
        (
            "eat",
            "food",
            "vegetarian",
            "vegan",
            "cuisine",
            "coffee",
            "tea",
            "recipe",
            "diet",
            "dinner",
            "lunch",
            "breakfast",
            "cook",
        ),
    ),
    "health": (
        (
            "what health conditions does the user have?",
            "anything medical to know about the user?",
            "do I have any health issues?",
        ),
        ("allergic", "allergy", "diabetes", "medication", "doctor", "asthma", "health", "illness", "therapy"),
    ),
    "fitness": (
        ("how does the user exercise?", "what sport does the user do?", "how do I stay fit?"),
        ("run", "marathon", "gym", "swim", "training", "fitness", "football", "sport", "yoga", "cycling"),
    ),
    "hobbies": (
        (
            "what does the user do in their free time?",
            "what are the user's pastimes?",
            "what pastimes do I have?",
            "what do I do in my spare time?",
        ),
        ("play", "guitar", "piano", "hobby", "paint", "game", "garden", "photography", "knit"),
    ),
    "media": (
        (
            "what does the user like to read or watch?",
            "the user's taste in music and films",
            "what books, films and music do I like?",
        ),
        ("book", "novel", "author", "film", "movie", "music", "band", "series", "podcast"),
    ),
    "home": (
        ("where is the user's home?", "what city is the user in?", "which city do I call home?"),
        ("live", "moved", "city", "flat", "apartment", "house", "neighbourhood"),
    ),
    "travel": (
        ("what trips is the user planning?", "how does the user prefer to travel?", "where am I travelling next?"),
        ("fly", "flight", "travel", "trip", "holiday", "vacation", "hotel", "train"),
    ),
    "goals": (
        ("what does the user want to achieve?", "what are the user's plans for the future?", "what am I aiming for?"),
        ("goal", "want", "plan", "saving", "preparing", "dream", "hope"),
    ),
    "schedule": (
        (
            "what is on the user's calendar?",
            "what are the user's routines during the week?",
            "what is on my calendar?",
            "what is my daily routine?",
        ),
        (
            "monday",
            "tuesday",
            "wednesday",
            "thursday",
            "friday",
            "saturday",
            "sunday",
            "weekly",
            "every",
            "meeting",
            "appointment",
        ),
    ),
    "dates": (
        ("what dates matter to the user?", "which dates should I remember?"),
        ("birthday", "anniversary", "deadline", "due"),
    ),
    "tech": (
        (
            "which technologies does the user work with?",
            "what software does the user rely on?",
            "which languages and tools do I use?",
        ),
        ("use", "editor", "framework", "database", "language", "library", "tool", "cloud"),
    ),
    "decisions": (
        ("what technical choices were made?", "which options did the team choose?", "what have we decided?"),
        ("decided", "chose", "choose", "instead", "switched", "picked"),
    ),
    "finance": (
        ("what is the user's financial situation?", "how does the user handle money?", "how are my finances?"),
        ("saving", "budget", "money", "invest", "deposit", "salary", "loan", "mortgage"),
    ),
    "learning": (
        ("what is the user trying to learn?", "which courses is the user taking?", "which courses am I taking?"),
        ("learning", "course", "exam", "study", "practise", "practice", "class", "lesson"),
    ),
    "preferences": (
        (
            "what does the user like?",
            "what are the user's preferences?",
            "what does the user love or hate?",
            "what are my likes and dislikes?",
        ),
        ("love", "like", "enjoy", "prefer", "favourite", "favorite", "hate", "dislike", "fan"),
    ),
    "style": (
        (
            "how does the user want the assistant to respond?",
            "the user's preferences for writing and code style",
            "how do I like answers written?",
        ),
        ("prefers", "prefer", "style", "format", "tone"),
    ),
    "people": (
        ("who does the user work with?", "who are the user's friends?", "who are my friends and colleagues?"),
        ("manager", "colleague", "friend", "team", "boss", "mentor"),
    ),
    "devices": (
        ("what devices does the user own?", "what devices do I use?"),
        ("laptop", "phone", "computer", "tablet", "watch", "headphones"),
    ),
}


@dataclass(frozen=True)
class TopicMatch:
    name: str
    activation: float  # the query's cosine to the topic's nearest question
    keywords: tuple[str, ...]


class TopicIndex:
    """The topics' question vectors; embedded once, then a matrix product per query."""

    def __init__(self, question_vectors: np.ndarray) -> None:
        import numpy as np

        self._vectors = question_vectors
        self._owner = np.array([i for i, (questions, _) in enumerate(TOPICS.values()) for _ in questions])
        self._names = list(TOPICS)

    @staticmethod
    def questions() -> list[str]:
        return [q for questions, _ in TOPICS.values() for q in questions]

    def match(self, query_vector: np.ndarray) -> TopicMatch | None:
        import numpy as np

        sims = self._vectors @ query_vector
        best = int(np.argmax(sims))
        if float(sims[best]) < TOPIC_GATE:
            return None
        name = self._names[int(self._owner[best])]
        return TopicMatch(name, float(sims[best]), TOPICS[name][1])
