"""Writes `update_lives.json`: many owners' lives told in order over months, with the updates in them.

The broad update set of issue 68: each owner is a sequence of memories with the time each was told
(months apart), holding facts that change later, said every way people say a change (explicit,
an implicit new value, a changed number, date-stamped readings, the third person, a partial
change, a reversal, a change of status, a rename, a fact changed in the middle of a long journal
entry, a terse note), and look-alikes that replace nothing (a sibling's fact, two projects on one
stack, a second job, weekly notes written to one template, a plan beside a past event, two
children's activities), among everyday notes and long journal entries that change nothing.

Each update comes with a question the newer fact answers (and the older one answered), each
look-alike with a question only it answers. The owners are split ONCE, by owner, into a fitting
and a held-out half (`half`): constants are set on `fit` only, both are reported
(`update_lives_eval.py`). Fixed seed: running it again writes the same file.

    .venv/bin/python eval/update_lives.py     # writes eval/update_lives.json
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SEED = 68
OWNERS = 56
OUT = Path(__file__).resolve().with_name("update_lives.json")

FIRST = [
    "Maya",
    "Jonas",
    "Aisha",
    "Tomás",
    "Ingrid",
    "Kwame",
    "Lena",
    "Ravi",
    "Sofia",
    "Dmitri",
    "Hana",
    "Owen",
    "Chiara",
    "Yusuf",
    "Elif",
    "Marcus",
    "Priya",
    "Björn",
    "Nadia",
    "Theo",
    "Camille",
    "Jae",
    "Fatima",
    "Liam",
    "Zoe",
    "Mateo",
    "Ayesha",
    "Finn",
    "Lucia",
    "Sanjay",
    "Greta",
    "Emeka",
    "Mira",
    "Pablo",
    "Wen",
    "Oscar",
    "Leila",
    "Noor",
    "Stefan",
    "Rosa",
    "Kenji",
    "Amara",
    "Felix",
    "Ines",
    "Tariq",
    "Hugo",
    "Yara",
    "Arjun",
    "Clara",
    "Dario",
    "Saoirse",
    "Mehmet",
    "Anouk",
    "Vikram",
    "Beatriz",
    "Ole",
]
LIVES = [
    "ICU nurse",
    "backend developer",
    "primary school teacher",
    "freelance photographer",
    "PhD student in ecology",
    "restaurant sous-chef",
    "civil engineer",
    "retired postman",
    "marketing manager",
    "physiotherapist",
    "bus driver",
    "UX designer",
    "accountant",
    "carpenter",
    "pharmacist",
    "journalist",
    "data analyst",
    "vet nurse",
    "architect",
    "stay-at-home parent",
    "electrician",
    "museum curator",
    "paramedic",
    "sales rep",
    "translator",
    "farmer",
    "pilot",
    "lawyer",
    "barista and musician",
    "lab technician",
]
CITIES = [
    "Leeds",
    "Bristol",
    "Lyon",
    "Porto",
    "Utrecht",
    "Graz",
    "Gdańsk",
    "Malmö",
    "Bilbao",
    "Turin",
    "Cork",
    "Aarhus",
    "Brno",
    "Ghent",
    "Nantes",
    "Bologna",
    "Tampere",
    "Leipzig",
    "Valencia",
    "Edinburgh",
    "Basel",
    "Kraków",
    "Seville",
    "Rotterdam",
]
COMPANIES = [
    "Northwind Logistics",
    "Helio Energy",
    "Bramble & Co",
    "Quanta Health",
    "Ostrava Steel",
    "BluePeak Labs",
    "Corvid Games",
    "Harbor Insurance",
    "Lumen Print",
    "Vega Robotics",
    "Maple Street Bakery",
    "Tidewater Foods",
    "Cobalt Consulting",
    "Fernway Travel",
    "Orchid Pharma",
    "Stellar Freight",
]
PEOPLE = [
    "Dr. Patel",
    "Dr. Okafor",
    "Dr. Lindqvist",
    "Dr. Moreau",
    "Dr. Chen",
    "Dr. Haddad",
    "Dr. Novak",
    "Dr. Silva",
    "Dr. Brennan",
    "Dr. Takahashi",
]
COACHES = ["Mark", "Aoife", "Sven", "Lucía", "Dev", "Kasia", "Jamal", "Elena", "Rory", "Mei"]
PARTNERS = ["Tom", "Anna", "Sam", "Lea", "Ben", "Nina", "Kofi", "Julia", "Marco", "Ella", "Raj", "Ida"]
KIDS = ["Mia", "Leo", "Ava", "Noah", "Ella", "Max", "Lily", "Ben", "Zara", "Ollie", "Isla", "Sami"]
STREETS = [
    "Hawthorn Road",
    "Mill Lane",
    "Quay Street",
    "Rue des Tanneurs",
    "Kastanienallee",
    "Via Roma",
    "Canal Walk",
    "Orchard Close",
    "Station Street",
    "Bergstraße",
]
MEDS = ["metformin", "sertraline", "levothyroxine", "lisinopril", "atorvastatin", "propranolol", "amlodipine"]
TESTS = [
    ("HbA1c", "mmol/mol", 38, 60),
    ("ferritin", "µg/L", 12, 90),
    ("vitamin D", "nmol/L", 25, 90),
    ("TSH", "mU/L", 1, 7),
    ("LDL cholesterol", "mmol/L", 2, 5),
]
ACTIVITIES = ["pottery", "salsa", "Spanish", "climbing", "life drawing", "yoga", "choir", "judo", "coding club"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
CARS = [
    "2014 Ford Focus",
    "Toyota Yaris hybrid",
    "VW Golf estate",
    "Škoda Octavia",
    "Kia Niro EV",
    "Renault Clio",
    "Mazda 3",
    "Nissan Leaf",
]
PROJECTS = [
    "Falcon",
    "Juniper",
    "Atlas",
    "Nimbus",
    "Harbor",
    "Quill",
    "Ember",
    "Lantern",
    "Mosaic",
    "Orbit",
    "Pebble",
    "Sable",
]
CLIENTS = [
    "the city council",
    "a dental chain",
    "a bike shop",
    "a charity for refugees",
    "a ferry company",
    "the university library",
    "a craft brewery",
    "a hospice",
]
STACKS = [
    "Django and Postgres",
    "Next.js and Supabase",
    "Rails with Sidekiq",
    "FastAPI and Redis",
    "Laravel and MySQL",
    "Spring Boot and Kafka",
]
HOSTS = ["Fly.io", "a Hetzner box", "AWS Lambda", "Render", "an old Raspberry Pi", "Azure App Service", "Heroku"]
PLACES = [
    "Portugal",
    "the Dolomites",
    "Crete",
    "Scotland's west coast",
    "Japan",
    "Iceland",
    "the Lake District",
    "Sicily",
    "Norway",
    "Vietnam",
    "Croatia",
    "Brittany",
]
SCHOOLS = [
    "St Anne's Primary",
    "Riverside Academy",
    "Oakfield School",
    "the Montessori on Park Road",
    "Hillcrest Primary",
]
DOCUMENTS = ["passport", "driving licence", "residence permit", "visa", "national ID card"]
VEHICLES = ["camper van", "motorbike", "second car", "sailing dinghy", "cargo bike"]
PROS = ["dentist", "physio", "therapist", "GP", "personal trainer", "piano teacher", "accountant"]
PETS = ["Biscuit", "Pepper", "Luna", "Rocco", "Mochi", "Juniper", "Otis", "Hazel"]
JOBS = [
    "nurse",
    "site manager",
    "primary teacher",
    "software tester",
    "chef",
    "paralegal",
    "bookkeeper",
    "florist",
    "estate agent",
    "radiographer",
]
SIBLINGS = [
    ("sister", "brother"),
    ("brother", "sister"),
    ("older sister", "younger sister"),
    ("older brother", "younger brother"),
]
FILLERS = [
    "I take my coffee with oat milk and no sugar.",
    "Prefers short answers with bullet points.",
    "Allergic to penicillin - found out as a kid.",
    "Loves crime novels, especially anything set in Scandinavia.",
    "Birthday is on {d} {m}.",
    "Hates phone calls; texts or email are much better.",
    "Goes to bed around 11 and gets up at 6:30 on weekdays.",
    "Supports {c} FC, mostly watches the highlights.",
    "Can't stand coriander.",
    "Learning to play the ukulele from YouTube videos.",
    "Grandma's lasagne recipe is the one I make for guests.",
    "Wants to run a half marathon some day.",
    "Keeps a sourdough starter called Gerald.",
    "Uses a paper notebook for to-do lists, not apps.",
    "Afraid of flying, so prefers trains for holidays.",
    "Volunteers at the food bank on the first Saturday of the month.",
    "Bought a secondhand road bike in the spring.",
    "Is colour-blind (red-green).",
    "Favourite film is Spirited Away.",
    "Mum's birthday is in {m}; she likes orchids.",
]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
JOURNAL = [
    "Long day again.",
    "The weather finally turned and we had lunch outside.",
    "I keep meaning to call Grandad and keep forgetting.",
    "Work was mostly meetings, which drains me more than it should.",
    "We watched half a documentary about octopuses before falling asleep on the sofa.",
    "The neighbours are renovating and the drilling starts at eight sharp.",
    "I finished the book I was reading and did not love the ending.",
    "Made a big pot of lentil soup that should last until Thursday.",
    "My knee was a bit sore after the walk.",
    "Had a long chat with an old friend from school who is thinking of moving abroad.",
    "The car needs an MOT next month, I should book it.",
    "I tried a new route to the station and it was quicker.",
    "Spent the evening sorting out the spare room, which is still full of boxes.",
    "I am trying to drink less coffee after 2pm and mostly managing.",
    "Sat in the garden for an hour with a cup of tea and did absolutely nothing, which was lovely.",
    "The bank app logged me out three times, which was infuriating.",
    "We argued a bit about where to go at Christmas and didn't decide anything.",
    "Booked the boiler service for the end of the month.",
    "Someone at work brought in cinnamon buns, so the diet can start tomorrow.",
    "I noticed the plants on the balcony need repotting.",
]


def _pick(rng: random.Random, pool: list[Any], avoid: tuple[Any, ...] = ()) -> Any:
    return rng.choice([x for x in pool if x not in avoid])


def _journal(rng: random.Random, inner: str, sentences: int) -> str:
    """A long journal entry with `inner` somewhere in its middle, among everyday sentences."""
    lines = rng.sample(JOURNAL, sentences)
    at = rng.randint(sentences // 3, 2 * sentences // 3)
    lines.insert(at, inner)
    return "Journal. " + " ".join(lines)


# Each family: (kind, writer). A writer returns old text, new text and questions the newer answers.
Update = tuple[str, str, list[str]]


def home(rng: random.Random, o: dict[str, Any]) -> Update:
    c1, c2 = rng.sample(CITIES, 2)
    street = rng.choice(STREETS)
    old = rng.choice(
        [
            f"I live in {c1}, in a flat near the station.",
            f"Lives in {c1} with a cat and too many plants.",
            f"Home is {c1} - been here six years.",
        ]
    )
    new = rng.choice(
        [
            f"Moved to {c2} last weekend; the new place is on {street}.",
            f"We finally moved from {c1} to {c2}.",
            f"New address: 14 {street}, {c2}.",
        ]
    )
    return old, new, ["Where do I live?", "which city am I living in now", "what's my address"]


def employer(rng: random.Random, o: dict[str, Any]) -> Update:
    a, b = rng.sample(COMPANIES, 2)
    old = rng.choice(
        [f"I work at {a} in the planning team.", f"Works for {a}, mostly remote.", f"Job: {a}, operations."]
    )
    new = rng.choice(
        [
            f"Started at {b} on Monday - first week has been a blur.",
            f"Left {a}; I'm at {b} now.",
            f"Accepted the offer from {b}, starting next month.",
        ]
    )
    return old, new, ["Where do I work?", "who is my employer", "what company am I at"]


def dose(rng: random.Random, o: dict[str, Any]) -> Update:
    med = rng.choice(MEDS)
    d1, d2 = rng.sample([25, 50, 75, 100, 125, 250, 500, 850, 1000], 2)
    old = rng.choice(
        [
            f"Takes {med} {d1} mg every morning.",
            f"On {d1}mg of {med} daily.",
            f"{med.capitalize()}: {d1} mg once a day with breakfast.",
        ]
    )
    new = rng.choice(
        [
            f"GP changed my {med} to {d2} mg.",
            f"{med.capitalize()} now {d2} mg a day.",
            f"Dose of {med} is {d2}mg from this week.",
        ]
    )
    return old, new, [f"What dose of {med} am I on?", f"how much {med} do I take", f"{med} dose"]


def reading(rng: random.Random, o: dict[str, Any]) -> Update:
    name, unit, lo, hi = rng.choice(TESTS)
    v1, v2 = rng.sample(range(lo, hi + 1), 2)
    d1 = o["told_old"] - timedelta(days=rng.randint(1, 6))  # a reading is noted a few days after the test
    d2 = o["told_new"] - timedelta(days=rng.randint(1, 6))
    old = f"{d1:%Y-%m-%d}: {name} came back at {v1} {unit}."
    new = rng.choice([f"{d2:%Y-%m-%d}: {name} {v2} {unit}.", f"{d2:%d %b}: repeat {name} test, {v2} {unit} this time."])
    return old, new, [f"What was my last {name} result?", f"my {name} level", f"what is my {name}"]


def class_day(rng: random.Random, o: dict[str, Any]) -> Update:
    act = rng.choice(ACTIVITIES)
    d1, d2, d3 = rng.sample(DAYS, 3)
    hour = rng.choice(["6pm", "7:30pm", "10am", "5:15pm"])
    old = f"{act.capitalize()} class is on {d1}s and {d2}s at {hour}."
    new = rng.choice(
        [f"{act.capitalize()} moved from {d2} to {d3}, same time.", f"The {d2} {act} session is now on {d3}s."]
    )
    return old, new, [f"When is my {act} class?", f"what days do I have {act}", f"{act} schedule"]


def phone(rng: random.Random, o: dict[str, Any]) -> Update:
    p1 = f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}"
    p2 = f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}"
    old = rng.choice([f"My mobile number is {p1}.", f"Phone: {p1}"])
    new = rng.choice([f"New phone number: {p2}", f"Got a new SIM, my number is now {p2}."])
    return old, new, ["What's my phone number?", "my mobile number"]


def partner_job(rng: random.Random, o: dict[str, Any]) -> Update:
    p = o["partner"]
    j1, j2 = rng.sample(JOBS, 2)
    c1, c2 = rng.sample(COMPANIES, 2)
    old = f"{p} works as a {j1} at {c1}."
    new = rng.choice([f"{p} got a job as a {j2} at {c2}.", f"{p} has started at {c2} now, as a {j2}."])
    return old, new, [f"What does {p} do for work?", f"where does {p} work"]


def third_person(rng: random.Random, o: dict[str, Any]) -> Update:
    n = o["name"]
    c1, c2 = rng.sample(COACHES, 2)
    old = f"{n}'s climbing coach is {c1}."
    new = rng.choice([f"{n} now trains with {c2} instead of {c1}.", f"User switched climbing coach to {c2}."])
    return old, new, ["Who is my climbing coach?", "who coaches me at climbing"]


def reversal(rng: random.Random, o: dict[str, Any]) -> Update:
    v = rng.choice(VEHICLES)
    old = rng.choice([f"Decided to sell the {v} this spring.", f"Going to put the {v} up for sale."])
    new = rng.choice([f"Changed my mind - keeping the {v} after all.", f"Not selling the {v}; we use it too much."])
    return old, new, [f"Am I selling the {v}?", f"what did I decide about the {v}"]


def status(rng: random.Random, o: dict[str, Any]) -> Update:
    doc = rng.choice(DOCUMENTS)
    old = rng.choice(
        [
            f"Applied to renew my {doc}; still waiting to hear back.",
            f"{doc.capitalize()} renewal submitted, processing takes about 8 weeks.",
        ]
    )
    new = rng.choice([f"New {doc} arrived in the post today.", f"Got the renewed {doc}, valid for ten years."])
    return old, new, [f"Has my {doc} come through?", f"status of my {doc} renewal"]


def rename(rng: random.Random, o: dict[str, Any]) -> Update:
    p1, p2 = rng.sample(PROJECTS, 2)
    client = rng.choice(CLIENTS)
    old = f"Working on project {p1}: a booking app for {client}."
    new = rng.choice([f"Project {p1} has been renamed {p2}.", f"{p1} is called {p2} now - the client preferred it."])
    return old, new, [f"What is the booking app for {client} called?", f"name of the project for {client}"]


def professional(rng: random.Random, o: dict[str, Any]) -> Update:
    pro = rng.choice(PROS)
    a, b = rng.sample(PEOPLE if pro in ("dentist", "GP", "therapist") else COACHES, 2)
    old = rng.choice([f"My {pro} is {a}.", f"Sees {a} as {pro}."])
    new = rng.choice([f"Switched {pro}s - seeing {b} from now on.", f"{b} is my new {pro}.", f"New {pro}: {b}"])
    return old, new, [f"Who is my {pro}?", f"my {pro}'s name"]


def budget(rng: random.Random, o: dict[str, Any]) -> Update:
    b1, b2 = rng.sample([250, 300, 350, 400, 450, 500, 600], 2)
    thing = rng.choice(["grocery", "eating-out", "clothes", "holiday savings"])
    old = f"Monthly {thing} budget: £{b1}."
    new = rng.choice([f"Set the {thing} budget to £{b2} a month.", f"{thing.capitalize()} budget is £{b2} now."])
    return old, new, [f"What is my {thing} budget?", f"how much do I spend on {thing} each month"]


def meeting(rng: random.Random, o: dict[str, Any]) -> Update:
    t1, t2 = rng.sample(["9:00", "9:30", "10:00", "10:15", "8:45", "11:00"], 2)
    m = rng.choice(["Team standup", "The weekly one-to-one with my manager", "Sprint planning"])
    old = f"{m} is at {t1}."
    new = rng.choice([f"{m} moved to {t2}.", f"{m} is at {t2} from now on."])
    return old, new, [f"What time is {m[0].lower() + m[1:]}?", f"when is {m.split()[-1]}"]


def diet(rng: random.Random, o: dict[str, Any]) -> Update:
    old, new = rng.choice(
        [
            ("I'm vegetarian but eat fish now and then.", "Went fully vegan in March."),
            ("Eats everything, no restrictions.", "Diagnosed coeliac - strictly gluten-free now."),
            ("Doing keto, very low carb.", "Stopped keto; back to normal eating."),
        ]
    )
    return old, new, ["What's my diet?", "what can I eat", "dietary restrictions"]


def car(rng: random.Random, o: dict[str, Any]) -> Update:
    c1, c2 = rng.sample(CARS, 2)
    old = rng.choice([f"Drives a {c1}.", f"Our car is a {c1}."])
    new = rng.choice([f"Traded the {c1.split()[-1]} in for a {c2}.", f"Picked up the new car today: a {c2}."])
    return old, new, ["What car do I drive?", "what car do we have"]


def pet_weight(rng: random.Random, o: dict[str, Any]) -> Update:
    pet = o["pet"]
    w1, w2 = rng.sample(range(8, 30), 2)
    old = f"{pet} weighed {w1} kg at the vet."
    new = rng.choice([f"{pet} is {w2} kg now.", f"Vet check: {pet} at {w2} kg."])
    return old, new, [f"How much does {pet} weigh?", f"{pet}'s weight"]


def rent(rng: random.Random, o: dict[str, Any]) -> Update:
    r1, r2 = rng.sample([850, 900, 950, 1020, 1100, 1250, 1300], 2)
    old = f"Rent is £{r1} a month, due on the 1st."
    new = rng.choice([f"Landlord put the rent up to £{r2}.", f"Rent £{r2}/month from the new contract."])
    return old, new, ["How much is my rent?", "monthly rent"]


def editor(rng: random.Random, o: dict[str, Any]) -> Update:
    a, b = rng.sample(["VS Code", "Neovim", "PyCharm", "Sublime Text", "Emacs", "Zed"], 2)
    old = f"Uses {a} for all coding."
    new = rng.choice([f"Switched from {a} to {b} and not going back.", f"{b} is my editor now."])
    return old, new, ["Which code editor do I use?", "my editor"]


def school(rng: random.Random, o: dict[str, Any]) -> Update:
    kid = o["kids"][0]
    s1, s2 = rng.sample(SCHOOLS, 2)
    old = f"{kid} is in year 3 at {s1}."
    new = rng.choice([f"{kid} started at {s2} after the summer.", f"{kid} changed schools - {s2} now."])
    return old, new, [f"Which school does {kid} go to?", f"{kid}'s school"]


def wifi(rng: random.Random, o: dict[str, Any]) -> Update:
    w1 = f"{rng.choice(['blue', 'otter', 'maple', 'comet'])}{rng.randint(10, 99)}{rng.choice(['!', '#', '?'])}"
    w2 = f"{rng.choice(['river', 'tiger', 'cedar', 'pixel'])}{rng.randint(10, 99)}{rng.choice(['!', '#', '?'])}"
    old = f"wifi pw: {w1}"
    new = f"wifi pw now {w2}"
    return old, new, ["What's the wifi password?", "wifi password"]


def locker(rng: random.Random, o: dict[str, Any]) -> Update:
    a, b = rng.sample(range(10, 300), 2)
    old = f"gym locker {a}"
    new = f"locker now {b}"
    return old, new, ["What's my gym locker number?", "locker number"]


def physio_in_journal(rng: random.Random, o: dict[str, Any]) -> Update:
    d1, d2 = rng.sample(DAYS[:5], 2)
    h1, h2 = rng.sample(["8am", "9:30am", "12:15", "4pm", "5:30pm"], 2)
    old = f"Physio appointments are on {d1}s at {h1}."
    inner = rng.choice(
        [
            f"Also, the clinic moved my physio to {d2}s at {h2}, which suits me better.",
            f"The physio rang: from now on it's {d2}s at {h2}.",
        ]
    )
    return old, _journal(rng, inner, rng.randint(9, 14)), ["When is my physio?", "physio appointment day"]


def salary_in_journal(rng: random.Random, o: dict[str, Any]) -> Update:
    s1, s2 = rng.sample(range(31, 68), 2)
    old = f"Salary is £{s1},000 a year."
    inner = f"The good news: my pay review came through and my salary goes up to £{s2},000 from next month."
    return old, _journal(rng, inner, rng.randint(9, 14)), ["What is my salary?", "how much do I earn"]


def bedtime_kid(rng: random.Random, o: dict[str, Any]) -> Update:
    kid = o["kids"][-1]
    t1, t2 = rng.sample(["7pm", "7:30pm", "8pm", "8:30pm"], 2)
    old = f"{kid}'s bedtime is {t1}."
    new = rng.choice(
        [
            f"We moved {kid}'s bedtime to {t2}.",
            f"{kid} goes to bed at {t2} now he's older."
            if kid in ("Leo", "Noah", "Max", "Ben", "Ollie", "Sami")
            else f"{kid} goes to bed at {t2} now.",
        ]
    )
    return old, new, [f"What time is {kid}'s bedtime?", f"when does {kid} go to bed"]


FAMILIES: list[tuple[str, Callable[[random.Random, dict[str, Any]], Update]]] = [
    ("implicit", home),
    ("explicit", employer),
    ("number", dose),
    ("date_stamp", reading),
    ("partial", class_day),
    ("terse", phone),
    ("third_person", partner_job),
    ("third_person", third_person),
    ("reversal", reversal),
    ("status", status),
    ("rename", rename),
    ("implicit", professional),
    ("number", budget),
    ("number", meeting),
    ("explicit", diet),
    ("explicit", car),
    ("number", pet_weight),
    ("number", rent),
    ("explicit", editor),
    ("implicit", school),
    ("terse", wifi),
    ("terse", locker),
    ("long_note", physio_in_journal),
    ("long_note", salary_in_journal),
    ("number", bedtime_kid),
]


# Look-alikes: two memories that look alike and replace nothing; each with a question only the first answers.
Alike = tuple[str, str, list[str], bool]  # first, second, questions the FIRST answers, whether the first is older


def sibling(rng: random.Random, o: dict[str, Any]) -> Alike:
    a, b = rng.choice(SIBLINGS)
    c1, c2 = rng.sample(CITIES, 2)
    j1, j2 = rng.sample(JOBS, 2)
    first = f"My {a} lives in {c1} and works as a {j1}."
    second = f"My {b} lives in {c2} and works as a {j2}."
    return first, second, [f"Where does my {a} live?", f"what does my {a} do"], rng.random() < 0.5


def stack(rng: random.Random, o: dict[str, Any]) -> Alike:
    p1, p2 = rng.sample(PROJECTS, 2)
    s = rng.choice(STACKS)
    h1, h2 = rng.sample(HOSTS, 2)
    first = f"Project {p1} runs on {s}, deployed to {h1}."
    second = f"Project {p2} is also {s}; it's deployed to {h2}."
    return first, second, [f"Where is {p1} deployed?", f"{p1} hosting"], rng.random() < 0.5


def second_job(rng: random.Random, o: dict[str, Any]) -> Alike:
    c = rng.choice(COMPANIES)
    j = rng.choice(["bar at the Crown", "garden centre", "climbing gym front desk", "bakery on Saturdays"])
    first = f"Day job: {o['life']} at {c}, full time."
    second = f"Picked up a weekend job at the {j} for extra money."
    return first, second, ["What is my main job?", "where is my full-time job"], True


def plan_vs_past(rng: random.Random, o: dict[str, Any]) -> Alike:
    p1, p2 = rng.sample(PLACES, 2)
    year = rng.randint(2016, 2021)
    first = f"In summer {year} we spent two weeks in {p1} and loved it."
    second = rng.choice(
        [f"Planning a summer trip to {p2} next year.", f"Thinking about {p2} for next summer's holiday."]
    )
    return first, second, [f"Where did we go on holiday in {year}?", f"summer {year} trip"], True


def kids_activities(rng: random.Random, o: dict[str, Any]) -> Alike:
    k1, k2 = o["kids"][0], o["kids"][-1]
    d1, d2 = rng.sample(DAYS, 2)
    act = rng.choice(["swimming", "football", "piano", "gymnastics"])
    first = f"{k1} has {act} on {d1}s after school."
    second = f"{k2} has {act} on {d2}s."
    return first, second, [f"When does {k1} have {act}?"], rng.random() < 0.5


ALIKES = [
    ("sibling", sibling),
    ("stack", stack),
    ("second_job", second_job),
    ("plan_vs_past", plan_vs_past),
    ("kids", kids_activities),
]


def template_weeks(rng: random.Random, o: dict[str, Any]) -> list[tuple[str, str]]:
    """Weekly notes written to one template: (text, a question only that week's note answers)."""
    topics = rng.sample(
        [
            "the data migration",
            "hiring a designer",
            "the quarterly report",
            "the office move",
            "the grant application",
            "the new onboarding flow",
            "supplier contracts",
            "the website redesign",
            "the audit",
            "the conference talk",
        ],
        4,
    )
    blockers = rng.sample(
        [
            "legal sign-off",
            "a missing API key",
            "budget approval",
            "a sick colleague",
            "waiting on the printer",
            "the vendor's slow replies",
            "an outage",
            "unclear specs",
        ],
        4,
    )
    notes = []
    for week, (topic, blocker) in enumerate(zip(topics, blockers), start=rng.randint(5, 30)):
        text = (
            f"Week {week} review. Done: most of {topic}. Blocked: {blocker}. Next: wrap up {topic} and check in "
            f"with the team. Mood: okay. Energy: medium. Sleep: average."
        )
        notes.append((text, f"Which week was I blocked on {blocker}?"))
    return notes


def owner(rng: random.Random, index: int) -> dict[str, Any]:
    o: dict[str, Any] = {
        "name": FIRST[index % len(FIRST)],
        "life": rng.choice(LIVES),
        "partner": rng.choice(PARTNERS),
        "kids": rng.sample(KIDS, 2),
        "pet": rng.choice(PETS),
        "start": datetime(2024, 1, 8, 9, tzinfo=UTC) + timedelta(days=rng.randint(0, 500)),
    }
    key = f"L{index + 1:02d}"
    events: list[tuple[float, str, str]] = []  # (day, id, text)
    updates, alikes = [], []
    families = rng.sample(FAMILIES, rng.randint(5, 8))
    if not any(kind == "long_note" for kind, _ in families):
        families[0] = rng.choice([f for f in FAMILIES if f[0] == "long_note"])
    for n, (kind, write) in enumerate(families):
        d_old = rng.uniform(0, 90)
        d_new = d_old + rng.uniform(30, 200)
        o["told_old"], o["told_new"] = (o["start"] + timedelta(days=d) for d in (d_old, d_new))
        old, new, questions = write(rng, o)
        oid, nid = f"{key}_u{n}a", f"{key}_u{n}b"
        events += [(d_old, oid, old), (d_new, nid, new)]
        updates.append({"old": oid, "new": nid, "kind": kind, "query": rng.choice(questions)})
    for n, (kind, write) in enumerate(rng.sample(ALIKES, rng.randint(2, 4))):
        first, second, questions, first_older = write(rng, o)
        d1, d2 = sorted(rng.uniform(0, 250) for _ in range(2))
        if not first_older:
            d1, d2 = d2, d1
        fid, sid = f"{key}_l{n}a", f"{key}_l{n}b"
        events += [(d1, fid, first), (d2, sid, second)]
        alikes.append({"target": fid, "other": sid, "kind": kind, "query": rng.choice(questions)})
    if rng.random() < 0.5:
        day = rng.uniform(0, 60)
        notes = template_weeks(rng, o)
        for n, (text, _question) in enumerate(notes):
            events.append((day + 7 * n, f"{key}_w{n}", text))
        for n in rng.sample(range(len(notes)), 2):
            others = [f"{key}_w{m}" for m in range(len(notes)) if m != n]
            alikes.append({"target": f"{key}_w{n}", "other": others, "kind": "template", "query": notes[n][1]})
    for n, text in enumerate(rng.sample(FILLERS, rng.randint(3, 7))):
        text = text.format(d=rng.randint(1, 28), m=rng.choice(MONTHS), c=rng.choice(CITIES))
        events.append((rng.uniform(0, 260), f"{key}_f{n}", text))
    for n in range(rng.randint(0, 2)):  # long entries that change nothing
        events.append((rng.uniform(0, 260), f"{key}_j{n}", _journal(rng, rng.choice(JOURNAL), rng.randint(8, 12))))
    events.sort()
    memories = [
        {"id": mid, "text": text, "at": (o["start"] + timedelta(days=day)).strftime("%Y-%m-%dT%H:%M:%SZ")}
        for day, mid, text in events
    ]
    return {"owner": key, "life": o["life"], "memories": memories, "updates": updates, "lookalikes": alikes}


def main() -> None:
    rng = random.Random(SEED)
    owners = [owner(rng, i) for i in range(OWNERS)]
    held = set(random.Random(SEED + 1).sample(range(OWNERS), OWNERS // 2))  # the split, made once
    for i, o in enumerate(owners):
        o["half"] = "held" if i in held else "fit"
    about = (__doc__ or "").split("\n\n")[0]
    OUT.write_text(json.dumps({"about": about, "seed": SEED, "owners": owners}, indent=1, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for o in owners:
        for u in o["updates"]:
            kinds[u["kind"]] = kinds.get(u["kind"], 0) + 1
    print(
        f"{len(owners)} owners, {sum(len(o['memories']) for o in owners)} memories, "
        f"{sum(len(o['updates']) for o in owners)} updates {kinds}, "
        f"{sum(len(o['lookalikes']) for o in owners)} look-alikes"
    )


if __name__ == "__main__":
    main()
