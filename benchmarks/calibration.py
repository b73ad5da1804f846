"""Calibrating `relevance_score`: what it estimates, fitted on what, and how it does.

Offline (no server), on top of the retrieval pipeline measured in `retrieval_lab.py`
(dense max over whole/sentence vectors + 0.4 * bm25/max, FTS5 ctx column, depth 50).

Data:
  * LoCoMo dev files (read from ../shared/data/locomo-dev/, never copied), categories 1-4.
  * The assistant set (assistant_data.py): 40 memories, 40 questions plus 21 vaguer ones, 20
    never-stored questions plus 20 more. Split by index into a training half (even) and a
    held-out half (odd); the seed question "what am I building?" is index 0 (training half) and
    is reported on its own.

Cross-fitting: the model is fitted on LoCoMo file A + the assistant training half and reported on
LoCoMo file B + the assistant held-out half, both ways; the final coefficients are fitted on all.

    .venv/bin/python benchmarks/calibration.py            # held-out table + final coefficients
    .venv/bin/python benchmarks/calibration.py --verbose  # plus per-question lines of the assistant set
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import retrieval_lab as L  # noqa: E402
from assistant_data import MEMORIES, NEGATIVES, QUESTIONS  # noqa: E402
from logistic import balanced_weights, fit_newton  # noqa: E402

CUTOFF = 0.30
LOCOMO_WINDOW = 1  # a LoCoMo turn counts as relevant when within this many turns of an evidence turn (same session)

# --------------------------------------------------------------------------------------------
# topic prototypes: for each kind of thing an assistant stores about a user, a few generic ways to
# ask about it (question side) and a few generic memories of that kind (memory side). None of the
# phrasings is one of the evaluation questions or memories, except the seed "what am I building?"
# which the spec names.

TOPICS: dict[str, tuple[list[str], list[str]]] = {
    "projects": (
        ["what am I building?", "what project is the user busy with?", "what is the user developing at the moment?"],
        ["I'm working on a mobile app with a Python backend.", "I'm building a website for my small business.", "Side project: a game written in C#."],
    ),
    "job": (
        ["what does the user do for a living?", "tell me about the user's employer"],
        ["User works as a nurse at the city hospital.", "I'm a product manager at a logistics company."],
    ),
    "family": (
        ["who are the user's relatives?", "tell me about the user's family members"],
        ["User's brother Tom lives in Leeds.", "My wife Laura is a teacher.", "User has two sons, Ben and Leo."],
    ),
    "pets": (
        ["tell me about the user's animals", "does the user own a pet?"],
        ["User has a cat named Luna.", "My dog is a golden retriever."],
    ),
    "food": (
        ["what food does the user enjoy?", "what are the user's eating habits?"],
        ["User loves Italian food, especially lasagna.", "User doesn't eat pork.", "User drinks green tea every morning."],
    ),
    "health": (
        ["what health conditions does the user have?", "anything medical to know about the user?"],
        ["User has asthma and carries an inhaler.", "User takes medication for high blood pressure."],
    ),
    "fitness": (
        ["how does the user exercise?", "what sport does the user do?"],
        ["User goes swimming three times a week.", "User is training for a 10k race."],
    ),
    "hobbies": (
        ["what does the user do in their free time?", "what are the user's pastimes?"],
        ["User paints watercolours at the weekend.", "User collects vinyl records.", "User plays chess online."],
    ),
    "media": (
        ["what does the user like to read or watch?", "the user's taste in music and films"],
        ["User loves detective novels.", "User's favourite band is Radiohead."],
    ),
    "home": (
        ["where is the user's home?", "what city is the user in?"],
        ["User lives in Manchester.", "User rents a flat in the city centre."],
    ),
    "travel": (
        ["what trips is the user planning?", "how does the user prefer to travel?"],
        ["User is going to Spain in August.", "User prefers trains over planes."],
    ),
    "goals": (
        ["what does the user want to achieve?", "what are the user's plans for the future?"],
        ["User wants to learn to sail next year.", "User's goal is to get promoted to senior engineer."],
    ),
    "schedule": (
        ["what is on the user's calendar?", "what are the user's routines during the week?"],
        ["User has yoga on Tuesday evenings.", "The sprint review is every other Friday at 3 pm."],
    ),
    "dates": (
        ["what dates matter to the user?"],
        ["User's anniversary is on 2 June.", "User's son's birthday is 5 May."],
    ),
    "tech": (
        ["which technologies does the user work with?", "what software does the user rely on?"],
        ["User writes Python with VS Code.", "The backend uses Django and Redis.", "We use GitHub Actions for CI."],
    ),
    "decisions": (
        ["what technical choices were made?", "which options did the team choose?"],
        ["Decided to use Kafka instead of RabbitMQ for events.", "We chose Tailwind over Bootstrap for styling."],
    ),
    "finance": (
        ["what is the user's financial situation?", "how does the user handle money?"],
        ["User has a budget of 500 euros a month for groceries.", "User invests in index funds."],
    ),
    "learning": (
        ["what is the user trying to learn?", "which courses is the user taking?"],
        ["User is taking an online course in machine learning.", "User is learning Spanish."],
    ),
    "style": (
        ["how does the user want the assistant to respond?", "the user's preferences for writing and code style"],
        ["User prefers short emails.", "User likes answers with code examples."],
    ),
    "people": (
        ["who does the user work with?", "who are the user's friends?"],
        ["User's colleague Marta leads the data team.", "User's best friend is Jonas."],
    ),
    "devices": (
        ["what devices does the user own?"],
        ["User has a Pixel 8 phone.", "User uses a Dell XPS laptop."],
    ),
}


def split(n: int, part: str) -> list[int]:
    return [i for i in range(n) if (i % 2 == 0) == (part == "train")]


# --------------------------------------------------------------------------------------------
# memory-side topic keywords (stems after retrieval_lab's light stemming): a memory mentioning one
# belongs to the topic even when its embedding does not say so ("I'm working on a React app").

TOPIC_WORDS: dict[str, set[str]] = {
    "projects": {"working", "build", "building", "project", "app", "develop", "developing", "prototype"},
    "job": {"work", "works", "job", "engineer", "manager", "company", "startup", "career", "employer"},
    "family": {"sister", "brother", "mother", "mom", "father", "dad", "partner", "wife", "husband", "daughter", "son", "kid", "children", "parent"},
    "pets": {"dog", "cat", "pet", "puppy", "kitten"},
    "food": {"eat", "food", "vegetarian", "vegan", "cuisine", "coffee", "tea", "recipe", "diet", "dinner", "lunch", "breakfast"},
    "health": {"allergic", "allergy", "diabetes", "medication", "doctor", "asthma", "health", "meditate", "meditat"},
    "fitness": {"run", "marathon", "gym", "swim", "train", "fitness", "football", "sport"},
    "hobbies": {"play", "plays", "guitar", "read", "reads", "hobby", "paint", "game", "meditat"},
    "media": {"book", "novel", "author", "film", "movie", "music", "band", "fiction"},
    "home": {"live", "lives", "moved", "city", "home", "flat", "apartment"},
    "travel": {"fly", "flight", "travel", "trip", "seat", "hotel"},
    "goals": {"goal", "want", "wants", "plan", "saving", "preparing", "learning"},
    "schedule": {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "weekly", "every", "evening", "morning", "meeting", "standup"},
    "dates": {"birthday", "anniversary", "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"},
    "tech": {"use", "uses", "editor", "framework", "database", "typescript", "python", "javascript", "aws", "react"},
    "decisions": {"decided", "chose", "chosen", "instead", "favour", "over"},
    "finance": {"saving", "budget", "money", "invest", "deposit", "salary"},
    "learning": {"learning", "course", "exam", "study", "studying", "practise", "practice"},
    "style": {"prefers", "prefer", "answers", "spelling", "indentation", "concise", "style"},
    "people": {"manager", "colleague", "friend", "team"},
    "devices": {"laptop", "phone", "computer", "macbook", "tablet"},
}
TOPIC_GATE = 0.45  # a query is a "topic question" when its best topic activation reaches this
TOPIC_BOOST = 0.5  # added to the fused ranking score of the topic's memories for a topic question
DISCOUNT = float(sys.argv[sys.argv.index("--discount") + 1]) if "--discount" in sys.argv else 0.25  # score of result r = P(answerable) * exp(-(best fused - fused_r) / DISCOUNT)

# --------------------------------------------------------------------------------------------
# features


_PROTO: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None


def prototypes() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(question vectors, their topic ids, memory exemplar vectors, their topic ids)."""
    global _PROTO
    if _PROTO is None:
        qs, qt, ms, mt = [], [], [], []
        for k, (questions, memories) in enumerate(TOPICS.values()):
            qs += questions
            qt += [k] * len(questions)
            ms += memories
            mt += [k] * len(memories)
        _PROTO = (L.embed(qs), np.array(qt), L.embed(ms), np.array(mt))
    return _PROTO


