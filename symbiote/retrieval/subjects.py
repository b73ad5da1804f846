"""The subjects a request can be about, and the words that say a memory is about the same one.

"Help me write a script" and "I prefer TypeScript over JavaScript" have a cosine under 0.2 with
MiniLM, and the model puts "I'm working on a React app with TypeScript" nowhere near
"programming". But "script" says the request is about code, and "TypeScript" says the memory
is. Each subject lists such words, used both ways: a request naming one of them is about the
subject, and a memory holding one (found by the porter-stemmed keyword index) belongs to it.
Words that often mean something else ("back", "show", "call") are left out. The lists are
general vocabulary written for the purpose, not taken from an evaluation set.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


CODE = _words(
    """code coding program programming programmer script scripts scripting function functions bug bugs debug
    compile compiler typescript javascript python rust golang java kotlin swift ruby php csharp regex
    algorithm json yaml cli indentation semicolons prettier eslint lint linter refactor"""
)
FRONTEND = _words(
    """frontend html css sass tailwind react vue angular svelte nextjs component components hooks ui ux
    webpack vite zustand redux styling layout login signup form forms flutter android ios"""
)
BACKEND = _words(
    """backend server servers api apis endpoint endpoints database databases sql schema migration migrations
    postgres postgresql mysql sqlite mongodb redis supabase firebase graphql rest oauth auth authentication
    fastapi django flask rails laravel node nodejs deno payments stripe"""
)
DEVOPS = _words(
    """deploy deployment deployments hosting hosted vps docker container containers kubernetes aws azure gcp
    terraform linux ci pipeline pipelines devops release releases production staging"""
)
TOOLING = _words(
    """editor ide vim neovim vscode emacs terminal bash shell git github gitlab repo repository commit
    branch npm pnpm yarn pip poetry package packages dependency dependencies library libraries framework
    frameworks tests testing unittest jest vitest pytest playwright cypress e2e"""
)
FOOD = _words(
    """food eating meal meals dinner lunch breakfast brunch snack snacks recipe recipes cook cooking bake
    baking dessert desserts cake restaurant restaurants takeaway takeaways takeout delivery menu cuisine dish
    dishes ingredients groceries grocery kitchen vegetarian vegan pescatarian diet allergy allergies allergic
    spicy curry pasta pizza salad soup sandwich sushi burger noodles rice cheese meat fish chicken vegetables
    fruit coffee tea drink drinks wine beer cocktail cocktails alcohol juice smoothie picnic barbecue bbq chef
    hungry starving gluten dairy lactose sugar cilantro coriander peanuts nuts mushrooms spices flavour"""
)
FITNESS = _words(
    """workout workouts exercise exercises training gym running runner jog jogging marathon race
    races cycling bike biking swim swimming yoga pilates stretch stretching climbing bouldering hike hiking
    weights lifting strength cardio sport sports football tennis squash basketball fitness muscles injury
    injuries knee knees shoulder steps"""
)
HEALTH = _words(
    """health healthy doctor gp dentist hospital medication medications medicine pill pills prescription
    vitamin vitamins allergy allergic symptom symptoms pain headache migraine sick ill illness flu fever
    cough sleep sleeping insomnia tired stress stressed anxiety anxious therapy therapist diabetes asthma
    blood pressure injury knee bedtime meditation meditate"""
)
TRAVEL = _words(
    """travel travelling traveling trip trips holiday holidays vacation flight flights flying plane
    airport airline train trains rail bus car hotel hotels airbnb hostel passport visa
    luggage packing suitcase itinerary destination abroad tour sightseeing beach camping journey
    commute ferry"""
)
MONEY = _words(
    """money budget budgeting spending saving savings expense expenses bills bill rent mortgage
    loan debt bank banking account accounts credit payment payments invest investing investment
    investments isa pension tax taxes salary income price prices afford cheap expensive deposit
    finances financial"""
)
HOME = _words(
    """home house flat apartment room rooms bedroom kitchen garden gardening balcony furniture decor
    cleaning tidy declutter clutter laundry landlord rent repair plumber boiler heating
    neighbour neighbours neighbor neighbors plants"""
)
PEOPLE = _words(
    """mom mum mother dad father parents sister brother siblings partner wife husband boyfriend girlfriend
    son daughter kids children child baby nephew niece aunt uncle cousin grandma grandpa grandmother
    grandfather family friend friends colleague colleagues boss manager team coworker"""
)
PETS = _words("""dog dogs puppy cat cats kitten pet pets vet leash walkies rabbit hamster parrot horse""")
OCCASIONS = _words(
    """birthday birthdays anniversary wedding weddings party parties celebration celebrate gift gifts
    presents surprise christmas invitation invite speech toast"""
)
MEDIA = _words(
    """book books novel novels reading author authors film films movie movies cinema series
    netflix documentary music song songs album albums band bands concert gig gigs playlist spotify
    podcast podcasts game games videogame"""
)
HOBBIES = _words(
    """hobby hobbies weekend weekends fun photo photos photography camera paint painting drawing guitar
    bass piano drums instrument singing knit knitting sew sewing gardening chess boardgames crafts
    volunteer volunteering rehearsal"""
)
LEARNING = _words(
    """learn learning study studying course courses lesson lessons exam exams vocab vocabulary
    grammar language languages japanese spanish french german italian chinese mandarin korean portuguese
    practice practise flashcards tutor certification degree homework"""
)
SCHEDULE = _words(
    """schedule calendar week weekly today tomorrow morning mornings evening evenings meeting meetings
    appointment appointments standup deadline deadlines routine agenda availability busy monday tuesday
    wednesday thursday friday saturday sunday reminder reminders remind"""
)
WORK = _words(
    """work job career office company employer promotion interview cv resume salary raise colleagues
    manager boss team client clients"""
)
WRITING = _words(
    """email emails message messages letter reply draft report summary summarise summarize blog essay
    speech tone formal grammar spelling translate presentation slides wording jargon"""
)
DEVICES = _words(
    """phone phones iphone smartphone laptop computer pc mac macbook tablet ipad headphones earbuds
    charger keyboard monitor screen printer router wifi camera console thinkpad"""
)

SUBJECTS: dict[str, tuple[str, ...]] = {
    "code": CODE,
    "frontend": FRONTEND,
    "backend": BACKEND,
    "devops": DEVOPS,
    "tooling": TOOLING,
    "food": FOOD,
    "fitness": FITNESS,
    "health": HEALTH,
    "travel": TRAVEL,
    "money": MONEY,
    "home": HOME,
    "people": PEOPLE,
    "pets": PETS,
    "occasions": OCCASIONS,
    "media": MEDIA,
    "hobbies": HOBBIES,
    "learning": LEARNING,
    "schedule": SCHEDULE,
    "work": WORK,
    "writing": WRITING,
    "devices": DEVICES,
}

# Words that show what a memory is about but, in a request, usually mean something else
# ("how does it work?", "what's fun to do?").
NOT_CUES = frozenset("work fun today tomorrow learn learning healthy".split())

# Words that name a whole subject, not a particular thing in it: "what's my job again?" is as
# vague as "what do I do?", where "what's my salary?" asks for one fact.
KINDS = frozenset(
    """code coding programming frontend backend devops food meal meals diet fitness exercise sport sports
    health travel money finances financial budget home family friends pet pets hobby hobbies media music
    learning schedule calendar routine week weekly work job career writing devices tech stack""".split()
)

_TOKEN = re.compile(r"[a-z0-9#+]+")
_INDEX: dict[str, set[str]] = {}
for _name, _members in SUBJECTS.items():
    for _word in _members:
        if _word not in NOT_CUES:
            _INDEX.setdefault(_word, set()).add(_name)


@dataclass(frozen=True)
class SubjectMatch:
    names: tuple[str, ...]  # the subjects the request's words name, most named first
    words: tuple[str, ...]  # the member words of those subjects, for the keyword index
    particular: tuple[str, ...]  # the words naming a particular thing ("salary"), not a whole subject ("money")


@functools.lru_cache(maxsize=8192)
def _forms(token: str) -> tuple[str, ...]:
    """The token and the forms a plural or a verb ending leaves behind ("scripts" -> "script")."""
    forms = [token]
    for ending in ("ies", "es", "s", "ing", "ed"):
        if token.endswith(ending) and len(token) - len(ending) >= 3:
            stem = token[: -len(ending)]
            forms += [stem, stem + "y"] if ending == "ies" else [stem, stem + "e"]
    return tuple(forms)


def subjects_of(text: str) -> SubjectMatch | None:
    """The subjects whose words appear in `text`, or None."""
    counts: dict[str, int] = {}
    particular: list[str] = []
    for token in _TOKEN.findall(text.lower().replace("\u2019", "'")):
        named: set[str] = set()
        for form in _forms(token):
            named |= _INDEX.get(form, set())
        for name in named:
            counts[name] = counts.get(name, 0) + 1
        if named and not set(_forms(token)) & KINDS:
            particular.append(token)
    if not counts:
        return None
    names = tuple(sorted(counts, key=lambda n: -counts[n]))
    words = tuple(dict.fromkeys(w for n in names for w in SUBJECTS[n]))
    return SubjectMatch(names, words, tuple(particular))


def mentions(text: str, words: tuple[str, ...]) -> bool:
    """Whether `text` holds one of `words`, in any of the forms `_forms` allows."""
    wanted = _all_forms(words)
    return any(token in wanted or not wanted.isdisjoint(_forms(token)) for token in _TOKEN.findall(text.lower()))


@functools.lru_cache(maxsize=256)
def _all_forms(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(form for word in words for form in _forms(word))
