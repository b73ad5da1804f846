"""Conversation history: the turns of each conversation, kept beside (never inside) the memories.

Where it lives: a Chroma collection of its own, `venom_history`, next to `venom_memories`, through
the same client. So it follows the memories wherever they are: the embedded store in
CHROMADB_PATH, or a Chroma server shared by several Symbiote instances, where a conversation
started through one instance continues through another. (A SQLite table in the data directory
would be simpler, but on a Chroma server each instance would then see only its own turns.)

Each turn is one record: id `<conversation_id>#<turn_index>`, the text as the document, the
conversation, role, index and time as metadata, and the turn's embedding (its first 256 tokens).
The embedding costs ~10 ms per append and is what lets history be searched when that is asked
for (`ConversationHistory.search`); memory search never looks here, since it queries only the
memory collections.

Turn numbering: a turn appended without `turn_index` gets the conversation's last index + 1
(0 for the first). Chroma ignores an `add` whose id exists, so an append reads its record back
and checks that it wrote it: two instances racing for the same index cannot overwrite each
other; the loser takes the next index. A turn appended again with an explicit `turn_index` and
the same role and text is reported as a duplicate (a client's retry); with other text it is
refused, never overwritten. Turns are returned in `turn_index` order.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import secrets
import time
from datetime import datetime, timezone
from typing import Any, Callable, Literal, Protocol, TYPE_CHECKING

from pydantic import BaseModel, Field

from symbiote.storage.diskspace import DiskSpace
from symbiote.embedding.embedder import AsyncEmbedder
from symbiote.errors import InvalidInputError, StoreUnavailableError, SymbioteError
from symbiote.memory.keyed_lock import KeyedLock

if TYPE_CHECKING:  # numpy is imported when first needed: it is not on the way to `initialize`
    import numpy as np

log = logging.getLogger(__name__)

HISTORY_COLLECTION = "venom_history"
ROLES = ("user", "assistant", "system")
MAX_CONVERSATION_ID = 200
MAX_TURN_CHARS = 100_000
MAX_TURN_INDEX = 999_999_999
MAX_GET = 500
RACE_RETRIES = 25  # a writer that keeps losing the race backs off a random, growing while
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

Role = Literal["user", "assistant", "system"]


# -- what the tools return ---------------------------------------------------------------------


class Turn(BaseModel):
    """One turn of a conversation."""

    conversation_id: str
    turn_index: int = Field(description="Position in the conversation; turns are ordered by it.")
    role: Role
    text: str
    ts: str = Field(description="When the turn was said, ISO-8601 UTC.")


class AppendResult(BaseModel):
    conversation_id: str
    turn_index: int = Field(description="The index the turn has (assigned when none was given).")
    ts: str
    status: Literal["appended", "duplicate"] = Field(
        description="'duplicate': this exact turn was already stored at this index; nothing new was written."
    )
    message: str


class History(BaseModel):
    conversation_id: str
    turns: list[Turn] = Field(description="The last turns, oldest first (chronological order).")
    count: int
    total_turns: int = Field(description="How many turns the conversation has in all.")


class HistoryHit(Turn):
    similarity: float = Field(description="Cosine similarity between the query and the turn, -1..1.")


# -- arguments -----------------------------------------------------------------------------------


def check_conversation_id(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("conversation_id is empty: pass the id your client uses for this conversation.")
    value = value.strip()
    if len(value) > MAX_CONVERSATION_ID or _CONTROL.search(value):
        raise InvalidInputError(
            f"conversation_id must be at most {MAX_CONVERSATION_ID} printable characters (got {len(value)})."
        )
    return value


def check_role(value: Any) -> str:
    word = value.strip().lower() if isinstance(value, str) else value
    if word not in ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(ROLES)} (got {value!r}).")
    return str(word)


def check_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("text is empty: give what was said in this turn.")
    text = value.strip()
    if len(text) > MAX_TURN_CHARS:
        raise InvalidInputError(f"text is {len(text)} characters long; a turn may have at most {MAX_TURN_CHARS}.")
    return text


def check_turn_index(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TURN_INDEX:
        raise InvalidInputError(f"turn_index must be a whole number from 0 to {MAX_TURN_INDEX} (got {value!r}).")
    return value


def parse_ts(value: Any) -> tuple[str, int]:
    """(ISO-8601 UTC with Z, microseconds) for `value`, or for now when it is None."""
    if value is None or (isinstance(value, str) and not value.strip()):
        micros = time.time_ns() // 1000
    else:
        if not isinstance(value, str):
            raise InvalidInputError("ts must be an ISO-8601 date/time like '2026-11-21T09:30:00Z'.")
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInputError(f"ts={value!r} is not an ISO-8601 date/time like '2026-11-21T09:30:00Z'.") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        micros = int(moment.timestamp() * 1_000_000)
    stamp = datetime.fromtimestamp(micros / 1e6, tz=timezone.utc).isoformat(timespec="microseconds")
    return stamp.replace("+00:00", "Z"), micros


def check_count(value: Any, name: str = "n", high: int = MAX_GET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise InvalidInputError(f"{name} must be a whole number from 1 to {high} (got {value!r}).")
    return value


# -- the store (blocking; any Chroma client) ---------------------------------------------------


def record_id(conversation: str, index: int) -> str:
    return f"{conversation}#{index}"


def _turn(document: str | None, meta: dict[str, Any] | None) -> Turn:
    meta = meta or {}
    return Turn(
        conversation_id=str(meta.get("conversation_id", "")),
        turn_index=int(meta.get("turn_index", 0)),
        role=str(meta.get("role", "user")),  # type: ignore[arg-type]
        text=document or "",
        ts=str(meta.get("ts", "")),
    )


class HistoryStore(Protocol):
    """What `ConversationHistory` needs from storage. The one write is `add` (the name
    `snapshots.GuardedStore` puts behind the writer lease); the rest only read."""

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[Turn, bool]: ...

    def get_turns(self, conversation: str, n: int) -> tuple[list[Turn], int]: ...

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[Turn, float]]: ...

    def count(self) -> int: ...


class ChromaHistoryStore:
    """Conversation turns in the `venom_history` collection of any Chroma client."""

    def __init__(self, client: Any, model_name: str, dimension: int) -> None:
        identity = {"embedding_model": model_name, "embedding_dim": dimension, "holds": "conversation turns"}
        self._turns = client.get_or_create_collection(
            HISTORY_COLLECTION, metadata=identity, configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        meta = self._turns.metadata or {}
        if meta.get("embedding_model") != model_name or int(meta.get("embedding_dim") or 0) != dimension:
            raise StoreUnavailableError(
                f"The conversation history was embedded with {meta.get('embedding_model')} "
                f"({meta.get('embedding_dim')} dimensions), but this server uses {model_name} ({dimension}). "
                "Point CHROMADB_PATH (or CHROMA_DATABASE) at the matching data."
            )

    def _indexes(self, conversation: str) -> dict[int, str]:
        got = self._turns.get(where={"conversation_id": conversation}, include=["metadatas"])
        return {int((meta or {}).get("turn_index", 0)): rid for rid, meta in zip(got["ids"], got["metadatas"] or [])}

    def _read(self, rid: str) -> tuple[Turn, str] | None:
        got = self._turns.get(ids=[rid], include=["documents", "metadatas"])
        if not got["ids"]:
            return None
        meta = (got["metadatas"] or [{}])[0] or {}
        return _turn((got["documents"] or [None])[0], meta), str(meta.get("writer", ""))

    def add(
        self, conversation: str, role: str, text: str, ts: str, ts_us: int, vector: np.ndarray, index: int | None
    ) -> tuple[Turn, bool]:
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
                    raise StoreUnavailableError(f"Turn {index} of conversation {conversation!r} was not saved; try again.")
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

    def get_turns(self, conversation: str, n: int) -> tuple[list[Turn], int]:
        """The last `n` turns in order, and how many the conversation has."""
        indexes = self._indexes(conversation)
        wanted = [indexes[i] for i in sorted(indexes)[-n:]]
        if not wanted:
            return [], 0
        got = self._turns.get(ids=wanted, include=["documents", "metadatas"])
        turns = [_turn(doc, meta) for doc, meta in zip(got["documents"] or [], got["metadatas"] or [])]
        return sorted(turns, key=lambda t: t.turn_index), len(indexes)

    def search(self, vector: np.ndarray, k: int, conversation: str | None) -> list[tuple[Turn, float]]:
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


# -- the service (async) -----------------------------------------------------------------------


class ConversationHistory:
    """Appends and reads conversation turns; the store is opened on first use, like the memory store's."""

    def __init__(
        self,
        embedder: AsyncEmbedder,
        open_store: Callable[[str, int], HistoryStore],
        space: DiskSpace | None = None,
    ) -> None:
        self._embedder = embedder
        self._space = space
        self._open_store = open_store
        self._store: HistoryStore | None = None
        self._open_lock = asyncio.Lock()
        self._appending = KeyedLock()

    async def append(
        self, conversation_id: Any, role: Any, text: Any, turn_index: Any = None, ts: Any = None
    ) -> AppendResult:
        cid = check_conversation_id(conversation_id)
        who = check_role(role)
        said = check_text(text)
        index = check_turn_index(turn_index)
        stamp, micros = parse_ts(ts)
        store = await self._store_or_raise()
        vector = (await self._embedder.embed([said]))[0]
        if self._space is not None:
            await self._space.ensure(DiskSpace.estimate([said], 1))
        async with self._appending.hold(cid):  # this instance's appends to one conversation, one at a time
            turn, written = await self._call(store.add, cid, who, said, stamp, micros, vector, index)
        if written:
            message = f"Turn {turn.turn_index} appended to conversation {cid!r}."
        else:
            message = f"Turn {turn.turn_index} of conversation {cid!r} was already stored with this text; kept as is."
        return AppendResult(
            conversation_id=cid,
            turn_index=turn.turn_index,
            ts=turn.ts,
            status="appended" if written else "duplicate",
            message=message,
        )

    async def get(self, conversation_id: Any, n: Any = 16) -> History:
        cid = check_conversation_id(conversation_id)
        last = check_count(n)
        store = await self._store_or_raise()
        turns, total = await self._call(store.get_turns, cid, last)
        return History(conversation_id=cid, turns=turns, count=len(turns), total_turns=total)

    async def search(self, query: Any, conversation_id: Any = None, limit: Any = 5) -> list[HistoryHit]:
        """Turns similar to `query` (in one conversation, or in all): history search, only when asked for."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInputError("query is empty: say what to look for in the conversation history.")
        cid = check_conversation_id(conversation_id) if conversation_id is not None else None
        k = check_count(limit, "limit", 50)
        store = await self._store_or_raise()
        vector = (await self._embedder.embed([query.strip()], urgent=True))[0]
        found = await self._call(store.search, vector, k, cid)
        return [HistoryHit(**turn.model_dump(), similarity=round(sim, 4)) for turn, sim in found]

    async def _store_or_raise(self) -> HistoryStore:
        if self._store is not None:
            return self._store
        async with self._open_lock:
            if self._store is None:
                from symbiote.embedding import MODEL_DIMENSION, MODEL_NAME

                try:
                    self._store = await asyncio.to_thread(self._open_store, MODEL_NAME, MODEL_DIMENSION)
                except SymbioteError:
                    raise
                except Exception as exc:
                    log.exception("conversation history unavailable")
                    raise StoreUnavailableError(f"The conversation history could not be opened: {exc}") from exc
        return self._store

    @staticmethod
    async def _call(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return await asyncio.to_thread(fn, *args)
        except SymbioteError:
            raise
        except Exception as exc:
            log.exception("conversation history operation failed")
            raise StoreUnavailableError(
                f"The conversation history store failed ({exc}). If the store is a Chroma server, check that it "
                "is running; try again."
            ) from exc


def open_history_store(client: Any, model_name: str, dimension: int) -> ChromaHistoryStore:
    return ChromaHistoryStore(client, model_name, dimension)

