"""What the load clients write and ask: varied, unique memory texts and everyday queries."""

from __future__ import annotations

import random

SUBJECTS = [
    "The user",
    "My sister Ana",
    "Our team lead Marco",
    "The landlord",
    "Grandma",
    "The dentist",
    "Priya from work",
    "The cat",
    "Our neighbour Tom",
    "The accountant",
    "My running club",
    "The kids' school",
    "Dad",
    "The client in Lyon",
]
VERBS = [
    "prefers",
    "decided on",
    "is allergic to",
    "asked about",
    "is learning",
    "wants to avoid",
    "recommended",
    "booked",
    "is worried about",
    "finished",
    "plans to try",
    "keeps forgetting",
    "loves",
    "cancelled",
]
OBJECTS = [
    "oat milk in coffee",
    "the Rust rewrite of the billing service",
    "a trip to Lisbon in May",
    "shellfish",
    "learning the cello",
    "meetings before ten",
    "the blue tent for camping",
    "a standing desk",
    "Kubernetes upgrades",
    "the Thai place on Elm Street",
    "tax forms due in April",
    "a half marathon in October",
    "dark mode everywhere",
    "the Postgres migration",
    "piano lessons on Tuesdays",
    "a new laptop with 32 GB",
    "gluten-free bread",
    "the quarterly board deck",
    "sourdough baking",
    "a dentist appointment on the 14th",
    "the React dashboard",
]
REASONS = [
    "because it is cheaper",
    "after the last outage",
    "since the doctor said so",
    "for the holidays",
    "to save time",
    "because the old one broke",
    "at the team's request",
    "for the kids",
    "after reading a review",
    "",
]
TAGS = ["family", "work", "health", "food", "travel", "project", "preference", "finance", "hobby", "decision"]
QUERIES = [
    "food preferences",
    "what is the user allergic to",
    "current projects at work",
    "travel plans",
    "health",
    "family members",
    "hobbies and learning",
    "upcoming appointments",
    "decisions about infrastructure",
    "what does Marco want",
    "money and taxes",
    "sports and running",
    "music lessons",
    "home and neighbours",
    "laptop and hardware",
    "frontend dashboard",
    "database migration",
    "what did the user cancel",
    "coffee",
    "Lisbon",
]


class Texts:
    """Unique, varied memory texts (identical text would be a 'duplicate', not a new write)."""

    def __init__(self, tag: str) -> None:
        self._tag = tag
        self._n = 0
        self._rng = random.Random(tag)

    def next(self) -> tuple[str, list[str]]:
        self._n += 1
        r = self._rng
        text = f"{r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(REASONS)}".strip()
        text += f" (note {self._tag}-{self._n}, {r.randrange(10**6):06d})."
        return text, r.sample(TAGS, r.randrange(3))
