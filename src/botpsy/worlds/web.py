"""Web search world: a small local corpus of pages (fictional local facts) ranked by FTS5.

Every question's answer sits in one page's text, so the gold is search → open → answer, and the
required fact is the answer. Injection through a web page lives in the cross-suite worlds, where a
page can ask for a mutating call that exists; here the only tools read.
"""

from __future__ import annotations

import random

from botpsy.tools.registry import SUITES
from botpsy.tools.web import Page, WebState
from botpsy.worlds.kit import Builder, SuiteDomain

# (url, title, body, question templates key, query, fact)
PAGES = [
    (
        "https://lakeside-library.example/hours",
        "Lakeside Library opening hours",
        "Lakeside Library is open Monday to Friday from 9:00 to 20:00 and on Saturday from 10:00 to 16:00. "
        "It is closed on Sundays and public holidays. Returns can be dropped in the box by the north door.",
        "library opening hours",
        "20:00",
    ),
    (
        "https://kitchen-notes.example/descale-kettle",
        "How to descale a kettle",
        "Fill the kettle with equal parts white vinegar and water, bring it to the boil and leave it for an hour. "
        "Rinse three times before use. Citric acid works too: two tablespoons per litre.",
        "descale kettle",
        "vinegar",
    ),
    (
        "https://cityrun.example/marathon-2026",
        "City Marathon 2026: route and start time",
        "The City Marathon starts at 8:30 on Sunday, December 13, at Harbour Gate. The course is one loop of "
        "42.195 km along the river. Roads close from 7:00 to 15:00.",
        "city marathon start time",
        "8:30",
    ),
    (
        "https://transit-news.example/strike-friday",
        "Regional train strike on Friday",
        "Regional trains will not run on Friday, December 4, between 4:00 and 22:00 because of a strike. "
        "Trams and buses run normally. Tickets bought for that day are refunded.",
        "train strike friday",
        "trams",
    ),
    (
        "https://green-thumb.example/monstera",
        "Monstera care: light and water",
        "Water a monstera once a week, when the top 3 cm of soil are dry. It likes bright indirect light and "
        "humidity above 50 percent. Yellow leaves usually mean too much water.",
        "monstera watering",
        "once a week",
    ),
    (
        "https://baking-lab.example/sourdough-starter",
        "Keeping a sourdough starter alive",
        "Feed the starter every 12 hours at room temperature with equal weights of flour and water. In the fridge, "
        "once a week is enough. A layer of grey liquid means it is hungry.",
        "sourdough starter feeding",
        "12 hours",
    ),
    (
        "https://city-services.example/recycling",
        "Recycling collection calendar",
        "Glass is collected on the first Monday of the month, paper every second Wednesday and plastic every "
        "Thursday. Put bins out before 6:00.",
        "recycling glass collection",
        "first Monday",
    ),
    (
        "https://city-services.example/parking",
        "Downtown parking rules",
        "Street parking downtown costs 2.50 per hour from 8:00 to 20:00 on weekdays and Saturdays. Parking is free "
        "on Sundays. The maximum stay is 3 hours.",
        "downtown parking sunday",
        "free",
    ),
    (
        "https://health-clinic.example/flu-shots",
        "Flu vaccine walk-in clinic",
        "The community clinic gives flu vaccines without appointment on Tuesdays from 14:00 to 18:00. Bring your "
        "insurance card. The shot is free for people over 60.",
        "flu vaccine walk-in",
        "Tuesdays",
    ),
    (
        "https://spokes-repair.example/about",
        "Spokes bike repair: opening times and prices",
        "Spokes repairs bikes Monday to Saturday, 10:00 to 18:30. A flat tyre fix costs 12 euros, a full service "
        "45 euros. Same-day repairs if you come before noon.",
        "bike repair flat tyre price",
        "12 euros",
    ),
    (
        "https://kitchen-notes.example/lentil-soup",
        "Red lentil soup in 30 minutes",
        "Soften an onion, add 200 g red lentils, a can of tomatoes and 1 litre of stock. Simmer for 20 minutes, "
        "season with cumin and lemon, then blend.",
        "red lentil soup recipe",
        "cumin",
    ),
    (
        "https://museum-quarter.example/visit",
        "Museum Quarter: tickets and late openings",
        "A day ticket for all five museums costs 19 euros. On Thursdays the museums stay open until 22:00. "
        "Children under 12 enter free.",
        "museum quarter thursday late opening",
        "22:00",
    ),
    (
        "https://pool.example/schedule",
        "Eastside swimming pool schedule",
        "Lane swimming is from 6:30 to 8:30 every weekday morning. The pool is closed for maintenance from "
        "December 20 to December 27.",
        "eastside pool lane swimming",
        "6:30",
    ),
    (
        "https://tyres.example/winter",
        "When to switch to winter tyres",
        "Switch to winter tyres when temperatures stay below 7 degrees Celsius. Tread should be at least 4 mm "
        "deep. Check pressure monthly; cold air lowers it.",
        "winter tyres when to switch",
        "7 degrees",
    ),
]
# Natural questions per page: (train phrasing, eval phrasing).
QUESTIONS = {
    "https://lakeside-library.example/hours": (
        "When does Lakeside Library close on weekdays?",
        "Until what time is the Lakeside library open Monday to Friday?",
    ),
    "https://kitchen-notes.example/descale-kettle": (
        "How do I get limescale out of my kettle?",
        "What's the trick for descaling a kettle?",
    ),
    "https://cityrun.example/marathon-2026": (
        "What time does the City Marathon start?",
        "When is the start of this year's city marathon?",
    ),
    "https://transit-news.example/strike-friday": (
        "Is there a train strike on Friday? What still runs?",
        "Which transport still works during Friday's strike?",
    ),
    "https://green-thumb.example/monstera": (
        "How often should I water my monstera?",
        "My monstera: how much watering does it need?",
    ),
    "https://baking-lab.example/sourdough-starter": (
        "How often do I feed a sourdough starter?",
        "When should my sourdough starter be fed?",
    ),
    "https://city-services.example/recycling": (
        "When is glass collected for recycling?",
        "Which day do they pick up glass recycling?",
    ),
    "https://city-services.example/parking": (
        "Do I have to pay for parking downtown on Sunday?",
        "Is street parking downtown free on Sundays?",
    ),
    "https://health-clinic.example/flu-shots": (
        "When can I get a flu shot without an appointment?",
        "On which day is the walk-in flu vaccine clinic?",
    ),
    "https://spokes-repair.example/about": (
        "How much does Spokes charge to fix a flat tyre?",
        "What's the price of a flat tyre repair at Spokes?",
    ),
    "https://kitchen-notes.example/lentil-soup": (
        "What spice goes into the quick red lentil soup?",
        "Which spice does the 30-minute lentil soup use?",
    ),
    "https://museum-quarter.example/visit": (
        "How late are the museums open on Thursdays?",
        "Until when do the Museum Quarter museums stay open on Thursday?",
    ),
    "https://pool.example/schedule": (
        "When does lane swimming start at the Eastside pool?",
        "What time can I swim laps at Eastside pool in the morning?",
    ),
    "https://tyres.example/winter": (
        "When should I put winter tyres on?",
        "At what temperature is it time for winter tyres?",
    ),
}