def topic_sims(vecs: np.ndarray, which: str) -> np.ndarray:
    """(n, n_topics): max cosine of each vector to the topic's question (or memory) phrasings."""
    qv, qt, mv, mt = prototypes()
    pv, pt = (qv, qt) if which == "q" else (mv, mt)
    sims = vecs @ pv.T
    out = np.full((len(vecs), len(TOPICS)), -1.0)
    for k in range(len(TOPICS)):
        out[:, k] = sims[:, pt == k].max(axis=1)
    return out


def membership(docs: list[str], vecs: np.ndarray) -> np.ndarray:
    """(n_memories, n_topics): max(cosine to the topic's exemplar memories, 0.5 if a topic keyword occurs)."""
    out = topic_sims(vecs, "m")
    for i, d in enumerate(docs):
        words = {stem(t) for t in L.terms(d)} | set(L.terms(d))
        for k, kw in enumerate(TOPIC_WORDS.values()):
            if words & kw:
                out[i, k] = max(out[i, k], 0.5)
    return out


def stem(w: str) -> str:
    """Light suffix stripping that maps drive/drives/driving and work/works/working together."""
    for suf in ("ing", "ed", "es", "s", "e", "ly"):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not (suf == "s" and w.endswith("ss")):
            return w[: -len(suf)]
    return w


