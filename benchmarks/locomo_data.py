"""The LoCoMo conversations: turns, and the questions with their evidence.

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents", Maharana et al., ACL
2024) is released by Snap Research at https://github.com/snap-research/locomo as
`data/locomo10.json`, ten conversations in one file. It is not part of this repository: the
benchmarks read a directory of one file per conversation (`26.json`, `30.json`...), given as
`--data DIR` or in SYMBIOTE_LOCOMO_DIR. Make it from the release with

    python benchmarks/locomo_data.py locomo10.json DIR

Shared by locomo.py, vs_peer.py, stages.py and eval/relevance_sets.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ENV_VAR = "SYMBIOTE_LOCOMO_DIR"
DATA_DIR: Path | None = Path(os.environ[ENV_VAR]) if os.environ.get(ENV_VAR) else None
WHERE = (
    f"Give the LoCoMo directory with --data DIR or {ENV_VAR}: one file per conversation, made from "
    "the release's data/locomo10.json (github.com/snap-research/locomo) by "
    "`python benchmarks/locomo_data.py locomo10.json DIR`."
)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}


@dataclass
class Turn:
    dia_id: str
    session: int
    date: str
    speaker: str
    text: str
    caption: str | None
    clock: str = ""  # the session's time as the file gives it: "1:56 pm on 8 May, 2023"

    @property
    def memory(self) -> str:
        return self.in_form("date")

    def in_form(self, form: str) -> str:
        """The turn as a memory in one of `FORMS`: "1:56 pm on 8 May, 2023 Melanie: ..." (`clock`, as
        the files give it), "8 May 2023 Melanie: ..." (`date`), "Melanie: ..." (`speaker`) or bare (`none`)."""
        photo = f" [shares a photo of {self.caption}]" if self.caption else ""
        said = f"{self.text}{photo}" if form == "none" else f"{self.speaker}: {self.text}{photo}"
        stamp = {"clock": self.clock or self.date, "date": self.date}.get(form, "")
        return f"{stamp} {said}".strip()


FORMS = ("clock", "date", "speaker", "none")


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
                Turn(
                    t["dia_id"],
                    n,
                    session_date(convo[f"session_{n}_date_time"]),
                    t["speaker"],
                    t["text"],
                    caption,
                    convo[f"session_{n}_date_time"],
                )
            )
        n += 1
    questions = [
        Question(q["question"], [e.strip() for e in q.get("evidence", [])], int(q["category"]))
        for q in data.get("qa", [])
        if int(q.get("category", 5)) in CATEGORIES and q.get("evidence")
    ]
    return Conversation(path.name, turns, questions)


def data_dir(given: Path | None) -> Path:
    """The LoCoMo directory a benchmark was given, or an exit that says where to get one."""
    if given is None or not given.is_dir():
        problem = "No LoCoMo directory was given." if given is None else f"{str(given)!r} is not a directory."
        raise SystemExit(f"{problem} {WHERE}")
    return given


def split_release(release: Path, target: Path) -> list[Path]:
    """Write each conversation of the release's locomo10.json to `target`/<number>.json."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for sample in json.loads(release.read_text()):
        number = str(sample.get("sample_id", len(written))).rsplit("-", 1)[-1]
        path = target / f"{number}.json"
        path.write_text(json.dumps(sample))
        written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit("usage: python benchmarks/locomo_data.py locomo10.json DIR")
    for written_path in split_release(Path(sys.argv[1]), Path(sys.argv[2])):
        print(written_path)