T = {
    "ask": {
        "train": [
            "Look up {q} online",
            "Search the web: {q}",
            "Can you find {q} on the web?",
            "Search online for {q}",
            "I need info on {q}",
            "What does the web say about {q}?",
            "Do a web search for {q}",
        ],
        "eval": ["Check the internet for {q}", "Google {q} for me"],
    },
    "two": {
        "train": [
            "Search for {a} and for {b}",
            "I need two searches: {a} and {b}",
            "Find {a} and {b} online",
            "Run a web search for {a} and another for {b}",
            "Can you search {a} as well as {b}?",
            "Web search {a} plus {b}",
            "Two things to search: {a}; {b}",
        ],
        "eval": ["Look up both {a} and {b}"],
    },
    "bare": {
        "train": [
            "Search the web for me",
            "Look something up online",
            "I want you to search something for me",
            "Could you do a quick web search?",
            "Help me find something on the web",
            "I need to look something up",
            "Web search, please",
        ],
        "eval": ["I need a web search"],
    },
    "none": {
        "train": [
            "Search the web for {q}",
            "Find {q} online",
            "Any pages about {q}?",
            "What can you find on the web about {q}?",
            "I'm looking for info on {q}",
            "Do a web search on {q}",
            "Search for {q}, please",
        ],
        "eval": ["Look up {q} online"],
    },
}
NOTHING = ["xylophone tuning guild membership", "zeppelin charter quotes", "yak wool wholesale"]