def idf_table(docs: list[str]) -> tuple[dict[str, int], int]:
    df: dict[str, int] = {}
    for d in docs:
        for t in {stem(t) for t in L.terms(d)}:
            df[t] = df.get(t, 0) + 1
    return df, len(docs)


def idf_coverage(query: str, doc: str, df: dict[str, int], n: int) -> float:
    """IDF-weighted share of the query's terms found in the memory (a term found nowhere weighs most)."""
    q = {stem(t) for t in L.terms(query)}
    if not q:
        return 0.0
    d = {stem(t) for t in L.terms(doc)}
    w = {t: np.log((n + 1) / (df.get(t, 0) + 0.5)) for t in q}
    return float(sum(w[t] for t in q & d) / sum(w.values()))


QFEATURES = ("top_cos", "top_idfcov", "topic")


@dataclass
class Query:
    text: str
    order: list[int]  # memory indices, best first (up to 10)
    gap: np.ndarray  # best ranking score - this one's
    qx: np.ndarray  # query-level features
    answerable: bool
    evidence: set[int]


def build_query(c: L.Ctx, member: np.ndarray, df: tuple[dict[str, int], int], query: str, qvec: np.ndarray, evidence: set[int], k: int = 10) -> Query:
    cands = L.candidates(c, 0, query, qvec, k=20)
    act = topic_sims(qvec[None, :], "q")[0]
    kstar = int(act.argmax())
    topical = act[kstar] >= TOPIC_GATE
    score = {x.index: x.fused for x in cands}
    if topical:  # topic question: the topic's memories join the candidates (as the engine's 3rd source would)
        for i in np.argsort(-member[:, kstar])[:10]:
            score.setdefault(int(i), float(c.dense[i] @ qvec))
        score = {i: s + TOPIC_BOOST * float(member[i, kstar]) for i, s in score.items()}
    order = sorted(score, key=lambda i: -score[i])[:k]
    best = score[order[0]]
    top_cos = max(float(x.cos) for x in cands)
    top_idf = max(idf_coverage(query, c.corpus.docs[i], *df) for i in order)
    topic = float(act[kstar] * member[order[0], kstar]) if topical else 0.0
    return Query(query, order, np.array([best - score[i] for i in order]), np.array([top_cos, top_idf, topic]), bool(evidence), evidence)


def locomo_queries(c: L.Ctx) -> list[Query]:
    member = membership(c.corpus.docs, c.dense)
    df = idf_table(c.corpus.docs)
    out = []
    for qi, q in enumerate(c.corpus.questions):
        ev = {c.corpus.dia_index[e] for e in q.evidence if e in c.corpus.dia_index}
        out.append(build_query(c, member, df, q.question, c.qvecs[qi], ev))
    return out


def assistant_queries() -> tuple[list[Query], list[Query]]:
    c = L.assistant_ctx()
    member = membership(c.corpus.docs, c.dense)
    df = idf_table(c.corpus.docs)
    qv = L.embed([q for q, _ in QUESTIONS])
    pos = [build_query(c, member, df, q, v, t) for (q, t), v in zip(QUESTIONS, qv)]
    nv = L.embed(NEGATIVES)
    neg = [build_query(c, member, df, q, v, set()) for q, v in zip(NEGATIVES, nv)]
    return pos, neg


# --------------------------------------------------------------------------------------------
# model: P(answerable) = sigmoid(w . query features + bias), weighted so answerable and
# never-stored questions carry equal total weight (a 50/50 prior); score_r = P * exp(-gap_r / DISCOUNT)


def fit(queries: list[Query], l2: float = 1e-2) -> np.ndarray:
    X = np.array([q.qx for q in queries])
    y = np.array([1.0 if q.answerable else 0.0 for q in queries])
    return fit_newton(np.hstack([X, np.ones((len(X), 1))]), y, balanced_weights(y), l2=l2, iters=60)


def p_answerable(w: np.ndarray, q: Query) -> float:
    return float(1 / (1 + np.exp(-(q.qx @ w[:-1] + w[-1]))))


