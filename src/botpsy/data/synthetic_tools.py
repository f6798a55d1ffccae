"""Procedurally generated unseen tools: random typed APIs with requests and gold calls.

The suites hold about a hundred tools; a model trained only on them learns those names, not how to
read a schema. BFCL items and MCP servers bring tools the model has never seen, so training mixes
in conversations over tools invented per conversation: a name in one of the naming styles real
APIs use (`get_weather`, `getWeather`, `weather.get`), typed parameters (string, integer, number,
boolean, enum) with descriptions, a request that mentions the values, and the gold call that maps
each value to its parameter. The tool list of a conversation holds the target among distractors,
and some requests need two calls in one turn (BFCL's parallel) or none at all (BFCL's
irrelevance: a request no listed tool serves gets a plain answer, including a request for one of
the other APIs here, which reads like a call but names no listed tool).

Parameters here are flat scalars, described in one style; tools in the shapes other people's APIs
have (lists, nested objects, defaults, docstring prose, near-miss siblings) are `data.synthetic_rich`'s.

Why not a library: no package generates typed tool schemas with aligned natural-language
requests and gold calls; xLAM/ToolACE data would do it but cannot be downloaded here
(`data/public.py` reads them when they are present).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from botpsy.data.tool_answers import opaque_reported, reported
from botpsy.protocol.messages import Message, ToolCall

CITIES = ["Paris", "Tokyo", "Lisbon", "Nairobi", "Toronto", "Berlin", "Lima", "Seoul", "Oslo", "Austin"]
NAMES = ["Maria Lopez", "Ken Ito", "Ada Obi", "Sam Park", "Lena Kraus", "Omar Haddad", "Ivy Chen"]
TOPICS = ["solar panels", "jazz history", "sourdough", "chess openings", "marathon training", "tax forms"]
SYMBOLS = ["AAPL", "MSFT", "NVDA", "TSLA", "SAP", "ASML"]
WORDS = ["serendipity", "ephemeral", "quorum", "lucid", "zenith"]


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # JSON schema type
    description: str
    values: tuple[Any, ...]
    phrase: str  # how a request mentions the value: "{v}" is replaced
    enum: tuple[str, ...] = ()


def _ints(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(range(lo, hi + 1))


PARAMS = [
    Param("city", "string", "Name of the city", tuple(CITIES), "in {v}"),
    Param("location", "string", "City where to look", tuple(CITIES), "near {v}"),
    Param("date", "string", "Date as YYYY-MM-DD", ("2026-12-04", "2026-12-19", "2027-01-08"), "on {v}"),
    Param("limit", "integer", "Maximum number of results", _ints(2, 20), "(at most {v} results)"),
    Param("days", "integer", "Number of days", _ints(1, 14), "for the next {v} days"),
    Param("guests", "integer", "Number of people", _ints(1, 8), "for {v} people"),
    Param("amount", "number", "Amount of money", (12.5, 40.0, 99.99, 250.0, 1200.75), "for {v}"),
    Param("weight_kg", "number", "Weight in kilograms", (0.5, 2.25, 7.0, 18.4), "weighing {v} kg"),
    Param(
        "currency",
        "string",
        "ISO currency code",
        ("USD", "EUR", "GBP", "JPY"),
        "in {v}",
        ("USD", "EUR", "GBP", "JPY"),
    ),
    Param(
        "unit", "string", "Temperature unit", ("celsius", "fahrenheit"), "in {v}", ("celsius", "fahrenheit")
    ),
    Param(
        "language",
        "string",
        "Target language",
        ("french", "german", "spanish"),
        "into {v}",
        ("french", "german", "spanish"),
    ),
    Param("include_details", "boolean", "Whether to include full details", (True,), "with full details"),
    Param("express", "boolean", "Use express delivery", (True,), "by express"),
    Param("query", "string", "What to search for", tuple(TOPICS), "about {v}"),
    Param("symbol", "string", "Stock ticker symbol", tuple(SYMBOLS), "for {v}"),
    Param("person", "string", "Full name of the person", tuple(NAMES), "for {v}"),
    Param("word", "string", "The word to look up", tuple(WORDS), 'for the word "{v}"'),
    Param(
        "tracking_id",
        "string",
        "Tracking number",
        ("TRK-4821", "TRK-0937", "ZX-55102"),
        "with tracking number {v}",
    ),
]
# Parameters of the calculators and lookups that science, finance and geography APIs expose (the
# kind BFCL's simple, parallel and irrelevance items list): every one is required, and a request
# names them in order ("with base 10 and height 5").
PARAMS += [
    Param("base", "integer", "Length of the triangle's base", _ints(2, 30), "with base {v}"),
    Param("height", "integer", "Height of the triangle", _ints(2, 30), "and height {v}"),
    Param("radius", "integer", "Radius of the circle", _ints(1, 25), "with radius {v}"),
    Param(
        "mass_kg", "number", "Body mass in kilograms", (54.0, 61.5, 70.0, 82.3, 95.0), "for someone of {v} kg"
    ),
    Param("height_m", "number", "Body height in metres", (1.55, 1.62, 1.7, 1.78, 1.85), "and {v} m tall"),
    Param("a", "integer", "Coefficient of x squared", (1, 2, 3, 4, 5), "with a = {v},"),
    Param("b", "integer", "Coefficient of x", (-7, -4, -1, 3, 6), "b = {v}"),
    Param("c", "integer", "Constant term", (-9, -2, 0, 4, 8), "and c = {v}"),
    Param("principal", "number", "Starting amount of money", (1000.0, 2500.0, 10000.0), "on {v} dollars"),
    Param("rate", "number", "Annual interest rate as a fraction", (0.03, 0.05, 0.07), "at a rate of {v}"),
    Param("years", "integer", "Number of years", _ints(2, 30), "over {v} years"),
    Param(
        "numbers",
        "array",
        "The numbers to average",
        ([3, 7, 12], [10, 20, 30, 40], [2.5, 4.0, 6.5], [1, 1, 2, 3, 5]),
        "of {v}",
    ),
    Param("initial_velocity", "integer", "Initial velocity in m/s", _ints(0, 40), "starting at {v} m/s"),
    Param(
        "acceleration", "number", "Acceleration in m/s^2", (9.8, 2.5, 3.0, 1.2), "accelerating at {v} m/s^2"
    ),
    Param("time", "integer", "Elapsed time in seconds", _ints(1, 20), "after {v} seconds"),
    Param(
        "country", "string", "Name of the country", ("Japan", "Brazil", "Kenya", "Canada", "Norway"), "of {v}"
    ),
    Param("year", "integer", "The year", (1990, 2000, 2010, 2020), "in {v}"),
]
BY_NAME = {p.name: p for p in PARAMS}

# (verb, noun, request lead, parameter names it can take; the first is required)
APIS = [
    ("get", "weather", "What's the weather", ["city", "date", "unit"]),
    ("get", "forecast", "Give me the forecast", ["city", "days", "unit"]),
    ("get", "stock_price", "What is the stock price", ["symbol", "date", "currency"]),
    ("search", "restaurants", "Find restaurants", ["location", "guests", "limit"]),
    ("search", "hotels", "Look for hotels", ["city", "date", "guests", "limit"]),
    ("search", "articles", "Search articles", ["query", "limit", "language"]),
    ("convert", "currency", "Convert money", ["amount", "currency"]),
    ("track", "package", "Track my package", ["tracking_id", "include_details"]),
    ("calculate", "shipping_cost", "How much is shipping", ["weight_kg", "city", "express"]),
    ("define", "word", "Look up the definition", ["word", "language"]),
    ("translate", "phrase", "Translate the greeting", ["language", "query"]),
    ("book", "table", "Book a table", ["location", "guests", "date"]),
    ("find", "events", "Find events", ["city", "date", "limit"]),
    ("send", "invoice", "Send an invoice", ["person", "amount", "currency"]),
    ("get", "air_quality", "How is the air quality", ["city", "include_details"]),
]
# The calculators and lookups: every parameter required (the fifth field).
APIS += [
    ("calculate", "triangle_area", "Work out the area of a triangle", ["base", "height"], True),
    ("calculate", "circle_area", "What is the area of a circle", ["radius"], True),
    ("compute", "bmi", "Compute the body mass index", ["mass_kg", "height_m"], True),
    ("solve", "quadratic", "Find the roots of the quadratic equation", ["a", "b", "c"], True),
    ("calculate", "compound_interest", "How much interest will I earn", ["principal", "rate", "years"], True),
    ("calculate", "average", "Give me the average", ["numbers"], True),
    (
        "calculate",
        "final_velocity",
        "Calculate the final velocity",
        ["initial_velocity", "acceleration", "time"],
        True,
    ),
    ("get", "population", "What was the population", ["country", "year"], True),
]
# Requests none of the generated tools serves (BFCL irrelevance), with the skill they need.
UNSERVED = [
    ("Play my workout playlist.", "play music"),
    ("Turn on the porch light.", "control lights"),
    ("Write a haiku about autumn.", "write poems"),
    ("Remind me to call mum at 5.", "set reminders"),
]
# Requests in a listed API's own field that it still cannot serve: another quantity, the opposite
# action, the past instead of the future. A model that calls whatever tool shares the request's
# topic gets these wrong; it has to read what the tool does. Written for the APIs above, by noun.
NEAR_MISSES = {
    "weather": ["What time zone is {city} in?", "How far is {city} from the sea?"],
    "forecast": [
        "What was the coldest day in {city} last winter?",
        "How much rain fell in {city} last year?",
    ],
    "stock_price": ["Who runs {symbol} as chief executive?", "Buy ten shares of {symbol} for me."],
    "restaurants": ["How do I make fresh pasta at home?", "Leave a review for the bistro we went to."],
    "hotels": ["How long is the flight to {city}?", "Cancel my hotel booking in {city}."],
    "articles": ["Write me an article about {topic}.", "Publish my post about {topic}."],
    "currency": ["What will the euro be worth next year?", "Open a savings account in {currency}."],
    "package": ["Send a parcel to {city} for me.", "Change the delivery address of my parcel to {city}."],
    "shipping_cost": ["How many days does shipping to {city} take?", "Print a shipping label for my box."],
    "word": ["Check my essay for spelling mistakes.", "Give me a word that rhymes with {word}."],
    "phrase": ["Which languages are spoken in {country}?", "Teach me to pronounce the greeting."],
    "table": ["Cancel the table I booked near {city}.", "What is on the menu near {city} tonight?"],
    "events": ["Buy two tickets for the concert in {city}.", "Put on an event of my own in {city}."],
    "invoice": ["Has {person} paid my last invoice yet?", "Refund the invoice I sent {person}."],
    "air_quality": ["How many people live in {city}?", "What is the altitude of {city}?"],
    "triangle_area": [
        "What is the perimeter of a triangle with sides {n1}, {n2} and {n3}?",
        "Which angle is the largest in a triangle with sides {n1}, {n2} and {n3}?",
    ],
    "circle_area": [
        "What is the circumference of a circle with radius {n1}?",
        "How long is the arc of a quarter circle of radius {n1}?",
    ],
    "bmi": ["How many calories should I eat a day at {n1} kg?", "What is a healthy resting heart rate?"],
    "quadratic": ["Solve x + y = {n1} and x - y = {n2} together.", "Factor the number {n1}{n2} into primes."],
    "compound_interest": [
        "What is the monthly payment on a {n1}000 dollar loan over {n2} years?",
        "What was the inflation rate last year?",
    ],
    "average": [
        "What is the median of {n1}, {n2} and {n3}?",
        "Sort {n1}, {n2} and {n3} from large to small.",
    ],
    "final_velocity": [
        "How much does a {n1} kg ball weigh on the Moon?",
        "What is the kinetic energy of a {n1} kg ball moving at {n2} m/s?",
    ],
    "population": ["What is the capital of {country}?", "What is the official language of {country}?"],
}
LEADS = ["", "Please ", "Can you ", "Hey, ", "I need you to "]
NO_TOOL_ANSWER = "Sorry, I can't do that: none of my tools serves this request."
# APIs close enough that one's request could fairly go to another: never an "unlisted API" pair.
OVERLAPS = [{"weather", "forecast", "air_quality"}, {"restaurants", "table"}]


def tool_name(verb: str, noun: str, style: int) -> str:
    if style == 1:
        parts = [verb, *noun.split("_")]
        return parts[0] + "".join(p.title() for p in parts[1:])
    if style == 2:
        return f"{noun}.{verb}"
    return f"{verb}_{noun}"


def _listing(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def call_thought(calls: list[ToolCall]) -> str:
    """The reasoning a generated (or public) call turn carries, by its shape: one call, several of
    one tool (parallel), or calls of two or more tools. The model's first reasoning token is its
    call-or-decline choice, so every call turn trained on opens with the tool it calls."""
    names = list(dict.fromkeys(c.name for c in calls))
    if len(calls) == 1:
        return f"{names[0]} fits; its parameters come from the request."
    if len(names) == 1:
        return f"{len(calls)} requests for {names[0]}, one call each, values from the request."
    count = "Two" if len(names) == 2 else str(len(names))
    return f"{count} requests: {_listing(names)}, each with its own values."


def chained_thought(calls: list[ToolCall]) -> str:
    """The reasoning of a call turn that follows a tool result (a chain's next step)."""
    names = list(dict.fromkeys(c.name for c in calls))
    return f"{_listing(names)} next, with values from the request and the results so far."


def _all_required(api: tuple) -> bool:
    """Whether `api` is one of the calculators and lookups, whose every parameter is required."""
    return bool(api[4:] and api[4])


def make_tool(rng: random.Random, api: tuple[str, str, str, list[str]]) -> tuple[dict[str, Any], list[Param]]:
    verb, noun, _, names, *_ = api
    if _all_required(api):
        params = [BY_NAME[n] for n in names]
        required = list(names)
    else:
        chosen = [names[0]] + [n for n in names[1:] if rng.random() < 0.7]
        params = [BY_NAME[n] for n in chosen]
        required = [params[0].name] + [p.name for p in params[1:] if rng.random() < 0.3]
    props: dict[str, Any] = {}
    for p in params:
        prop: dict[str, Any] = {"type": p.type, "description": p.description}
        if p.type == "array":
            prop["items"] = {"type": "number"}
        if p.enum:
            prop["enum"] = list(p.enum)
        props[p.name] = prop
    desc = f"{verb.title()} the {noun.replace('_', ' ')}."
    schema = {
        "type": "function",
        "function": {
            "name": tool_name(verb, noun, rng.choice([0, 0, 1, 2])),
            "description": desc,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }
    return schema, params


def _led(rng: random.Random, text: str) -> str:
    """`text` after one of `LEADS` ("Can you work out…"), or as it is when the draw is the empty lead."""
    lead = rng.choice(LEADS)
    return f"{lead}{text[0].lower()}{text[1:]}" if lead else text


def _request_and_args(
    rng: random.Random, api, schema: dict, params: list[Param]
) -> tuple[str, dict[str, Any]]:
    required = set(schema["function"]["parameters"]["required"])
    args: dict[str, Any] = {}
    phrases = []
    for p in params:
        if p.name in required or rng.random() < 0.5:
            v = rng.choice(p.values)
            args[p.name] = v
            phrases.append(p.phrase.format(v=v))
    return f"{_led(rng, api[2])} {' '.join(phrases)}".strip() + rng.choice(["?", ".", ""]), args


def unlisted_request(rng: random.Random, apis: list[tuple]) -> str | None:
    """A request for an API that is not among `apis` nor overlaps one of them (BFCL irrelevance at
    its hardest: it reads like a tool call, but no listed tool serves it); None if every API is near."""
    listed = {api[1] for api in apis}
    near = listed.union(*(group for group in OVERLAPS if group & listed))
    others = [api for api in APIS if api[1] not in near]
    if not others:
        return None
    api = rng.choice(others)
    schema, params = make_tool(rng, api)
    return _request_and_args(rng, api, schema, params)[0]


def near_miss_request(rng: random.Random, api: tuple) -> str:
    """A request in `api`'s own field that it does not serve (`NEAR_MISSES`), with its slots filled."""
    numbers = rng.sample(range(2, 13), 3)
    slots = {
        "city": rng.choice(CITIES),
        "symbol": rng.choice(SYMBOLS),
        "topic": rng.choice(TOPICS),
        "person": rng.choice(NAMES),
        "word": rng.choice(WORDS),
        "currency": rng.choice(("dollars", "yen", "pounds")),
        "country": rng.choice(BY_NAME["country"].values),
        **{f"n{i}": n for i, n in enumerate(numbers, 1)},
    }
    text = rng.choice(NEAR_MISSES[api[1]]).format(**slots)
    if text.endswith("?"):
        return text  # a question takes no "Please" or "Can you"
    return _led(rng, text)


def missing_values_request(rng: random.Random, api: tuple, schema: dict) -> tuple[str, str] | None:
    """(request, question) for a calculator asked for without the values its required parameters need:
    the assistant asks for them instead of making them up. None for APIs that are not calculators."""
    if not _all_required(api):
        return None
    required = schema["function"]["parameters"]["required"]
    wanted = " and ".join(BY_NAME[n].description.lower() for n in required)
    return f"{_led(rng, api[2])}.", f"I can do that: what {wanted} should I use?"


def _no_call_turn(user: str, answer: str, thought: str) -> list[Message]:
    """A request and the assistant's reply to it without a call."""
    return [Message("user", user), Message("assistant", answer, thought)]


def synthetic_conversation(
    rng: random.Random,
    requests: int = 2,
    unlisted: float = 0.0,
    near_miss: float = 0.0,
    restate: bool = False,
) -> tuple[list[dict], list[Message]]:
    """(tool schemas, messages after the system turn) over 2-5 freshly generated tools; a share
    `unlisted` of the requests asks for an API the list does not hold and gets a plain answer, and a
    share `near_miss` either asks a listed tool's field for something that tool does not do (a plain
    answer) or asks a listed calculator without its values (the assistant asks for them). With
    `restate` the tools return facts (`data.tool_results`) that the answer restates; without, an
    opaque id under a fixed line, the stream the shipped adapter was trained on."""
    apis = rng.sample(APIS, rng.randint(1, 5))
    tools = [make_tool(rng, api) for api in apis]
    schemas = [s for s, _ in tools]
    msgs: list[Message] = []
    for _ in range(requests):
        if near_miss and rng.random() < near_miss:
            i = rng.randrange(len(apis))
            name = schemas[i]["function"]["name"]
            asked = missing_values_request(rng, apis[i], schemas[i]) if rng.random() < 0.25 else None
            if asked is not None:
                msgs += _no_call_turn(*asked, f"{name} fits, but the request gives none of its values.")
                continue
            user = near_miss_request(rng, apis[i])
            # "No" first, the tool after: a reasoning that opens with a tool's name is a call's (or an
            # ask for its values), so the model's call-or-decline choice stays its first reasoning token
            msgs += _no_call_turn(
                user, NO_TOOL_ANSWER, f"No listed tool does this: {name} shares the topic, not the request."
            )
            continue
        user = unlisted_request(rng, apis) if unlisted and rng.random() < unlisted else None
        if user is not None:
            msgs += _no_call_turn(user, NO_TOOL_ANSWER, "No listed tool fits this request, so I call none.")
            continue
        roll = rng.random()
        if roll < 0.15:
            user, skill = rng.choice(UNSERVED)
            msgs += _no_call_turn(
                user, f"Sorry, I can't {skill}: none of my tools does that.", "No listed tool fits."
            )
            continue
        i = rng.randrange(len(apis))
        schema, params = tools[i]
        name = schema["function"]["name"]
        user, args = _request_and_args(rng, apis[i], schema, params)
        calls = [ToolCall(name, args)]
        first = params[0]
        if roll < 0.3 and first.type not in ("boolean", "array") and len(first.values) > 2:
            # parallel: the same request for two or three values of the first parameter, one turn
            others = rng.sample([v for v in first.values if v != args[first.name]], rng.choice([1, 1, 2]))
            calls += [ToolCall(name, {**args, first.name: v}) for v in others]
            more = " and ".join(first.phrase.format(v=v) for v in others)
            user = f"{user.rstrip('?.')}, and the same {more}."
        msgs.append(Message("user", user))
        # the one-call line even for parallel calls: the stream the shipped adapter was trained on
        msgs.append(Message("assistant", "", call_thought(calls[:1]), calls))
        # one tool per turn here: its name is the fixed line's NAME
        msgs += reported(rng, calls, {name: apis[i][:2]}) if restate else opaque_reported(rng, calls, False)
    return schemas, msgs
