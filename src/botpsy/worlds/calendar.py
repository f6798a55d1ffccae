"""Calendar world: a seeded calendar and generated requests with gold conversations.

Every task is built by *running* its gold calls in a `World` through `kit.Builder`, as in every
other world, so tool results, event ids and the expected state hash come from the real tools, never
from hand-written expectations.

Splits: training and evaluation use disjoint request templates (`_T[kind]["train"|"eval"]`) and
disjoint random streams (the split name is mixed into the seed), so evaluation measures phrasing
the model never saw. Titles, names and date/time spellings are shared: copying them is the skill.
"Today" is fixed at Tuesday 2026-12-01 and stated in the system prompt; requested dates fall in the
following three weeks.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta

from botpsy.protocol.prompt import runtime_system
from botpsy.tools.calendar import TOOLS, CalendarState, Event
from botpsy.tools.registry import CAPABILITY_REASONING, SUITES
from botpsy.worlds.base import Task, World
from botpsy.worlds.kit import TODAY, Builder, Recipe, SuiteDomain, phrased

SYSTEM = runtime_system(TODAY)

SEED_TITLES = [
    "Team standup",
    "Project review",
    "Lunch with Anna",
    "Yoga class",
    "Dentist",
    "Budget meeting",
    "Swimming",
    "Call with Dad",
    "Design sync",
    "Piano lesson",
    "Book club",
    "Car service",
    "Sprint planning",
    "Coffee with Tom",
    "Haircut",
    "Tennis with Marco",
    "Parent evening",
    "Physio",
    "Quarterly report",
    "Guitar lesson",
    "Dinner with Julia",
    "Vet appointment",
]
NEW_TITLES = [
    "dentist appointment",
    "haircut",
    "piano lesson",
    "call with Mom",
    "team lunch",
    "doctor's appointment",
    "car service",
    "book club",
    "gym session",
    "coffee with Sara",
    "yoga class",
    "budget review",
    "flight to Berlin",
    "vet appointment",
    "dinner with Leo",
    "guitar lesson",
    "tax meeting",
    "interview with Acme",
    "physio session",
    "school meeting",
    "football practice",
    "massage",
    "driving lesson",
    "lunch with Omar",
    "eye exam",
    "call with the bank",
    "study group",
    "date night",
]
STOP = {"with", "the", "a", "to", "call", "lunch", "dinner", "coffee", "meeting", "lesson", "class"}
OUT_OF_SCOPE = [
    ("Book a table for two at Luigi's tonight.", "book restaurant tables"),
    ("Order me a large pepperoni pizza.", "order food"),
    ("What's the weather going to be tomorrow?", "check the weather"),
    ("Send an email to my boss saying I'm late.", "send emails"),
    ("Transfer 50 euros to my brother.", "move money"),
    ("Turn off the living room lights.", "control the lights"),
    ("Play some jazz music.", "play music"),
    ("Book me a flight to Lisbon next week.", "book flights"),
]
SMALL_TALK = [
    ("Hi!", "Hello! How can I help with your calendar today?"),
    ("Good morning", "Good morning! What can I do for you?"),
    ("Thanks, that's all.", "You're welcome!"),
    ("Who are you?", "I'm botpsy, your on-device assistant. I can manage your calendar."),
    (
        "What can you do?",
        "I can list, find, create, move and delete events, and find free time in your calendar.",
    ),
    ("Thank you so much!", "Happy to help!"),
    ("How are you today?", "I'm doing well, thanks! What can I do for you?"),
    ("Tell me something nice.", "You're doing great. Anything I can plan for you?"),
]

# Request templates per kind and split. {what} a title, {when} a date phrase, {at} a time phrase.
_T = {
    "create": {
        "train": [
            "Add a {what} on {when} at {at}",
            "Schedule a {what} for {when} at {at}.",
            "Put {what} in my calendar on {when} at {at}",
            "Can you book a {what} on {when} at {at}?",
            "Create an event '{what}' on {when} at {at}",
            "I have a {what} on {when} at {at}, add it please",
            "Please add {what} {when} at {at}",
            "New event: {what}, {when}, {at}",
        ],
        "eval": [
            "Add a {what} appointment slot on {when} at {at}",
            "Could you put a {what} on {when} at {at}?",
            "Remind me of my {what} by adding it on {when} at {at}",
            "Set up {what} on {when} at {at} please",
            "Block {when} at {at} for {what}",
            "Make a calendar entry for {what} on {when}, {at}",
        ],
    },
    "create_duration": {
        "train": [
            "Add a {what} on {when} at {at} for {dur}",
            "Schedule {what} on {when} from {at}, it takes {dur}",
            "Book a {dur} {what} on {when} at {at}",
            "Create a {what} on {when} at {at} that runs {dur}",
            "Can you add {what} on {when} at {at}? It lasts {dur}.",
            "I'd like {dur} reserved for {what} on {when}, beginning at {at}",
            "Set aside {dur} for a {what} on {when} at {at}",
            "Schedule a {what} ({dur}) for {when} at {at}",
            "{what} on {when} at {at}, {dur} long, please add it",
        ],
        "eval": [
            "Put a {what} lasting {dur} on {when} at {at}",
            "Plan {what} for {dur} on {when} starting {at}",
        ],
    },
    "list": {
        "train": [
            "What do I have on {when}?",
            "What's on my calendar on {when}?",
            "Show me my events for {when}",
            "Am I busy on {when}?",
            "List my appointments on {when}",
            "Check my calendar for {when}",
            "Which events do I have on {when}?",
            "Do I have any appointments on {when}?",
            "Calendar for {when}, please",
        ],
        "eval": [
            "What's happening on {when}?",
            "Tell me my schedule for {when}",
            "Anything planned on {when}?",
        ],
    },
    "free": {
        "train": [
            "When am I free for {dur} on {when}?",
            "Find me a free slot of {dur} on {when}",
            "Do I have {dur} free on {when}?",
            "Which times on {when} have {dur} open?",
            "Check when I have {dur} available on {when}",
            "When could I squeeze in {dur} on {when}?",
            "Free time on {when}? I need {dur}",
            "Tell me when I'm available for {dur} on {when}",
        ],
        "eval": ["Where can I fit {dur} on {when}?", "Look for {dur} of free time on {when}"],
    },
    "move": {
        "train": [
            "Move my {ref} to {when} at {at}",
            "Reschedule the {ref} to {when} at {at}",
            "Can you push my {ref} to {when} at {at}?",
            "Change the {ref} to {when}, {at}",
            "Could you reschedule my {ref} for {when} at {at}?",
            "The {ref} needs to go to {when} at {at}",
            "Bump my {ref}: new time is {when} at {at}",
            "{ref}: move it to {when} at {at}",
            "Rebook my {ref} for {when} at {at}",
        ],
        "eval": ["Shift my {ref} over to {when} at {at}", "I need the {ref} on {when} at {at} instead"],
    },
    "delete": {
        "train": [
            "Cancel my {ref}",
            "Delete the {ref} from my calendar",
            "Remove my {ref}",
            "Drop the {ref} please",
            "Take the {ref} off my calendar",
            "Can you delete my {ref}?",
            "I'm not doing the {ref} anymore, remove it",
            "Erase the {ref} from my schedule",
            "{ref} is cancelled, delete it",
        ],
        "eval": ["Get rid of my {ref}", "Please cancel the {ref}, it's off", "Scrap my {ref}"],
    },
    "ask_time": {
        "train": [
            "Add a {what} on {when}",
            "Schedule a {what} for {when}",
            "Put {what} in my calendar on {when}",
            "Can you book a {what} for {when}?",
            "Create an event '{what}' on {when}",
            "I have a {what} on {when}, add it please",
            "New event: {what}, {when}",
            "Pencil in a {what} for {when}",
        ],
        "eval": ["Could you put a {what} on {when}?", "Set up {what} on {when} please"],
    },
    "ask_date": {
        "train": [
            "Add a {what} at {at}",
            "Schedule a {what} at {at}",
            "Book a {what} at {at}",
            "Put {what} in my calendar at {at}",
            "Create an event '{what}' at {at}",
            "I have a {what} at {at}, add it please",
            "New event: {what} at {at}",
            "Pencil in a {what} for {at}",
        ],
        "eval": ["Could you put a {what} at {at}?", "Set up {what} at {at} please"],
    },
}


def date_phrase(rng: random.Random, d: date) -> str:
    month = d.strftime("%B")
    ordinal = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd", 31: "st"}.get(d.day, "th")
    forms = [
        f"{month} {d.day}",
        f"{month} {d.day} 2026",
        f"{d.strftime('%b')} {d.day}",
        f"{d.day} {month}",
        f"the {d.day}{ordinal} of {month}",
        f"{d.strftime('%A')}, {month} {d.day}",
        f"{month} {d.day}{ordinal}",
        d.isoformat(),
    ]
    if d == TODAY + timedelta(days=1):
        forms.append("tomorrow")
    return rng.choice(forms)


def time_phrase(rng: random.Random, hour: int, minute: int) -> str:
    h12 = hour % 12 or 12
    suffix = "am" if hour < 12 else "pm"
    mm = f":{minute:02d}" if minute else ""
    forms = [
        f"{h12}{mm}{suffix}",
        f"{h12}{mm} {suffix}",
        f"{hour:02d}:{minute:02d}",
        f"{h12}:{minute:02d} {suffix}",
    ]
    if hour == 12 and minute == 0:
        forms.append("noon")
    return rng.choice(forms)


def duration_phrase(rng: random.Random, minutes: int) -> str:
    if minutes % 60 == 0:
        h = minutes // 60
        return rng.choice(
            [f"{h} hour" if h == 1 else f"{h} hours", f"{minutes} minutes"] + (["an hour"] if h == 1 else [])
        )
    if minutes == 30:
        return rng.choice(["30 minutes", "half an hour"])
    return f"{minutes} minutes"


def seed_state(rng: random.Random) -> CalendarState:
    state = CalendarState()
    for title in rng.sample(SEED_TITLES, rng.randint(6, 12)):
        day = TODAY + timedelta(days=rng.randint(0, 17))
        start = datetime.combine(day, datetime.min.time()) + timedelta(hours=rng.randint(8, 17))
        minutes = rng.choice([30, 60, 60, 90])
        state.events.append(
            Event(
                id=state.new_id(),
                title=title,
                start=start.strftime("%Y-%m-%dT%H:%M"),
                end=(start + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M"),
                location=rng.choice(["", "", "Office", "Room 2", "Downtown"]),
            )
        )
    return state


def keyword(title: str) -> str:
    words = [w for w in title.casefold().replace("'", " ").split() if w not in STOP]
    return words[0] if words else title.casefold().split()[-1]


# ---- recipes: one per kind, each over a `kit.Builder` -------------------------------------------


def _when(b: Builder) -> tuple[date, str]:
    d = TODAY + timedelta(days=b.rng.randint(1, 18))
    return d, date_phrase(b.rng, d)


def _at(b: Builder) -> tuple[str, str]:
    hour = b.rng.randint(7, 19)
    minute = b.rng.choice([0, 0, 0, 30, 15, 45])
    return f"{hour:02d}:{minute:02d}", time_phrase(b.rng, hour, minute)


def single(b: Builder) -> Task | None:
    sub = b.rng.choice(["create", "create", "create_duration", "list", "free"])
    d, when = _when(b)
    if sub in ("create", "create_duration"):
        what = b.rng.choice(NEW_TITLES)
        hhmm, at = _at(b)
        start = f"{d.isoformat()}T{hhmm}"
        if sub == "create":
            user = b.tpl(_T["create"], what=what, when=when, at=at)
            b.call(f"Create '{what}' at {start}.", "create_event", title=what, start=start)
        else:
            minutes = b.rng.choice([30, 90, 120, 45])
            user = b.tpl(
                _T["create_duration"], what=what, when=when, at=at, dur=duration_phrase(b.rng, minutes)
            )
            b.call(
                f"Create '{what}' at {start} for {minutes} minutes.",
                "create_event",
                title=what,
                start=start,
                duration_minutes=minutes,
            )
        b.say(f"Done: {what} is on your calendar on {d.isoformat()} at {hhmm}.")
        return b.task("single", user)
    if sub == "list":
        user = b.tpl(_T["list"], when=when)
        out = b.call(f"List the events on {d.isoformat()}.", "list_events", date=d.isoformat())
        events = out["events"]
        if events:
            items = ", ".join(f"{e['title']} at {e['start'][11:]}" for e in events)
            b.say(f"On {d.isoformat()} you have: {items}.")
            facts = [[keyword(e["title"])] for e in events]
        else:
            b.say(f"You have nothing on your calendar on {d.isoformat()}.")
            facts = [["nothing", "no events", "free"]]
        return b.task("single", user, facts)
    minutes = b.rng.choice([30, 60, 60, 120])
    user = b.tpl(_T["free"], when=when, dur=duration_phrase(b.rng, minutes))
    out = b.call(
        f"Find free slots of {minutes} minutes on {d.isoformat()}.",
        "find_free_slots",
        date=d.isoformat(),
        duration_minutes=minutes,
    )
    slots = out["free"]
    if not slots:
        return None
    items = ", ".join(f"{s['start'][11:]}-{s['end'][11:]}" for s in slots)
    b.say(f"On {d.isoformat()} you are free {items}.")
    return b.task("single", user, [[slots[0]["start"][11:]]])


def _target(b: Builder) -> tuple[Event, str] | None:
    """A seeded event and a keyword that finds it alone (None: the keyword is ambiguous)."""
    ev = b.rng.choice(b.state.events)
    kw = keyword(ev.title)
    hits = [e for e in b.state.events if kw in " ".join([e.title, e.location]).casefold()]
    return (ev, kw) if len(hits) == 1 else None


def multi_step(b: Builder) -> Task | None:
    picked = _target(b)
    if picked is None:
        return None
    ev, kw = picked
    ref = (
        ev.title.casefold()
        if not ev.title.startswith(("Call", "Lunch", "Dinner", "Coffee", "Tennis"))
        else ev.title
    )
    if b.rng.random() < 0.55:
        d, when = _when(b)
        hhmm, at = _at(b)
        start = f"{d.isoformat()}T{hhmm}"
        user = b.tpl(_T["move"], ref=ref, when=when, at=at)
        b.call(f"Find the {kw} event first.", "find_events", query=kw)
        b.call(f"Move {ev.id} to {start}.", "update_event", event_id=ev.id, start=start)
        b.say(f"Moved {ev.title} to {d.isoformat()} at {hhmm}.")
    else:
        user = b.tpl(_T["delete"], ref=ref)
        b.call(f"Find the {kw} event first.", "find_events", query=kw)
        b.call(f"Delete {ev.id}.", "delete_event", event_id=ev.id)
        b.say(f"Deleted {ev.title} on {ev.start[:10]}.")
    return b.task("multi_step", user)


def no_call(b: Builder) -> Task:
    user, answer = b.rng.choice(SMALL_TALK)
    # the capability question's turn as the agent writes it when code answers (agent.capabilities)
    b.say(answer, CAPABILITY_REASONING if user == "What can you do?" else "No tool is needed.")
    return b.task("no_call", phrased(user, b.split))


def missing_info(b: Builder) -> Task:
    what = b.rng.choice(NEW_TITLES)
    d, when = _when(b)
    hhmm, at = _at(b)
    start = f"{d.isoformat()}T{hhmm}"
    if b.rng.random() < 0.5:
        user = b.tpl(_T["ask_time"], what=what, when=when)
        b.say(f"What time should the {what} start?", "The start time is missing.")
        reply = b.rng.choice([f"At {at}.", f"{at}", f"Make it {at}"])
    else:
        user = b.tpl(_T["ask_date"], what=what, at=at)
        b.say(f"Which day should I put the {what} on?", "The date is missing.")
        reply = b.rng.choice([f"On {when}.", f"{when}", f"It's on {when}"])
    b.user_says(reply)
    b.call(f"Create '{what}' at {start}.", "create_event", title=what, start=start)
    b.say(f"Done: {what} is on your calendar on {d.isoformat()} at {hhmm}.")
    return b.task("missing_info", user)


def impossible(b: Builder) -> Task | None:
    if b.rng.random() < 0.4:
        user, skill = b.rng.choice(OUT_OF_SCOPE)
        b.say(f"Sorry, I can't {skill}: I can only manage your calendar.", "No tool can do this.")
        return b.task("impossible", user, [["can't", "cannot", "can not", "unable"]])
    present = {keyword(e.title) for e in b.state.events}
    absent = [t for t in SEED_TITLES if keyword(t) not in present]
    if not absent:
        return None
    title = b.rng.choice(absent)
    kw = keyword(title)
    ref = title.casefold()
    if b.rng.random() < 0.5:
        user = b.tpl(_T["delete"], ref=ref)
    else:
        d, when = _when(b)
        hhmm, at = _at(b)
        user = b.tpl(_T["move"], ref=ref, when=when, at=at)
    b.call(f"Find the {kw} event first.", "find_events", query=kw)
    b.say(f"I couldn't find any {ref} on your calendar.", "Nothing matches.")
    return b.task("impossible", user, [["couldn't find", "could not find", "no ", "not find"]])


RECIPES: dict[str, Recipe] = {
    "single": single,
    "multi_step": multi_step,
    "no_call": no_call,
    "missing_info": missing_info,
    "impossible": impossible,
}
TRAIN_WEIGHTS = {"single": 0.36, "multi_step": 0.24, "no_call": 0.1, "missing_info": 0.15, "impossible": 0.15}


class CalendarDomain(SuiteDomain):
    """The calendar on the kit like every other world, with two things of its own.

    Its small talk and out-of-scope requests are the calendar's (SMALL_TALK, OUT_OF_SCOPE above),
    one recipe per kind. And it keeps its own `generate`: the calendar's task streams predate the
    kit, which draws the recipe before seeding the state and falls back to other kinds; the
    calendar seeds first, draws 20 times and has no fallback. The embedded model was trained on
    these streams and `eval worlds` compares models on them, so the same seed must keep giving the
    same tasks (tests/test_worlds_calendar.py pins a digest).
    """

    suite = SUITES["calendar"]
    system = SYSTEM
    train_weights = TRAIN_WEIGHTS

    def seed(self, rng: random.Random) -> CalendarState:
        return seed_state(rng)

    def recipes(self) -> dict[str, list[Recipe]]:
        return {kind: [recipe] for kind, recipe in RECIPES.items()}

    def all_recipes(self) -> dict[str, list[Recipe]]:
        return self.recipes()  # its own small talk and refusals are the no_call / impossible recipes

    def generate(self, n: int, seed: int, split: str) -> list[Task]:
        if split not in ("train", "eval"):
            raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
        rng = random.Random(f"calendar:{split}:{seed}")
        kinds = list(RECIPES)
        tasks = []
        for i in range(n):
            kind = (
                rng.choices(kinds, list(TRAIN_WEIGHTS.values()))[0]
                if split == "train"
                else kinds[i % len(kinds)]
            )
            for _attempt in range(20):
                task = RECIPES[kind](self.builder(rng, split, f"calendar-{split}-{seed}-{i}"))
                if task is not None:
                    tasks.append(task)
                    break
        return tasks


def generate_conversations(n: int, seed: int, split: str, per_conversation: int = 4) -> list[list[Task]]:
    """Several requests in one conversation over one evolving calendar (as in `botpsy chat`).

    Training packs requests this way so the long system prompt is paid once per sequence, not
    once per request; the first request of each conversation still looks exactly like a single task.
    """
    rng = random.Random(f"calendar-conv:{split}:{seed}")
    kinds = list(RECIPES)
    weights = list(TRAIN_WEIGHTS.values())
    conversations = []
    for c in range(n):
        world = World(TOOLS, seed_state(rng))
        tasks: list[Task] = []
        while len(tasks) < per_conversation:
            kind = rng.choices(kinds, weights)[0]
            snapshot = world.state.model_copy(deep=True)
            task_id = f"calendar-conv-{split}-{seed}-{c}-{len(tasks)}"
            task = RECIPES[kind](Builder(rng, split, task_id, "calendar", world, SYSTEM))
            if task is None:
                world.state = snapshot
                continue
            tasks.append(task)
        conversations.append(tasks)
    return conversations
