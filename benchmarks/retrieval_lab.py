"""Offline retrieval lab: measure retrieval strategies on LoCoMo without the server.

In-process MiniLM embedder (the project's OnnxEmbedder, one thread), an in-memory SQLite FTS5
index and exact numpy cosine. Each strategy ranks every turn of a conversation for each
category 1-4 question; we print recall@1/5/10 per file and overall plus the per-query cost.
Embeddings are cached under /tmp/retrieval-lab/cache (never in the project).

    .venv/bin/python benchmarks/retrieval_lab.py locomo      # strategy table
    .venv/bin/python benchmarks/retrieval_lab.py calibrate   # fit P(relevant) on one file, check on the other
    .venv/bin/python benchmarks/retrieval_lab.py assistant   # own assistant set: recall and junk rate
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo_data  # noqa: E402
from assistant_data import DIRECT_QUESTIONS as QUESTIONS  # noqa: E402  (the 40 direct questions)
from assistant_data import FIRST_NEGATIVES as NEGATIVES  # noqa: E402  (the first 20 never-stored ones)
from assistant_data import MEMORIES  # noqa: E402
from logistic import fit_newton  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path("/tmp/retrieval-lab/cache")
FILES = ("26.json", "30.json")
SESSION_BOUND = False
LEX_WIDTH = 2
LEX_CTX = "prev"  # neighbours in the lexical ctx column: "prev" (store-time only) or "both"

# --------------------------------------------------------------------------------------------
# text handling

from symbiote.storage.keywords import _WORD, STOPWORDS  # noqa: E402  (the server's own tokenisation)


def terms(text: str) -> list[str]:
    """Lower-case word tokens without stopwords, possessives stripped, de-duplicated in order."""
    seen: dict[str, None] = {}
    for raw in _WORD.findall(text.lower().replace("\u2019", "'")):
        word = raw
        if word in STOPWORDS:
            continue
        word = word.split("'", 1)[0]  # caroline's -> caroline, don't is a stopword above
        if len(word) < 2 or word in STOPWORDS:
            continue
        seen.setdefault(word, None)
    return list(seen)


def fts_query(text: str, prefix: bool = False) -> str:
    """An FTS5 MATCH expression: OR of the quoted terms (prefix match optional)."""
    parts = [f'"{t}"' + ("*" if prefix and len(t) >= 4 else "") for t in terms(text)]
    return " OR ".join(parts)


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def sentences(text: str) -> list[str]:
    return [s for s in _SENTENCE.split(text) if s.strip()]


# --------------------------------------------------------------------------------------------
# embeddings (cached)

_EMBEDDER = None


def embedder():
    global _EMBEDDER
    if _EMBEDDER is None:
        from symbiote.embedding.model import OnnxEmbedder

        _EMBEDDER = OnnxEmbedder(ROOT / "models" / "all-MiniLM-L6-v2", threads=1)
    return _EMBEDDER


def embed(texts: Sequence[str]) -> np.ndarray:
    texts = list(texts)
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    key = hashlib.sha1("\x00".join(texts).encode()).hexdigest()
    path = CACHE / f"{key}.npy"
    if path.exists():
        return np.load(path)
    out = np.concatenate([embedder().embed(texts[i : i + 32]) for i in range(0, len(texts), 32)])
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


# --------------------------------------------------------------------------------------------
# indexes


class Lexical:
    """FTS5 over (body, ctx); bm25() with column weights. Scores returned positive (higher = better)."""

    def __init__(self, bodies: Sequence[str], ctxs: Sequence[str] | None = None, tokenizer: str = "porter unicode61 remove_diacritics 2") -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(f"CREATE VIRTUAL TABLE m USING fts5(body, ctx, tokenize='{tokenizer}')")
        ctxs = ctxs if ctxs is not None else [""] * len(bodies)
        self.db.executemany("INSERT INTO m(rowid, body, ctx) VALUES (?,?,?)", [(i, b, c) for i, (b, c) in enumerate(zip(bodies, ctxs))])
        self.n = len(bodies)

    def search(self, query: str, k: int = 100, ctx_weight: float = 0.0, prefix: bool = False, max_df: float = 1.0) -> list[tuple[int, float]]:
        words = terms(query)
        if max_df < 1.0:  # drop terms found in more than max_df of the memories (speaker names, "time"...)
            words = [w for w in words if self.db.execute("SELECT count(*) FROM m WHERE m MATCH ?", (f'body:"{w}"',)).fetchone()[0] <= max_df * self.n]
        q = " OR ".join(f'"{t}"' + ("*" if prefix and len(t) >= 4 else "") for t in words)
        if not q:
            return []
        rows = self.db.execute(
            "SELECT rowid, -bm25(m, 1.0, ?) FROM m WHERE m MATCH ? ORDER BY bm25(m, 1.0, ?) LIMIT ?",
            (ctx_weight, q, ctx_weight, k),
        ).fetchall()
        return [(int(r), float(s)) for r, s in rows]


@dataclass
class Corpus:
    name: str
    docs: list[str]  # memory texts as stored
    turns: list[locomo_data.Turn]
    questions: list[locomo_data.Question]
    dia_index: dict[str, int]

    @classmethod
    def load(cls, name: str) -> "Corpus":
        c = locomo_data.load_conversation(locomo_data.DATA_DIR / name)
        return cls(name, [t.memory for t in c.turns], c.turns, c.questions, {t.dia_id: i for i, t in enumerate(c.turns)})

    # The server cannot see LoCoMo's sessions: its neighbours are the memories stored just before
    # and after. SESSION_BOUND=True restricts them to the same session (for information only).
    def neighbours(self, i: int, width: int = 1) -> list[int]:
        return [j for j in range(i - width, i + width + 1) if j != i and 0 <= j < len(self.turns) and self._same(i, j)]

    def prev(self, i: int, width: int = 1) -> list[int]:
        return [j for j in range(i - width, i) if j >= 0 and self._same(i, j)]

    def _same(self, i: int, j: int) -> bool:
        return not SESSION_BOUND or self.turns[i].session == self.turns[j].session


# --------------------------------------------------------------------------------------------
# scoring building blocks: each returns a dense score vector over all docs (np.nan = not retrieved)


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(x), np.nanmax(x)
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def rrf(rankings: list[np.ndarray], k: float, weights: Sequence[float] | None = None, n: int = 0) -> np.ndarray:
    out = np.zeros(n)
    for w, order in zip(weights or [1.0] * len(rankings), rankings):
        out[order] += w / (k + np.arange(1, len(order) + 1))
    return out


@dataclass
class Ctx:
    """Per-corpus precomputed material shared by the strategies."""

    corpus: Corpus
    dense: np.ndarray  # (n, 384) memory vectors
    qvecs: np.ndarray  # (q, 384)
    lex: Lexical
    lex_ctx: Lexical

    @classmethod
    def build(cls, corpus: Corpus) -> "Ctx":
        dense = embed(corpus.docs)
        qvecs = embed([q.question for q in corpus.questions])
        pick = corpus.prev if LEX_CTX == "prev" else corpus.neighbours
        ctx_text = [" ".join(corpus.turns[j].text for j in pick(i, LEX_WIDTH)) for i in range(len(corpus.docs))]
        return cls(corpus, dense, qvecs, Lexical(corpus.docs), Lexical(corpus.docs, ctx_text))

    def bm25_vec(self, qi: int, ctx_weight: float = 0.0, prefix: bool = False, k: int = 100, max_df: float = 1.0) -> np.ndarray:
        index = self.lex_ctx if ctx_weight else self.lex
        out = np.zeros(len(self.corpus.docs))
        for rowid, score in index.search(self.corpus.questions[qi].question, k, ctx_weight, prefix, max_df):
            out[rowid] = score
        return out


Strategy = Callable[[Ctx, int], np.ndarray]  # -> scores over all docs (higher = better)


def s_dense(c: Ctx, qi: int) -> np.ndarray:
    return c.dense @ c.qvecs[qi]


def s_bm25(ctx_weight: float = 0.0, prefix: bool = False) -> Strategy:
    def run(c: Ctx, qi: int) -> np.ndarray:
        return c.bm25_vec(qi, ctx_weight, prefix)

    return run


def s_rrf(k: float = 60, w_lex: float = 1.0, ctx_weight: float = 0.0, depth: int = 100) -> Strategy:
    def run(c: Ctx, qi: int) -> np.ndarray:
        d = s_dense(c, qi)
        b = c.bm25_vec(qi, ctx_weight)
        d_order = np.argsort(-d)[:depth]
        b_order = [i for i in np.argsort(-b)[:depth] if b[i] > 0]
        return rrf([d_order, np.array(b_order, dtype=int)], k, [1.0, w_lex], len(d)) + 1e-9 * d

    return run


def s_weighted(w_lex: float = 0.5, norm: str = "max", ctx_weight: float = 0.0, prefix: bool = False) -> Strategy:
    """dense cosine + w * normalised bm25.

    norm: 'max'  -> bm25 / max bm25 of this query (0..1, the top lexical hit = 1)
          'minmax' -> both signals min-max over the union of top-100 candidates
          'z'    -> both z-scored over the candidates
    """

    def run(c: Ctx, qi: int) -> np.ndarray:
        d = s_dense(c, qi)
        b = c.bm25_vec(qi, ctx_weight, prefix)
        if norm == "max":
            return d + w_lex * (b / b.max() if b.max() > 0 else b)
        cand = np.union1d(np.argsort(-d)[:100], np.nonzero(b)[0])
        out = np.full(len(d), -1e9)
        dc, bc = d[cand], b[cand]
        if norm == "minmax":
            out[cand] = minmax(dc) + w_lex * minmax(bc)
        else:
            out[cand] = (dc - dc.mean()) / (dc.std() + 1e-9) + w_lex * (bc - bc.mean()) / (bc.std() + 1e-9)
        return out

    return run


def with_neighbours(base: Strategy, alpha: float = 0.3, width: int = 1, mode: str = "max") -> Strategy:
    """Query-time context: score(i) += alpha * max/mean over neighbours' scores (same session)."""

    def run(c: Ctx, qi: int) -> np.ndarray:
        s = base(c, qi)
        floor = np.min(s[s > -1e8]) if np.any(s > -1e8) else 0.0
        s0 = np.where(s > -1e8, s - floor, 0.0)
        add = np.zeros_like(s0)
        for i in range(len(s0)):
            nb = c.corpus.neighbours(i, width)
            if nb:
                add[i] = s0[nb].max() if mode == "max" else s0[nb].mean()
        return s0 + alpha * add

    return run


