"""The conversation history's store: each turn one record in a Chroma collection of its own.

Where it lives: `venom_history`, next to `venom_memories`, through the same client. So it
follows the memories wherever they are: the embedded store in CHROMADB_PATH, or a Chroma
server shared by several Symbiote instances, where a conversation started through one instance
continues through another. (A SQLite table in the data directory would be simpler, but on a
Chroma server each instance would then see only its own turns.) Memory search never looks
here: it queries only the memory collections.

Each turn is one record: id `<conversation_id>#<turn_index>`, the text as the document, the
conversation, role, index and time as metadata, and the turn's embedding (its first 256 tokens).

Turn numbering: a turn added without an index gets the conversation's last index + 1 (0 for
the first). Chroma ignores an `add` whose id exists, so an add reads its record back and checks
that it wrote it: two instances racing for the same index cannot overwrite each other; the
loser takes the next index. A turn added again with an explicit index and the same role and
text is reported as already there (a client's retry); with other text it is refused, never
overwritten. Turns are returned in index order.
"""

from __future__ import annotations

import random
import secrets
import time
from typing import TYPE_CHECKING, Any

from symbiote.errors import InvalidInputError, StoreUnavailableError
from symbiote.storage.base import StoredTurn
from symbiote.storage.chroma.batches import BatchedCollection, max_batch_size
from symbiote.storage.chroma.bulk_reads import read_all

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np

HISTORY_COLLECTION = "venom_history"
RACE_RETRIES = 25  # a writer that keeps losing the race backs off a random, growing while


def record_id(conversation: str, index: int) -> str:
    return f"{conversation}#{index}"


def _turn(document: str | None, meta: dict[str, Any] | None) -> StoredTurn:
    meta = meta or {}
    return StoredTurn(
        conversation_id=str(meta.get("conversation_id", "")),
        turn_index=int(meta.get("turn_index", 0)),
        role=str(meta.get("role", "user")),
        text=document or "",
        ts=str(meta.get("ts", "")),
    )


