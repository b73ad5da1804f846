"""A memory's leading time stamp: when something was said, not what was said.

Assistants and exports store the same turn in many forms: "1:56 pm on 8 May, 2023 Melanie: ...",
"8 May 2023 Melanie: ...", "[2023-05-08 13:56] Melanie: ...", or without a stamp. The stamp's
tokens pull a short turn's vector towards every other stamped turn and away from the question,
so how a memory's words are dated would change its rank (LoCoMo's evidence first 0.30 of the time
with the clock time, 0.38 without). The model therefore never reads a leading stamp
(`symbiote.embedding.model`), and whose a memory is is read after it (`symbiote.retrieval.holders`).
The stamp stays in the memory's text and in its keywords: a date asked for is still found by name.
"""

from __future__ import annotations

import re

_TIME = r"\d{1,2}[:.]\d{2}(?::\d{2})?(?:\.\d+)?(?:\s*[ap]\.?\s?m\.?)?(?:\s*(?:z|utc|gmt|[+-]\d{2}:?\d{2}))?"
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_WEEKDAY = r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?"
_ORDINAL = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE = (
    rf"(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:t{_TIME})?"  # 2023-05-08, 2023-05-08T13:56:00Z
    rf"|\d{{1,2}}[/.]\d{{1,2}}[/.]\d{{2,4}}"  # 08/05/2023, 8.5.23
    rf"|{_ORDINAL}\s+(?:of\s+)?{_MONTH},?\s+\d{{4}}"  # 8 May, 2023
    rf"|{_MONTH}\s+{_ORDINAL},?\s+\d{{4}})"  # May 8th, 2023
)
_STAMP = re.compile(
    rf"^\s*[\[(]?\s*(?:{_WEEKDAY}\s*)?(?:{_TIME}\s*(?:on\s+|,\s*)?)?(?:{_WEEKDAY}\s*)?{_DATE}"
    rf"(?:,?\s*(?:at\s+)?{_TIME})?\s*[\])]?\s*[-:|,]?\s+(?=\S)",
    re.IGNORECASE,
)


def stamp_length(text: str) -> int:
    """How many leading characters of `text` are a date stamp (with an optional time) and the space after it; 0 when none."""
    found = _STAMP.match(text)
    return found.end() if found else 0


def body(text: str) -> str:
    """`text` without its leading date stamp (the whole text when it has none)."""
    return text[stamp_length(text) :]