# dense document representations -------------------------------------------------------------

_DOCVEC_CACHE: dict[tuple, np.ndarray] = {}


def doc_vectors(c: Ctx, kind: str) -> np.ndarray:
    key = (c.corpus.name, kind)
    if key in _DOCVEC_CACHE:
        return _DOCVEC_CACHE[key]
    corpus = c.corpus
    if kind == "text_only":  # no date prefix (for information: what the date prefix costs)
        vec = embed([f"{t.speaker}: {t.text}" + (f" [shares a photo of {t.caption}]" if t.caption else "") for t in corpus.turns])
    elif kind == "prev_ctx":  # embed "previous turn + this memory" (store-time feasible)
        vec = embed([" ".join([corpus.turns[j].text for j in corpus.prev(i)] + [corpus.docs[i]]) for i in range(len(corpus.docs))])
    elif kind == "ctx_window":  # prev + this + next
        vec = embed([" ".join([corpus.turns[j].text for j in corpus.prev(i)] + [corpus.docs[i]] + [corpus.turns[j].text for j in corpus.neighbours(i) if j > i]) for i in range(len(corpus.docs))])
    else:
        raise ValueError(kind)
    _DOCVEC_CACHE[key] = vec
    return vec


def sentence_matrix(c: Ctx) -> tuple[np.ndarray, np.ndarray]:
    """Sentence-level vectors for multi-sentence memories: (vectors, owner doc index)."""
    key = (c.corpus.name, "sent")
    if key not in _DOCVEC_CACHE:
        texts, owners = [], []
        for i, t in enumerate(c.corpus.turns):
            parts = sentences(t.text)
            if len(parts) > 1:
                for p in parts:
                    texts.append(f"{t.speaker}: {p}" if t.speaker else p)
                    owners.append(i)
        _DOCVEC_CACHE[key] = embed(texts)
        _DOCVEC_CACHE[(c.corpus.name, "sent_owner")] = np.array(owners, dtype=int)
    return _DOCVEC_CACHE[key], _DOCVEC_CACHE[(c.corpus.name, "sent_owner")]


