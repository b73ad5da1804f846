"""The LoCoMo dev conversations: turns, questions with their evidence, read from ../shared/data/locomo-dev/.

The data is read in place and never copied. Shared by the LoCoMo benchmark (locomo.py) and the
offline retrieval and calibration experiments.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = (ROOT / ".." / "shared" / "data" / "locomo-dev").resolve()
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    session: int
    date: str
    speaker: str
    text: str
    caption: str | None

    @property
    def memory(self) -> str:
        photo = f" [shares a photo of {self.caption}]" if self.caption else ""
        return f"{self.date} {self.speaker}: {self.text}{photo}".strip()


@dataclass
class Question:
    question: str
    evidence: list[str]
    category: int


@dataclass
class Conversation:
    name: str
    turns: list[Turn]
    questions: list[Question]


def session_date(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '8 May 2023' (the clock time is noise for retrieval)."""
    day = raw.split(" on ", 1)[-1]
    return re.sub(r"\s+", " ", day.replace(",", "")).strip()


def load_conversation(path: Path) -> Conversation:
    """One conversation file: every turn, and the category 1-4 questions that name their evidence."""
    data = json.loads(path.read_text())
    convo = data.get("conversation", data)  # the upstream file nests it; the dev files do not
    turns: list[Turn] = []
    n = 1
    while f"session_{n}_date_time" in convo:
        for t in convo.get(f"session_{n}") or []:
            caption = t.get("blip_caption")
            turns.append(
                Turn(t["dia_id"], n, session_date(convo[f"session_{n}_date_time"]), t["speaker"], t["text"], caption)
            )
        n += 1
    questions = [
        Question(q["question"], [e.strip() for e in q.get("evidence", [])], int(q["category"]))
        for q in data.get("qa", [])
        if int(q.get("category", 5)) in CATEGORIES and q.get("evidence")
    ]
    return Conversation(path.name, turns, questions)
