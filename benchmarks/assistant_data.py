"""Our own assistant set: memories an assistant would store, natural questions about them (each with
the indexes of the memories that answer it), and questions about things never stored.

Used by assistant_set.py (through the real server).
"""

from __future__ import annotations

MEMORIES = [
    "I'm working on a React app with TypeScript and authentication",  # 0 (the seed scenario)
    "User prefers dark roast coffee, black, no sugar.",
    "User is vegetarian and avoids mushrooms.",
    "User's sister Anna lives in Lisbon and works as an architect.",
    "Decided to use PostgreSQL instead of MySQL for the billing service because of its JSONB support.",
    "User's birthday is on 14 March.",  # 5
    "User wants to run a half marathon in October 2025.",
    "User prefers 2-space indentation in JavaScript and TypeScript.",
    "User's dog is a border collie named Biscuit.",
    "User works as a backend engineer at a fintech startup called Ledgerly.",
    "User is learning Japanese and practises on Duolingo every morning.",  # 10
    "The team deploys to AWS with Terraform; production runs in eu-west-1.",
    "User prefers concise answers without emojis.",
    "User is allergic to penicillin.",
    "User drives a 2019 Toyota Corolla hybrid.",
    "User's manager is Priya Shah.",  # 15
    "User moved to Berlin in 2022.",
    "Decided to drop Redux in favour of React Query for server state.",
    "User plays guitar in a jazz trio on Thursday evenings.",
    "User's partner Sam is a nurse who works night shifts.",
    "User edits code in Neovim with the LazyVim configuration.",  # 20
    "Side project: a Rust CLI that syncs Markdown notes to S3.",
    "User is saving for a house deposit, goal: end of 2026.",
    "User reads mostly science fiction; favourite author is Ursula K. Le Guin.",
    "User's daughter Mia started primary school in September.",
    "The weekly team standup is on Mondays at 9:30.",  # 25
    "User prefers window seats and flies Lufthansa when possible.",
    "User has a standing desk and works from home on Fridays.",
    "Chose Vitest over Jest for the React app because it is faster with Vite.",
    "User uses 1Password as their password manager.",
    "User supports FC St. Pauli and goes to every home game.",  # 30
    "User dislikes meetings before 10 am.",
    "User's mother has type 2 diabetes, so family recipes should be low in sugar.",
    "User's GitHub handle is jdoe-dev.",
    "Login in the React app uses OAuth through Auth0.",
    "User is preparing for the AWS Solutions Architect Associate exam in June.",  # 35
    "User's favourite cuisine is Thai, especially green curry.",
    "User's laptop is a 14-inch MacBook Pro with an M3 chip.",
    "User meditates for ten minutes every evening with Headspace.",
    "User prefers British English spelling in documents.",
]

DIRECT_QUESTIONS: list[tuple[str, set[int]]] = [
    ("what am I building?", {0, 21}),
    ("how do I take my coffee?", {1}),
    ("do I have any dietary restrictions?", {2, 13}),
    ("where does my sister live?", {3}),
    ("which database did we pick for billing?", {4}),
    ("when is my birthday?", {5}),
    ("what are my fitness goals?", {6}),
    ("how should I indent TypeScript?", {7}),
    ("what's my dog called?", {8}),
    ("where do I work?", {9}),
    ("what language am I learning?", {10}),
    ("where is production hosted?", {11}),
    ("how do I like answers formatted?", {12}),
    ("am I allergic to any medication?", {13}),
    ("what car do I drive?", {14}),
    ("who is my boss?", {15}),
    ("which city do I live in?", {16}),
    ("what do we use for state management?", {17}),
    ("do I play an instrument?", {18}),
    ("what does my partner do for a living?", {19}),
    ("which editor do I use?", {20}),
    ("tell me about my side project", {21}),
    ("what am I saving money for?", {22}),
    ("recommend me a book", {23}),
    ("when did my daughter start school?", {24}),
    ("when is standup?", {25}),
    ("book me a flight to Tokyo", {26}),
    ("do I work from home?", {27}),
    ("which test runner do we use?", {28}),
    ("which football team do I support?", {30}),
    ("when can I schedule a meeting?", {31, 25}),
    ("suggest a dessert recipe for my mom", {32}),
    ("what's my GitHub username?", {33}),
    ("how does login work in my app?", {34, 0}),
    ("what exam am I studying for?", {35}),
    ("what should we order for dinner?", {36, 2}),
    ("what computer do I have?", {37}),
    ("what do I do in the evenings?", {38, 18}),
    ("should I write color or colour?", {39}),
    ("what tech stack am I using?", {0, 17, 28, 11, 34}),
]

FIRST_NEGATIVES = [
    "what's my favourite wine?",
    "what is my blood type?",
    "where did I go to university?",
    "what's my cat's name?",
    "how tall am I?",
    "what's my shoe size?",
    "which political party do I vote for?",
    "what religion am I?",
    "who is my dentist?",
    "what is my salary?",
    "when is my wedding anniversary?",
    "what's my favourite video game?",
    "do I own a boat?",
    "which gym do I go to?",
    "what's my brother's name?",
    "what instrument did I play as a child?",
    "what is my home address?",
    "what's my favourite movie?",
    "what's my phone number?",
    "what did I think of the Kubernetes migration?",
]

# vaguer questions ("what am I working on?"), and more never-stored ones


VAGUE_QUESTIONS: list[tuple[str, set[int]]] = [
    ("what am I working on?", {0, 21}),
    ("what do I like to eat?", {2, 36}),
    ("who is in my family?", {3, 19, 24, 32}),
    ("what should I remember about my health?", {13, 38}),
    ("do I have any pets?", {8}),
    ("what are my hobbies?", {18, 23, 30, 10, 38}),
    ("what are my goals?", {6, 22, 35, 10}),
    ("tell me about my job", {9, 15, 27}),
    ("where am I based?", {16}),
    ("what are my coding preferences?", {7, 20}),
    ("any travel preferences I should know about?", {26}),
    ("what architecture decisions have we made?", {4, 17, 28}),
    ("what's on my calendar this week?", {25, 18, 27}),
    ("what do I drink in the morning?", {1}),
    ("what should I know about my kids?", {24}),
    ("how am I doing financially?", {22}),
    ("what tools do I use every day?", {20, 29, 10, 38}),
    ("what sports am I into?", {30, 6}),
    ("how do I like to communicate?", {12, 39}),
    ("what's my schedule like?", {25, 27, 31, 18}),
    ("what am I studying?", {35, 10}),
]

MORE_NEGATIVES = [
    "what is my favourite colour?",
    "what's my passport number?",
    "which bank do I use?",
    "what's my cholesterol level?",
    "when did I last get a haircut?",
    "what is my favourite board game?",
    "which podcast do I listen to?",
    "what did I name my plant?",
    "who was my first girlfriend?",
    "what's my grandmother's maiden name?",
    "which hotel did I book in Paris?",
    "who is my insurance provider?",
    "what languages does my son speak?",
    "what's the name of my landlord?",
    "how much did my TV cost?",
    "what's my favourite ice cream flavour?",
    "which vaccine did I get last year?",
    "what is my mortgage rate?",
    "what's my neighbour's name?",
    "what karaoke song do I always sing?",
]

QUESTIONS = DIRECT_QUESTIONS + VAGUE_QUESTIONS
NEGATIVES = FIRST_NEGATIVES + MORE_NEGATIVES
SEED = "what am I building?"