def dense_multi(c: Ctx, qi: int, views: Sequence[str] = ("base",), sent: bool = False) -> np.ndarray:
    """Max cosine over several representations of each memory."""
    q = c.qvecs[qi]
    best = c.dense @ q if "base" in views else np.full(len(c.corpus.docs), -1.0)
    for v in views:
        if v != "base":
            best = np.maximum(best, doc_vectors(c, v) @ q)
    if sent:
        vecs, owners = sentence_matrix(c)
        if len(owners):
            sims = vecs @ q
            np.maximum.at(best, owners, sims)
    return best


def s_dense_views(views: Sequence[str] = ("base",), sent: bool = False, replace: str | None = None) -> Strategy:
    def run(c: Ctx, qi: int) -> np.ndarray:
        if replace:
            return doc_vectors(c, replace) @ c.qvecs[qi]
        return dense_multi(c, qi, views, sent)

    return run


def s_hybrid(
    w_lex: float = 0.5,
    ctx_weight: float = 0.0,
    views: Sequence[str] = ("base",),
    sent: bool = False,
    nb_alpha: float = 0.0,
    prefix: bool = False,
    depth: int = 0,
    max_df: float = 1.0,
) -> Strategy:
    """The candidate pipeline: dense (max over views) + w * bm25/max(bm25), optional neighbour boost.

    depth > 0 simulates the engine: only the dense top-`depth` and lexical top-`depth` are known;
    a lexical-only candidate gets the lowest retrieved cosine, everything else is out.
    """

    def run(c: Ctx, qi: int) -> np.ndarray:
        d = dense_multi(c, qi, views, sent)
        b = c.bm25_vec(qi, ctx_weight, prefix, k=depth or 100, max_df=max_df)
        if depth:
            top = np.argsort(-d)[:depth]
            known = np.full_like(d, d[top].min())
            known[top] = d[top]
            d = np.where(b > 0, known, np.where(np.isin(np.arange(len(d)), top), d, -10.0))
        s = d + w_lex * (b / b.max() if b.max() > 0 else b)
        if nb_alpha:
            add = np.zeros_like(s)
            s0 = s - s.min()
            for i in range(len(s)):
                nb = c.corpus.neighbours(i)
                if nb:
                    add[i] = s0[nb].max()
            s = s0 + nb_alpha * add
        return s

    return run


