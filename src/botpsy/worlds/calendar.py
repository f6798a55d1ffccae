"""Calendar world: a seeded calendar and generated requests with gold conversations.

Every task is built by *running* its gold calls in a `World`, so tool results, event ids and the
expected state hash come from the real tools, never from hand-written expectations.

Splits: training and evaluation use disjoint request templates (`_T[kind]["train"|"eval"]`) and
disjoint random streams (the split name is mixed into the seed), so evaluation measures phrasing
the model never saw. Titles, names and date/time spellings are shared: copying them is the skill.
"Today" is fixed at Tuesday 2026-12-01 and stated in the system prompt; requested dates fall in the
following three weeks.
"""

from __future__ import annotations

import json
import random
from datetime import date, datetime, timedelta

from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.calendar import TOOLS, CalendarState, Event
from botpsy.worlds.base import Task, World

TODAY = date(2026, 12, 1)


def system_prompt(today: date) -> str:
    """The system text of the calendar assistant; the world and the runtime share it."""
    return f"You are botpsy, a personal assistant on the user's device. Today is {today.strftime('%A')}, {today.strftime('%B')} {today.day}, {today.year}."


SYSTEM = system_prompt(TODAY)

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
        ],
        "eval": ["Where can I fit {dur} on {when}?", "Look for {dur} of free time on {when}"],
    },
    "move": {
        "train": [
            "Move my {ref} to {when} at {at}",
            "Reschedule the {ref} to {when} at {at}",
            "Can you push my {ref} to {when} at {at}?",
            "Change the {ref} to {when}, {at}",
        ],
        "eval": ["Shift my {ref} over to {when} at {at}", "I need the {ref} on {when} at {at} instead"],
    },
    "delete": {
        "train": [
            "Cancel my {ref}",
            "Delete the {ref} from my calendar",
            "Remove my {ref}",
            "Drop the {ref} please",
        ],
        "eval": ["Get rid of my {ref}", "Please cancel the {ref}, it's off", "Scrap my {ref}"],
    },
    "ask_time": {
        "train": [
            "Add a {what} on {when}",
            "Schedule a {what} for {when}",
            "Put {what} in my calendar on {when}",
        ],
        "eval": ["Could you put a {what} on {when}?", "Set up {what} on {when} please"],
    },
    "ask_date": {
        "train": ["Add a {what} at {at}", "Schedule a {what} at {at}", "Book a {what} at {at}"],
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


class CalendarDomain:
    name = "calendar"
    tools = TOOLS
    state_type = CalendarState
    system = SYSTEM

    def generate(self, n: int, seed: int, split: str) -> list[Task]:
        if split not in ("train", "eval"):
            raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
        rng = random.Random(f"calendar:{split}:{seed}")
        kinds = ["single", "multi_step", "no_call", "missing_info", "impossible"]
        weights = [0.36, 0.24, 0.1, 0.15, 0.15] if split == "train" else None
        tasks = []
        for i in range(n):
            kind = rng.choices(kinds, weights)[0] if weights else kinds[i % len(kinds)]
            for _attempt in range(20):
                task = _Builder(rng, split, f"calendar-{split}-{seed}-{i}").build(kind)
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
    kinds = ["single", "multi_step", "no_call", "missing_info", "impossible"]
    weights = [0.36, 0.24, 0.1, 0.15, 0.15]
    conversations = []
    for c in range(n):
        world = World(TOOLS, seed_state(rng))
        tasks: list[Task] = []
        while len(tasks) < per_conversation:
            kind = rng.choices(kinds, weights)[0]
            snapshot = world.state.model_copy(deep=True)
            task = _Builder(rng, split, f"calendar-conv-{split}-{seed}-{c}-{len(tasks)}", world).build(kind)
            if task is None:
                world.state = snapshot
                continue
            tasks.append(task)
        conversations.append(tasks)
    return conversations


class _Builder:
    """Builds one task by running its gold conversation in a fresh world."""

    def __init__(self, rng: random.Random, split: str, task_id: str, world: World | None = None):
        self.rng, self.split, self.task_id = rng, split, task_id
        self.world = world or World(TOOLS, seed_state(rng))
        self.state = self.world.state
        self.initial = self.state.model_dump()
        self.gold: list[Message] = []

    def tpl(self, key: str, **kw) -> str:
        return self.rng.choice(_T[key][self.split]).format(**kw)

    def call(self, reasoning: str, name: str, **args) -> dict:
        self.gold.append(Message("assistant", "", reasoning, [ToolCall(name, args)]))
        out = self.world.call(name, args)
        self.gold.append(Message("tool", out, name=name))
        return json.loads(out)

    def say(self, text: str, reasoning: str = "") -> None:
        self.gold.append(Message("assistant", text, reasoning))

    def task(self, kind: str, user: str, facts=None, replies=None) -> Task:
        return Task(
            id=self.task_id,
            domain="calendar",
            kind=kind,
            split=self.split,
            user=user,
            initial_state=self.initial,
            gold=[m.to_openai() for m in self.gold],
            expected_hash=self.world.hash(),
            required_facts=facts or [],
            user_replies=replies or [],
            system=SYSTEM,
        )

    def when(self) -> tuple[date, str]:
        d = TODAY + timedelta(days=self.rng.randint(1, 18))
        return d, date_phrase(self.rng, d)

    def at(self) -> tuple[str, str]:
        hour = self.rng.randint(7, 19)
        minute = self.rng.choice([0, 0, 0, 30, 15, 45])
        return f"{hour:02d}:{minute:02d}", time_phrase(self.rng, hour, minute)

    def build(self, kind: str) -> Task | None:
        return getattr(self, f"_{kind}")()

    # ---- kinds -----------------------------------------------------------------------------
    def _single(self) -> Task | None:
        sub = self.rng.choice(["create", "create", "create_duration", "list", "free"])
        d, when = self.when()
        if sub in ("create", "create_duration"):
            what = self.rng.choice(NEW_TITLES)
            hhmm, at = self.at()
            start = f"{d.isoformat()}T{hhmm}"
            if sub == "create":
                user = self.tpl("create", what=what, when=when, at=at)
                self.call(f"Create '{what}' at {start}.", "create_event", title=what, start=start)
            else:
                minutes = self.rng.choice([30, 90, 120, 45])
                user = self.tpl(
                    "create_duration", what=what, when=when, at=at, dur=duration_phrase(self.rng, minutes)
                )
                self.call(
                    f"Create '{what}' at {start} for {minutes} minutes.",
                    "create_event",
                    title=what,
                    start=start,
                    duration_minutes=minutes,
                )
            self.say(f"Done: {what} is on your calendar on {d.isoformat()} at {hhmm}.")
            return self.task("single", user)
        if sub == "list":
            user = self.tpl("list", when=when)
            out = self.call(f"List the events on {d.isoformat()}.", "list_events", date=d.isoformat())
            events = out["events"]
            if events:
                items = ", ".join(f"{e['title']} at {e['start'][11:]}" for e in events)
                self.say(f"On {d.isoformat()} you have: {items}.")
                facts = [[keyword(e["title"])] for e in events]
            else:
                self.say(f"You have nothing on your calendar on {d.isoformat()}.")
                facts = [["nothing", "no events", "free"]]
            return self.task("single", user, facts)
        minutes = self.rng.choice([30, 60, 60, 120])
        user = self.tpl("free", when=when, dur=duration_phrase(self.rng, minutes))
        out = self.call(
            f"Find free slots of {minutes} minutes on {d.isoformat()}.",
            "find_free_slots",
            date=d.isoformat(),
            duration_minutes=minutes,
        )
        slots = out["free"]
        if not slots:
            return None
        items = ", ".join(f"{s['start'][11:]}-{s['end'][11:]}" for s in slots)
        self.say(f"On {d.isoformat()} you are free {items}.")
        return self.task("single", user, [[slots[0]["start"][11:]]])

    def _target(self) -> tuple[Event, str] | None:
        ev = self.rng.choice(self.state.events)
        kw = keyword(ev.title)
        hits = [e for e in self.state.events if kw in " ".join([e.title, e.location]).casefold()]
        return (ev, kw) if len(hits) == 1 else None

    def _multi_step(self) -> Task | None:
        picked = self._target()
        if picked is None:
            return None
        ev, kw = picked
        ref = (
            ev.title.casefold()
            if not ev.title.startswith(("Call", "Lunch", "Dinner", "Coffee", "Tennis"))
            else ev.title
        )
        if self.rng.random() < 0.55:
            d, when = self.when()
            hhmm, at = self.at()
            start = f"{d.isoformat()}T{hhmm}"
            user = self.tpl("move", ref=ref, when=when, at=at)
            self.call(f"Find the {kw} event first.", "find_events", query=kw)
            self.call(f"Move {ev.id} to {start}.", "update_event", event_id=ev.id, start=start)
            self.say(f"Moved {ev.title} to {d.isoformat()} at {hhmm}.")
        else:
            user = self.tpl("delete", ref=ref)
            self.call(f"Find the {kw} event first.", "find_events", query=kw)
            self.call(f"Delete {ev.id}.", "delete_event", event_id=ev.id)
            self.say(f"Deleted {ev.title} on {ev.start[:10]}.")
        return self.task("multi_step", user)

    def _no_call(self) -> Task:
        user, answer = self.rng.choice(SMALL_TALK)
        self.say(answer, "No tool is needed.")
        return self.task("no_call", user)

    def _missing_info(self) -> Task:
        what = self.rng.choice(NEW_TITLES)
        d, when = self.when()
        hhmm, at = self.at()
        start = f"{d.isoformat()}T{hhmm}"
        if self.rng.random() < 0.5:
            user = self.tpl("ask_time", what=what, when=when)
            self.say(f"What time should the {what} start?", "The start time is missing.")
            reply = self.rng.choice([f"At {at}.", f"{at}", f"Make it {at}"])
        else:
            user = self.tpl("ask_date", what=what, at=at)
            self.say(f"Which day should I put the {what} on?", "The date is missing.")
            reply = self.rng.choice([f"On {when}.", f"{when}", f"It's on {when}"])
        self.gold.append(Message("user", reply))
        self.call(f"Create '{what}' at {start}.", "create_event", title=what, start=start)
        self.say(f"Done: {what} is on your calendar on {d.isoformat()} at {hhmm}.")
        return self.task("missing_info", user, replies=[reply])

    def _impossible(self) -> Task | None:
        if self.rng.random() < 0.4:
            user, skill = self.rng.choice(OUT_OF_SCOPE)
            self.say(f"Sorry, I can't {skill}: I can only manage your calendar.", "No tool can do this.")
            return self.task("impossible", user, [["can't", "cannot", "can not", "unable"]])
        present = {keyword(e.title) for e in self.state.events}
        absent = [t for t in SEED_TITLES if keyword(t) not in present]
        if not absent:
            return None
        title = self.rng.choice(absent)
        kw = keyword(title)
        ref = title.casefold()
        if self.rng.random() < 0.5:
            user = self.tpl("delete", ref=ref)
        else:
            d, when = self.when()
            hhmm, at = self.at()
            user = self.tpl("move", ref=ref, when=when, at=at)
        self.call(f"Find the {kw} event first.", "find_events", query=kw)
        self.say(f"I couldn't find any {ref} on your calendar.", "Nothing matches.")
        return self.task("impossible", user, [["couldn't find", "could not find", "no ", "not find"]])