class ChromaHistoryStore:
    """Conversation turns in the `venom_history` collection of any Chroma client."""

    def __init__(self, client: Any, model_name: str, dimension: int) -> None:
        identity = {"embedding_model": model_name, "embedding_dim": dimension, "holds": "conversation turns"}
        turns = client.get_or_create_collection(
            HISTORY_COLLECTION, metadata=identity, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        self._turns = BatchedCollection(turns, max_batch_size(client))  # deletes within Chroma's maximum
        meta = self._turns.metadata or {}
        if meta.get("embedding_model") != model_name or int(meta.get("embedding_dim") or 0) != dimension:
            raise StoreUnavailableError(
                f"The conversation history was embedded with {meta.get('embedding_model')} "
                f"({meta.get('embedding_dim')} dimensions), but this server uses {model_name} ({dimension}). "
                "Point CHROMADB_PATH (or CHROMA_DATABASE) at the matching data."
            )

    def idle_step(self) -> bool:
        """No work between calls: the turns are read from Chroma when asked for."""
        return False

    def settle(self) -> None:
        """Nothing goes ahead of its Chroma write: a turn is written before it is answered."""

    def defers(self, method: str) -> bool:
        return False

    def close(self) -> None:
        """Nothing to let go of: the Chroma client is the memory store's, which closes it."""

    def _indexes(self, conversation: str) -> dict[int, str]:
        got = self._turns.get(where={"conversation_id": conversation}, include=["metadatas"])
        return {int((meta or {}).get("turn_index", 0)): rid for rid, meta in zip(got["ids"], got["metadatas"] or [])}

    def _read(self, rid: str) -> tuple[StoredTurn, str] | None:
        got = self._turns.get(ids=[rid], include=["documents", "metadatas"])
        if not got["ids"]:
            return None
        meta = (got["metadatas"] or [{}])[0] or {}
        return _turn((got["documents"] or [None])[0], meta), str(meta.get("writer", ""))

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[StoredTurn, bool]:
        """Store one turn; returns it and whether it was written (False: the same turn was there already)."""
        explicit = index is not None
        if index is None:
            index = max(self._indexes(conversation), default=-1) + 1
        writer = secrets.token_hex(8)
        for attempt in range(RACE_RETRIES):
            if attempt:
                time.sleep(random.uniform(0, 0.005 * 2 ** min(attempt, 5)))  # break the tie with the other writer
            rid = record_id(conversation, index)
            existing = self._read(rid) if explicit else None
            if existing is None:
                meta = {
                    "conversation_id": conversation,
                    "turn_index": index,
                    "role": role,
                    "ts": ts,
                    "ts_us": ts_us,
                    "writer": writer,
                }
                self._turns.add(ids=[rid], embeddings=[vector.tolist()], documents=[text], metadatas=[meta])
                existing = self._read(rid)
                if existing is None:
                    raise StoreUnavailableError(
                        f"Turn {index} of conversation {conversation!r} was not saved; try again."
                    )
                if existing[1] == writer:
                    return existing[0], True
            turn = existing[0]
            if explicit:
                if turn.role == role and turn.text == text:
                    return turn, False
                raise InvalidInputError(
                    f"Turn {index} of conversation {conversation!r} already exists with other content; "
                    "omit turn_index to append after the last turn."
                )
            # Another writer took this index between our read and our add: take the next one.
            index = max(index + 1, max(self._indexes(conversation), default=-1) + 1)
        raise StoreUnavailableError(
            f"Conversation {conversation!r} is being appended to by several writers at once; try again."
        )

    def delete_conversation(self, conversation: str) -> int:
        """Every turn of one conversation removed (the owner's choice, in the console); how many were.
        Only this conversation's records are touched: the memories and other conversations stay."""
        doomed = list(self._indexes(conversation).values())
        self._turns.delete(ids=doomed)
        return len(doomed)

    def get_turns(self, conversation: str, n: int, before: int | None = None) -> tuple[list[StoredTurn], int]:
        """The last `n` turns in order (of those before turn `before`, when given), and how many the
        conversation has."""
        indexes = self._indexes(conversation)
        wanted = [indexes[i] for i in sorted(i for i in indexes if before is None or i < before)[-n:]]
        if not wanted:
            return [], 0
        got = self._turns.get(ids=wanted, include=["documents", "metadatas"])
        turns = [_turn(doc, meta) for doc, meta in zip(got["documents"] or [], got["metadatas"] or [])]
        return sorted(turns, key=lambda t: t.turn_index), len(indexes)

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[StoredTurn, float]]:
        available = self._turns.count()
        if not available:
            return []
        found = self._turns.query(
            query_embeddings=[vector.tolist()],
            n_results=min(k, available),
            where={"conversation_id": conversation} if conversation else None,
            include=["documents", "metadatas", "distances"],
        )
        return [
            (_turn(doc, meta), 1.0 - float(distance))
            for doc, meta, distance in zip(found["documents"][0], found["metadatas"][0], found["distances"][0])
        ]

    def count(self) -> int:
        return int(self._turns.count())

    def page_turns(self, offset: int, limit: int) -> list[StoredTurn]:
        """Turns in the order they were stored, a page at a time: for an export."""
        got = self._turns.get(offset=offset, limit=limit, include=["documents", "metadatas"])
        return [_turn(doc, meta) for doc, meta in zip(got["documents"] or [], got["metadatas"] or [])]

    def conversations(self) -> list[tuple[str, int, str]]:
        """(conversation id, turns, time of the last turn), most recent first: for the console."""
        got = read_all(self._turns, ["metadatas"])
        seen: dict[str, tuple[int, int, str]] = {}
        for meta in got["metadatas"] or []:
            meta = meta or {}
            cid, stamp = str(meta.get("conversation_id", "")), int(meta.get("ts_us", 0))
            turns, last_us, last = seen.get(cid, (0, -1, ""))
            if stamp > last_us:
                last_us, last = stamp, str(meta.get("ts", ""))
            seen[cid] = (turns + 1, last_us, last)
        ordered = sorted(seen.items(), key=lambda item: item[1][1], reverse=True)
        return [(cid, turns, last) for cid, (turns, _us, last) in ordered]


def open_history_store(client: Any, model_name: str, dimension: int) -> ChromaHistoryStore:
    return ChromaHistoryStore(client, model_name, dimension)
