"""The knowledge graph of the reference MCP memory server (`@modelcontextprotocol/server-memory`).

Its `memory.jsonl` holds one entity or relation per line:
`{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks Spanish"]}` and
`{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at"}`.
Symbiote keeps plain memories, so each observation becomes one memory that names its entity
(an observation alone, "Speaks Spanish", would not say whose it is) tagged with the entity's name
and type, and each relation becomes a memory like "John_Smith works_at Anthropic" tagged with both
ends. An entity without observations still becomes one memory saying what it is, so nothing in the
graph is dropped.
"""

from __future__ import annotations

from typing import Any

from symbiote.memory import MAX_TAG_LENGTH, MAX_TAGS
from symbiote.transfer.export_format import LineError

OBSERVATION_TYPE = "fact"
RELATION_TYPE = "relation"


def is_graph_line(record: dict[str, Any]) -> bool:
    return record.get("type") in ("entity", "relation") and "format" not in record and "kind" not in record


def _text(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise LineError(f"{record.get('type')} without {key}")
    return value.strip()


def as_tags(*names: str) -> list[str]:
    """Names as tags: cut to the tag length limit, duplicates (any case) dropped, the first
    MAX_TAGS kept; reading stops there, however many names follow."""
    tags: list[str] = []
    seen: set[str] = set()
    for name in names:
        tag = name[: 4 * MAX_TAG_LENGTH].strip()[:MAX_TAG_LENGTH].strip()
        if tag and tag.casefold() not in seen:
            seen.add(tag.casefold())
            tags.append(tag)
            if len(tags) == MAX_TAGS:
                break
    return tags


def graph_memories(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The memories one graph line becomes, as memory records of the export format (no id or times:
    the import makes them, and identical text already stored is recognised by its content)."""
    if record.get("type") == "entity":
        name = _text(record, "name")
        kind = _text(record, "entityType")
        observations = record.get("observations") or []
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise LineError("observations must be a list of strings")
        tags = as_tags(name, kind)
        texts = [o.strip() for o in observations if o.strip()]
        if not texts:
            return [{"content": f"{name} is a {kind}.", "tags": tags, "type": OBSERVATION_TYPE}]
        return [{"content": f"{name}: {text}", "tags": tags, "type": OBSERVATION_TYPE} for text in texts]
    source, target, relation = _text(record, "from"), _text(record, "to"), _text(record, "relationType")
    return [{"content": f"{source} {relation} {target}", "tags": as_tags(source, target), "type": RELATION_TYPE}]