def scores(w: np.ndarray, q: Query) -> np.ndarray:
    return p_answerable(w, q) * np.exp(-q.gap / DISCOUNT)


def kept(w: np.ndarray, q: Query, cutoff: float | None = None) -> list[int]:
    cutoff = CUTOFF if cutoff is None else cutoff
    return [i for i, s in zip(q.order, scores(w, q)) if s >= cutoff]


def recall(w, queries: list[Query], ks=(1, 5, 10)) -> list[float]:
    hits = np.zeros(len(ks))
    for q in queries:
        k_ = kept(w, q)
        for j, k in enumerate(ks):
            hits[j] += bool(set(k_[:k]) & q.evidence)
    return list(hits / max(len(queries), 1))


def junk(w, queries: list[Query]) -> float:
    return float(np.mean([bool(kept(w, q)) for q in queries])) if queries else 0.0


def main() -> None:
    global CUTOFF
    verbose = "--verbose" in sys.argv
    ctxs = L.contexts()
    loco = {n: locomo_queries(c) for n, c in ctxs.items()}
    pos, neg = assistant_queries()
    parts = {p: ([pos[i] for i in split(len(pos), p)], [neg[i] for i in split(len(neg), p)]) for p in ("train", "held")}
    print(f"query features {QFEATURES}; cut-off {CUTOFF}; topic gate {TOPIC_GATE}, boost {TOPIC_BOOST}; discount {DISCOUNT}")
    print(f"{'fitted on':24} | {'held-out LoCoMo R@1 R@5 R@10':30} | asst R@5 fit/held | junk fit/held | seed")
    for a, b in ((L.FILES[0], L.FILES[1]), (L.FILES[1], L.FILES[0])):
        for ap, bp in (("train", "held"), ("held", "train")):
            w = fit(loco[a] + parts[ap][0] + parts[ap][1])
            r = recall(w, loco[b])
            ra, rb = recall(w, parts[ap][0])[1], recall(w, parts[bp][0])[1]
            ja, jb = junk(w, parts[ap][1]), junk(w, parts[bp][1])
            print(f"{a} + asst {ap:5}     | {b}: {r[0]:.2f} {r[1]:.2f} {r[2]:.2f}        | {ra:.2f} / {rb:.2f}       | {ja:.2f} / {jb:.2f}   | {'ok' if recall(w, [pos[0]])[1] else 'MISS'}")
    w = fit([q for n in L.FILES for q in loco[n]] + pos + neg)
    print("\nfinal fit on everything: P(answerable) = sigmoid(" + " + ".join(f"{c:.3f}*{f}" for c, f in zip(w[:-1], QFEATURES)) + f" {w[-1]:+.3f})")
    allq = [q for n in L.FILES for q in loco[n]]
    for n, qs in (*loco.items(), ("all", allq)):
        r = recall(w, qs)
        r0 = [np.mean([bool(set(q.order[:k]) & q.evidence) for q in qs]) for k in (1, 5, 10)]
        print(f"  LoCoMo {n:8}: R@1/5/10 at cut-off {r[0]:.2f} {r[1]:.2f} {r[2]:.2f}  (no cut-off {r0[0]:.2f} {r0[1]:.2f} {r0[2]:.2f})")
    for p in ("train", "held"):
        print(f"  assistant {p}: R@5 {recall(w, parts[p][0])[1]:.2f}, junk {junk(w, parts[p][1]):.2f}")
    print(f"  seed: {'ok' if recall(w, [pos[0]])[1] else 'MISS'} (rank {pos[0].order.index(0) + 1} of the ranking, score {scores(w, pos[0])[pos[0].order.index(0)]:.2f})")
    for p in ("train", "held"):
        print(f"  assistant {p} R@5 without cut-off: {np.mean([bool(set(q.order[:5]) & q.evidence) for q in parts[p][0]]):.2f}")
    for cut in (0.15, 0.2, 0.25, 0.3, 0.4):
        CUTOFF = cut
        print(f"  cut-off {cut:.2f}: assistant R@5 {recall(w, pos)[1]:.2f}, junk {junk(w, neg):.2f}, LoCoMo R@5/10 {recall(w, allq)[1]:.2f}/{recall(w, allq)[2]:.2f}")
    CUTOFF = 0.30
    if verbose:
        for q in pos + neg:
            s = scores(w, q)
            k_ = kept(w, q)
            tag = ("ok  " if set(k_[:5]) & q.evidence else "MISS") if q.answerable else ("JUNK" if k_ else "ok  ")
            print(f"   {tag} {q.text:45} P={p_answerable(w, q):.2f} qx={np.round(q.qx, 2)} kept={len(k_)} top: {MEMORIES[q.order[0]][:45]} ({s[0]:.2f})")


if __name__ == "__main__":
    main()