# --------------------------------------------------------------------------------------------
# evaluation


def evaluate(ctxs: dict[str, Ctx], strategy: Strategy) -> dict[str, tuple[float, float, float, int]]:
    out: dict[str, list[int]] = {}
    allhits = np.zeros(3)
    alln = 0
    ms = []
    for name, c in ctxs.items():
        hits = np.zeros(3)
        for qi, q in enumerate(c.corpus.questions):
            t = time.perf_counter()
            s = strategy(c, qi)
            ms.append((time.perf_counter() - t) * 1000)
            order = np.argsort(-s, kind="stable")[:10]
            ev = {c.corpus.dia_index[e] for e in q.evidence if e in c.corpus.dia_index}
            for j, k in enumerate((1, 5, 10)):
                if ev & set(order[:k].tolist()):
                    hits[j] += 1
        out[name] = (*(hits / len(c.corpus.questions)), len(c.corpus.questions))
        allhits += hits
        alln += len(c.corpus.questions)
    out["all"] = (*(allhits / alln), alln)
    out["_ms"] = (float(np.median(ms)), 0, 0, 0)
    return out


def fmt(res: dict) -> str:
    cells = [" ".join(f"{v:.2f}" for v in res[n][:3]) for n in (*FILES, "all")]
    return " | ".join(cells)