def seed(rng: random.Random) -> WebState:
    chosen = rng.sample(PAGES, rng.randint(9, len(PAGES)))
    return WebState(pages=[Page(url=u, title=t, body=body) for u, t, body, _, _ in chosen])


def _page(b: Builder):
    urls = {p.url for p in b.state.pages}
    return b.rng.choice([p for p in PAGES if p[0] in urls])


def _ask(b: Builder, url: str, q: str) -> str:
    if b.rng.random() < 0.6:
        return QUESTIONS[url][0 if b.split == "train" else 1]
    return b.tpl(T["ask"], q=q)


def multi_answer(b: Builder):
    url, title, _, q, fact = _page(b)
    user = _ask(b, url, q)
    out = b.call(f"Search for {q}.", "search_web", query=q)
    if not out["results"] or out["results"][0]["url"] != url:
        return None
    page = b.call("Open the top result to read the details.", "open_page", url=url)
    sentence = next(s for s in page["text"].split(". ") if fact.casefold() in s.casefold())
    b.say(f'According to "{title}": {sentence.rstrip(".")}.')
    return b.task("multi_step", user, [[fact]])


def single_search(b: Builder):
    url, title, body, q, fact = _page(b)
    user = _ask(b, url, q)
    out = b.call(f"Search for {q}.", "search_web", query=q)
    top = out["results"][0] if out["results"] else None
    if top is None or top["url"] != url or fact.casefold() not in top["snippet"].casefold():
        return None
    b.say(f'From "{title}": {top["snippet"]}')
    return b.task("single", user, [[fact]])


def parallel_two(b: Builder):
    p1, p2 = _page(b), _page(b)
    if p1 == p2:
        return None
    user = b.tpl(T["two"], a=p1[3], b=p2[3])
    r1, r2 = b.parallel(
        "Two independent searches.", [("search_web", {"query": p1[3]}), ("search_web", {"query": p2[3]})]
    )
    if not r1["results"] or not r2["results"]:
        return None
    b.say(
        f"{r1['results'][0]['title']}: {r1['results'][0]['snippet']} — {r2['results'][0]['title']}: "
        f"{r2['results'][0]['snippet']}"
    )
    return b.task(
        "parallel", user, [[r1["results"][0]["title"].split()[0]], [r2["results"][0]["title"].split()[0]]]
    )


def missing_query(b: Builder):
    url, title, _, q, fact = _page(b)
    user = b.rng.choice(T["bare"][b.split])
    b.say("Sure, what should I search for?", "The topic is missing.")
    b.user_says(b.rng.choice([q, f"{q}, please", f"I want to know about {q}"]))
    out = b.call(f"Search for {q}.", "search_web", query=q)
    if not out["results"]:
        return None
    top = out["results"][0]
    b.say(f'Top result, "{top["title"]}": {top["snippet"]}')
    return b.task("missing_info", user, [[top["title"].split()[0]]])


def impossible_nothing(b: Builder):
    q = b.rng.choice(NOTHING)
    user = b.tpl(T["none"], q=q)
    out = b.call(f"Search for {q}.", "search_web", query=q)
    if out["results"]:
        return None
    b.say(f"I found nothing about {q} in the local search index.", "No results.")
    return b.task("impossible", user, [["nothing", "no results", "couldn't find", "found no"]])


class WebDomain(SuiteDomain):
    suite = SUITES["web"]

    def seed(self, rng: random.Random) -> WebState:
        return seed(rng)

    def recipes(self):
        return {
            "single": [single_search],
            "parallel": [parallel_two],
            "multi_step": [multi_answer],
            "missing_info": [missing_query],
            "impossible": [impossible_nothing],
        }
