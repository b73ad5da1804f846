"""A memory's leading time stamp: when something was said, not what was said.

Assistants and exports store the same turn in many forms: "1:56 pm on 8 May, 2023 Melanie: ...",
"8 May 2023 Melanie: ...", "[2023-05-08 13:56] Melanie: ...". The clock time's tokens pull a short
turn's vector towards every other stamped turn and away from the question (LoCoMo's evidence first
0.30 of the time with the clock time, 0.38 without), while the date helps a question asked about
when. So the model reads every stamp in one form, its date alone ("8 May 2023 Melanie: ...",
`canonical`): a turn dated with a clock time, an ISO stamp or a plain date has the same vectors.
Whose a memory is is read after the stamp (`body`, `symbiote.retrieval.holders`). The stamp as
written stays in the memory's text and in its keywords.
"""

from __future__ import annotations

import re

_TIME = r"\d{1,2}[:.]\d{2}(?::\d{2})?(?:\.\d+)?(?:\s*[ap]\.?\s?m\.?)?(?:\s*(?:z|utc|gmt|[+-]\d{2}:?\d{2}))?"
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_WEEKDAY = r"(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?"
_DATE = (
    rf"(?:(?P<iso_y>\d{{4}})-(?P<iso_m>\d{{1,2}})-(?P<iso_d>\d{{1,2}})(?:t{_TIME})?"  # 2023-05-08, 2023-05-08T13:56Z
    rf"|(?P<num_d>\d{{1,2}})[/.](?P<num_m>\d{{1,2}})[/.](?P<num_y>\d{{2,4}})"  # 08/05/2023, 8.5.23 (day first)
    rf"|(?P<day_d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<day_m>{_MONTH}),?\s+(?P<day_y>\d{{4}})"  # 8 May, 2023
    rf"|(?P<mon_m>{_MONTH})\s+(?P<mon_d>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<mon_y>\d{{4}}))"  # May 8th, 2023
)
_STAMP = re.compile(
    rf"^\s*[\[(]?\s*(?:{_WEEKDAY}\s*)?(?:{_TIME}\s*(?:on\s+|,\s*)?)?(?:{_WEEKDAY}\s*)?{_DATE}"
    rf"(?:,?\s*(?:at\s+)?{_TIME})?\s*[\])]?\s*[-:|,]?\s+(?=\S)",
    re.IGNORECASE,
)
MONTHS = ("January February March April May June July August September October November December").split()


def stamp_length(text: str) -> int:
    """How many leading characters of `text` are a date stamp (with an optional time) and the space after it; 0 when none."""
    found = _STAMP.match(text)
    return found.end() if found else 0


def body(text: str) -> str:
    """`text` without its leading date stamp (the whole text when it has none)."""
    return text[stamp_length(text) :]


def canonical(text: str) -> str:
    """`text` with its leading stamp written as its date alone, "8 May 2023 ..." (the text itself when it has
    no stamp; its body when the stamp names no real date)."""
    found = _STAMP.match(text)
    if not found:
        return text
    parts = {k: v for k, v in found.groupdict().items() if v}
    day, month, year = (next((v for k, v in parts.items() if k.endswith(end)), "") for end in ("_d", "_m", "_y"))
    number = (
        int(month) if month.isdigit() else next((i + 1 for i, m in enumerate(MONTHS) if m[:3] == month[:3].title()), 0)
    )
    year = year if len(year) == 4 else f"20{year[-2:]}"
    if not (1 <= number <= 12 and 1 <= int(day) <= 31):
        return text[found.end() :]
    return f"{int(day)} {MONTHS[number - 1]} {year} {text[found.end() :]}"