def contexts() -> dict[str, Ctx]:
    return {f: Ctx.build(Corpus.load(f)) for f in FILES}


def locomo_table() -> None:
    ctxs = contexts()
    steps: list[tuple[str, Strategy]] = [
        ("dense (cosine)", s_dense),
        ("dense, memory without date prefix", s_dense_views(replace="text_only")),
        ("bm25 unicode61+porter, OR of terms", s_bm25()),
        ("bm25 + prefix* on terms>=4", s_bm25(prefix=True)),
        ("rrf k=60", s_rrf(60)),
        ("rrf k=10", s_rrf(10)),
        ("rrf k=60, lex weight 2", s_rrf(60, 2.0)),
        ("weighted z-score w=1", s_weighted(1.0, "z")),
        ("weighted minmax w=1", s_weighted(1.0, "minmax")),
        ("cos + 0.2*bm25/max", s_weighted(0.2, "max")),
        ("cos + 0.3*bm25/max", s_weighted(0.3, "max")),
        ("cos + 0.5*bm25/max", s_weighted(0.5, "max")),
        ("cos + 0.8*bm25/max", s_weighted(0.8, "max")),
        ("  + lexical ctx column w=0.2", s_hybrid(0.3, ctx_weight=0.2)),
        ("  + lexical ctx column w=0.5", s_hybrid(0.3, ctx_weight=0.5)),
        ("dense: embed prev+this (store time)", s_dense_views(replace="prev_ctx")),
        ("dense: embed prev+this+next", s_dense_views(replace="ctx_window")),
        ("dense: max(base, prev+this)", s_dense_views(("base", "prev_ctx"))),
        ("dense: max(base, sentences)", s_dense_views(("base",), sent=True)),
        ("dense: max(base, prev+this, sentences)", s_dense_views(("base", "prev_ctx"), sent=True)),
        ("hyb 0.3: max(base,prev+this)", s_hybrid(0.3, views=("base", "prev_ctx"))),
        ("hyb 0.3: max(base,prev+this,sent)", s_hybrid(0.3, views=("base", "prev_ctx"), sent=True)),
        ("hyb 0.3: base,sent + ctxcol .2", s_hybrid(0.3, 0.2, views=("base",), sent=True)),
        ("hyb 0.3: base,prev,sent + ctxcol .2", s_hybrid(0.3, 0.2, views=("base", "prev_ctx"), sent=True)),
        ("hyb 0.3 + neighbour boost 0.2", s_hybrid(0.3, nb_alpha=0.2)),
        ("hyb 0.3: base,prev,sent + nb 0.2", s_hybrid(0.3, views=("base", "prev_ctx"), sent=True, nb_alpha=0.2)),
        ("FINAL cos+.4 bm25/max, sent, ctx .4, d50", s_hybrid(0.4, 0.4, sent=True, depth=50)),
        ("FINAL + drop terms df>20%", s_hybrid(0.4, 0.4, sent=True, depth=50, max_df=0.2)),
    ]
    only = sys.argv[2:] and set(sys.argv[2:])
    print(f"{'step':40} | {'26: R@1 R@5 R@10':16} | {'30: R@1 R@5 R@10':16} | {'all: R@1 R@5 R@10':16} | ms/q (excl. embed)")
    for name, strat in steps:
        if only and not any(o in name for o in only):
            continue
        res = evaluate(ctxs, strat)
        print(f"{name:40} | {fmt(res)} | {res['_ms'][0]:.2f}", flush=True)


# --------------------------------------------------------------------------------------------
# recommended pipeline as a self-contained scorer (what the engine should do), with features

W_LEX = 0.4  # weight of bm25 / max(bm25) added to the dense cosine
CTX_WEIGHT = 0.4  # FTS5 column weight of the neighbours' text (body column weight 1.0)
DEPTH = 50  # candidates taken from each of dense and lexical
MAX_DF = 0.2  # query terms in more than 20 % of memories are dropped from the FTS5 query


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s", "ly"):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            return w[: -len(suf)]
    return w


def coverage(query: str, doc: str) -> float:
    """Share of the query's terms (stopwords removed, light stemming) that occur in the memory."""
    q = {_stem(t) for t in terms(query)}
    if not q:
        return 0.0
    d = {_stem(t) for t in terms(doc)}
    return len(q & d) / len(q)


@dataclass
class Candidate:
    index: int
    fused: float
    cos: float
    lex: float  # bm25 / max bm25 of the query, 0 when not a lexical hit
    cov: float


def candidates(c: Ctx, qi: int, query: str | None = None, qvec: np.ndarray | None = None, k: int = 20) -> list[Candidate]:
    query = query if query is not None else c.corpus.questions[qi].question
    qvec = qvec if qvec is not None else c.qvecs[qi]
    d = c.dense @ qvec
    vecs, owners = sentence_matrix(c)
    if len(owners):
        np.maximum.at(d, owners, vecs @ qvec)
    lex = np.zeros(len(d))
    for rowid, score in (c.lex_ctx if CTX_WEIGHT else c.lex).search(query, DEPTH, CTX_WEIGHT, False, MAX_DF):
        lex[rowid] = score
    if lex.max() > 0:
        lex = lex / lex.max()
    top = np.argsort(-d)[:DEPTH]
    pool = np.union1d(top, np.nonzero(lex)[0])
    floor = d[top].min()
    cos = {int(i): (float(d[i]) if i in set(top.tolist()) else float(floor)) for i in pool}
    fused = sorted(((cos[i] + W_LEX * lex[i], i) for i in cos), reverse=True)[:k]
    return [Candidate(i, f, cos[i], float(lex[i]), coverage(query, c.corpus.docs[i])) for f, i in fused]


FEATURES = ("cos", "lex", "cov", "top")


def feature_rows(cands: list[Candidate]) -> np.ndarray:
    """cos, lex (relative bm25), cov (query-term coverage), top (is first of its list)."""
    return np.array([[x.cos, x.lex, x.cov, 1.0 if r == 0 else 0.0] for r, x in enumerate(cands)])


def fit_logistic(X: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 50) -> np.ndarray:
    return fit_newton(np.hstack([X, np.ones((len(X), 1))]), y, l2=l2, iters=iters)


def predict(w: np.ndarray, X: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(np.hstack([X, np.ones((len(X), 1))]) @ w)))


def locomo_features(c: Ctx, k: int = 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    X, y, qid = [], [], []
    for qi, q in enumerate(c.corpus.questions):
        ev = {c.corpus.dia_index[e] for e in q.evidence if e in c.corpus.dia_index}
        cands = candidates(c, qi, k=k)
        X.append(feature_rows(cands))
        y += [1.0 if x.index in ev else 0.0 for x in cands]
        qid += [qi] * len(cands)
    return np.vstack(X), np.array(y), np.array(qid)


def reliability(p: np.ndarray, y: np.ndarray) -> str:
    bins = [0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.01]
    out = []
    for lo, hi in zip(bins, bins[1:]):
        m = (p >= lo) & (p < hi)
        if m.sum():
            out.append(f"[{lo:.1f},{hi:.1f}) n={m.sum():4d} pred={p[m].mean():.2f} obs={y[m].mean():.2f}")
    return "\n    ".join(out)


def calibrate(verbose: bool = True) -> np.ndarray:
    ctxs = contexts()
    data = {n: locomo_features(c) for n, c in ctxs.items()}
    for a, b in ((FILES[0], FILES[1]), (FILES[1], FILES[0])):
        Xa, ya, _ = data[a]
        Xb, yb, qb = data[b]
        w = fit_logistic(Xa, ya)
        p = predict(w, Xb)
        ll = -np.mean(yb * np.log(p + 1e-9) + (1 - yb) * np.log(1 - p + 1e-9))
        base = yb.mean()
        ll0 = -np.mean(yb * np.log(base) + (1 - yb) * np.log(1 - base))
        kept = p >= 0.30
        # recall@10 after the cut-off: a question is a hit when an evidence turn in its top 10 survives
        hit10 = np.mean([any(yb[(qb == q)][:10][kept[(qb == q)][:10]]) for q in np.unique(qb)])
        print(f"fit on {a}, check on {b}: w={dict(zip(FEATURES + ('bias',), np.round(w, 2)))}")
        print(f"  log-loss {ll:.3f} (constant {ll0:.3f}); results kept at P>=0.30: {kept.mean():.2%} of top-20, precision {yb[kept].mean() if kept.any() else float('nan'):.2f}; recall@10 after cut-off {hit10:.2f}")
        print("    " + reliability(p, yb))
    X = np.vstack([data[n][0] for n in FILES])
    y = np.concatenate([data[n][1] for n in FILES])
    w = fit_logistic(X, y)
    print(f"fitted on both: w={dict(zip(FEATURES + ('bias',), np.round(w, 3)))}")
    return w


# --------------------------------------------------------------------------------------------
# our own assistant set (assistant_data.py): memories an assistant would store, natural questions,
# and never-stored ones


def assistant_ctx() -> Ctx:
    turns = [locomo_data.Turn(f"M{i}", i, "", "", m, None) for i, m in enumerate(MEMORIES)]
    qs = [locomo_data.Question(q, [f"M{i}" for i in t], 4) for q, t in QUESTIONS]
    corpus = Corpus("assistant", list(MEMORIES), turns, qs, {t.dia_id: i for i, t in enumerate(turns)})
    # memories stored on different days: no neighbour context
    return Ctx(corpus, embed(MEMORIES), embed([q for q, _ in QUESTIONS]), Lexical(MEMORIES), Lexical(MEMORIES, [""] * len(MEMORIES)))


def assistant(w: np.ndarray | None = None, cutoff: float = 0.30) -> None:
    w = calibrate() if w is None else w
    c = assistant_ctx()
    hits = np.zeros(3)
    print("\npositives (P of the best target, rank):")
    for qi, (q, targets) in enumerate(QUESTIONS):
        cands = candidates(c, qi, k=10)
        p = predict(w, feature_rows(cands))
        kept = [x.index for x, pi in zip(cands, p) if pi >= cutoff]
        for j, k in enumerate((1, 3, 5)):
            hits[j] += bool(set(kept[:k]) & targets)
        best = next(((r, x, pi) for r, (x, pi) in enumerate(zip(cands, p)) if x.index in targets), None)
        flag = "ok " if set(kept[:5]) & targets else "MISS"
        if best:
            r, x, pi = best
            print(f"  {flag} {q:42} rank {r + 1:2d} P={pi:.2f} cos={x.cos:+.2f} lex={x.lex:.2f} kept={len(kept)}")
        else:
            print(f"  {flag} {q:42} not in candidates")
    n = len(QUESTIONS)
    print(f"recall@1/3/5 after cut-off: {hits[0] / n:.2f} {hits[1] / n:.2f} {hits[2] / n:.2f}")
    junk = 0
    qv = embed(NEGATIVES)
    print("negatives (top P, top memory):")
    for q, v in zip(NEGATIVES, qv):
        cands = candidates(c, 0, q, v, k=10)
        p = predict(w, feature_rows(cands))
        junk += bool((p >= cutoff).any())
        print(f"  {'JUNK' if (p >= cutoff).any() else 'ok  '} {q:42} P={p.max():.2f} -> {MEMORIES[cands[int(p.argmax())].index][:60]}")
    print(f"junk rate (negatives returning anything at P>={cutoff}): {junk}/{len(NEGATIVES)} = {junk / len(NEGATIVES):.2f}")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "locomo"
    {"locomo": locomo_table, "calibrate": calibrate, "assistant": assistant}[cmd]()
