"""What the generated tools return: a few typed facts per call, or now and then an error (issue 35).

`data.synthetic_tools` and `data.synthetic_rich` invent tools that have no implementation, so their
results are made up here. They used to be an opaque id ("result R1234") under a fixed answer line,
and a continuation trained on half such conversations learned to end a turn without the facts a
tool returned: 30 of its world failures were answers missing them (reports/archive/issue35-cpu1).
So each API gets a result of its own kind — a status, a value, a name, a count, a short list — and
`data.tool_answers` writes the gold answer that restates it.

Every value is a function of the call's arguments and one number drawn from the conversation's
rng: the calculators compute their real answer from the arguments (a triangle of base 10 and
height 5 has area 25.0), the lookups draw plausible facts from a generator seeded by that number,
the tool's name and its arguments. The conversation's rng gives exactly the one draw the opaque
result made, so turning restated results on changes the tool turns and final answers and leaves
every other draw of the mix's stream as it was.

A share `ERROR_SHARE` of the calls fails, with a reason ("the payment was declined"), so the
model also sees results that say an action did not happen.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from collections.abc import Callable
from typing import Any

ERROR_SHARE = 0.1
# Keys of a result that are not facts to restate.
STATUS, ERROR = "status", "error"

CONDITIONS = ("sunny", "light rain", "overcast", "snow showers", "clear skies", "fog", "strong wind")
HOTELS = ("Hotel Aurora", "Harbour Inn", "Grand Lotus", "The Linden", "Casa Alma", "Northgate Suites")
RESTAURANTS = ("Casa Verde", "The Copper Pot", "Little Saigon", "Olive and Thyme", "Blue Door Bistro")
TITLES = ("A Beginner's Guide", "Ten Things to Know", "What the Experts Say", "A Short History")
EVENTS = ("Winter Jazz Night", "Street Food Market", "Open Air Cinema", "Book Fair", "Design Week")
PARCEL = ("in transit", "out for delivery", "delivered", "held at the depot")
ORDER = ("packed", "shipped", "out for delivery", "delivered")
SENDERS = ("Maria Lopez", "Ken Ito", "Ada Obi", "Sam Park", "Lena Kraus", "Omar Haddad")
SONGS = ("Quiet Rain", "Harbor Lights", "Moon Over Water", "Long Road Home", "Rain on Tin", "Old Moon")
DISHES = ("lemon rice", "chickpea stew", "spinach pie", "garlic mushrooms", "tomato soup", "feta salad")
CITY_HUBS = ("Leipzig hub", "Rotterdam depot", "Lyon sorting centre", "Osaka hub")
FIRST_LINES = ("TODO: call the plumber", "date,region,total", "INFO server started", "Dear Ms Obi,")
QUALITY = ("good", "moderate", "poor")
# Why a call failed; the action reasons only for tools that change something.
ERRORS = ("the service is unavailable right now", "the request timed out", "the daily quota is used up")
ACTION_ERRORS = ("the payment was declined", "there is no availability for that", "the account is locked")


def _r2(x: float) -> float:
    return round(x, 2)


def _quadratic(r: random.Random, a: dict) -> dict:
    disc = a["b"] ** 2 - 4 * a["a"] * a["c"]
    if disc < 0:
        return {"discriminant": disc, "real_root_count": 0}
    roots = sorted({_r2((-a["b"] + s * math.sqrt(disc)) / (2 * a["a"])) for s in (1, -1)})
    return {"discriminant": disc, **({"roots": roots} if len(roots) > 1 else {"root": roots[0]})}


def _interest(r: random.Random, a: dict) -> dict:
    total = a["principal"] * (1 + a["rate"]) ** a["years"]
    return {"final_amount": _r2(total), "interest_earned": _r2(total - a["principal"])}


def _stats(r: random.Random, a: dict) -> dict:
    v, d = a["values"], a.get("decimals", 2)
    return {
        "mean": round(statistics.mean(v), d),
        "median": round(statistics.median(v), d),
        "minimum": min(v),
        "maximum": max(v),
    }


def _volume(r: random.Random, a: dict) -> dict:
    d = a["dimensions"]
    return {"volume": _r2(d["length"] * d["width"] * d["height"]), "unit": f"cubic {a.get('unit', 'cm')}"}


def _converted(r: random.Random, a: dict) -> dict:
    rate = round(r.uniform(0.5, 1.6), 4)
    return {"rate": rate, "converted_amount": _r2(a["amount"] * rate)}


def _rates(r: random.Random, a: dict) -> dict:
    out = {"base": a["base"]}
    for target in a["targets"]:
        out[f"{target}_rate"] = 1.0 if target == a["base"] else round(r.uniform(0.5, 1.6), 4)
    return out


def _times(r: random.Random, a: dict) -> dict:
    first = r.randint(5, 10)
    times = [f"{h:02d}:{r.choice((5, 20, 35, 50))}" for h in sorted(r.sample(range(first, 22), 3))]
    return {"departures": times, "journey_time_minutes": r.randint(45, 300)}


# noun -> the facts its API returns, from (rng, arguments); the nouns of both generators' APIs.
RESULTS: dict[str, Callable[[random.Random, dict[str, Any]], dict[str, Any]]] = {
    "weather": lambda r, a: {"temperature": r.randint(-5, 32), "conditions": r.choice(CONDITIONS)},
    "forecast": lambda r, a: {
        "high": r.randint(5, 33),
        "low": r.randint(-8, 4),
        "outlook": r.sample(CONDITIONS, 3),
    },
    "weather_history": lambda r, a: {
        "temperature": r.randint(-5, 32),
        "rainfall_mm": round(r.uniform(0, 25), 1),
        "conditions": r.choice(CONDITIONS),
    },
    "air_quality": lambda r, a: {"air_quality_index": r.randint(12, 160), "quality": r.choice(QUALITY)},
    "stock_price": lambda r, a: {"price": _r2(r.uniform(20, 900)), "change_percent": _r2(r.uniform(-4, 4))},
    "stock_quotes": lambda r, a: {f"{s}_price": _r2(r.uniform(5, 600)) for s in a["symbols"]},
    "exchange_rates": _rates,
    "currency": _converted,
    "restaurants": lambda r, a: {
        "restaurant_count": r.randint(3, 25),
        "top_pick": r.choice(RESTAURANTS),
        "rating": round(r.uniform(3.5, 4.9), 1),
    },
    "table": lambda r, a: {
        "booking": "confirmed",
        "restaurant": r.choice(RESTAURANTS),
        "time": f"{r.randint(18, 21)}:{r.choice(('00', '30'))}",
    },
    "hotels": lambda r, a: {
        "hotel_count": r.randint(2, 30),
        "cheapest": r.choice(HOTELS),
        "price_per_night": r.randint(60, 380),
    },
    "room": lambda r, a: {"reservation": "confirmed", "confirmation": f"HR-{r.randint(10000, 99999)}"},
    "articles": lambda r, a: {"article_count": r.randint(2, 40), "top_title": r.choice(TITLES)},
    "package": lambda r, a: {"parcel_status": r.choice(PARCEL), "last_seen": r.choice(CITY_HUBS)},
    "shipping_cost": lambda r, a: {"cost": _r2(r.uniform(4, 60)), "delivery_time_days": r.randint(1, 9)},
    "word": lambda r, a: {"part_of_speech": r.choice(("noun", "adjective")), "sense_count": r.randint(1, 5)},
    "phrase": lambda r, a: {"translation": r.choice(("bonjour", "hallo", "hola", "ciao"))},
    "events": lambda r, a: {"event_count": r.randint(1, 15), "next_event": r.choice(EVENTS)},
    "invoice": lambda r, a: {"invoice_number": f"INV-{r.randint(1000, 9999)}", "payment_term_days": 30},
    "triangle_area": lambda r, a: {"area": a["base"] * a["height"] / 2},
    "circle_area": lambda r, a: {"area": _r2(math.pi * a["radius"] ** 2)},
    "bmi": lambda r, a: {"bmi": round(a["mass_kg"] / a["height_m"] ** 2, 1)},
    "quadratic": _quadratic,
    "compound_interest": _interest,
    "average": lambda r, a: {"average": _r2(statistics.mean(a["numbers"]))},
    "final_velocity": lambda r, a: {
        "final_velocity": _r2(a["initial_velocity"] + a["acceleration"] * a["time"])
    },
    "population": lambda r, a: {"population": r.randint(4_000_000, 130_000_000)},
    "order": lambda r, a: {"order_id": f"ORD-{r.randint(1000, 9999)}", "total": _r2(r.uniform(15, 240))},
    "order_status": lambda r, a: {"order_status": r.choice(ORDER), "time_to_arrival_days": r.randint(0, 6)},
    "email": lambda r, a: {"message_id": f"MSG-{r.randint(10000, 99999)}", "recipient_count": len(a["to"])},
    "inbox": lambda r, a: {
        "match_count": r.randint(1, a.get("limit", 10)),
        "newest_sender": r.choice(SENDERS),
    },
    "summary_stats": _stats,
    "numbers": lambda r, a: {"sorted": sorted(a["values"], reverse=a.get("descending", False))},
    "file": lambda r, a: {
        "line_count": r.randint(3, a.get("max_lines", 60)),
        "first_line": r.choice(FIRST_LINES),
    },
    "files": lambda r, a: {"deleted_count": len(a["paths"]), "space_freed_kb": r.randint(4, 900)},
    "tracks": lambda r, a: {"track_count": r.randint(1, a.get("limit", 5)), "best_match": r.choice(SONGS)},
    "playlist": lambda r, a: {"playlist_id": f"PL-{r.randint(100, 999)}", "track_count": len(a["tracks"])},
    "box_volume": _volume,
    "polygon_perimeter": lambda r, a: {"perimeter": _r2(sum(a["sides"]))},
    "recipes": lambda r, a: {"recipe_count": r.randint(1, 12), "quickest_dish": r.choice(DISHES)},
    "nutrition_facts": lambda r, a: {
        "energy_kcal": r.randint(20, 400),
        "protein_g": round(r.uniform(0.5, 20), 1),
    },
    "train_times": _times,
    "train_ticket": lambda r, a: {"ticket": f"TK-{r.randint(10000, 99999)}", "fare": _r2(r.uniform(9, 180))},
    "thermostat": lambda r, a: {"target": a["celsius"], "current": round(r.uniform(14, 23), 1)},
    "sensors": lambda r, a: {f"{room}_temperature": round(r.uniform(16, 24), 1) for room in a["rooms"]},
}
# Verbs of the APIs that change something: their failures can be refusals, and their answers say
# what was done.
ACTION_VERBS = {
    "book": "booked",
    "send": "sent",
    "reserve": "reserved",
    "place": "placed",
    "buy": "bought",
    "create": "created",
    "delete": "deleted",
    "set": "set",
}


def tool_result(rng: random.Random, name: str, verb: str, noun: str, args: dict[str, Any]) -> dict[str, Any]:
    """The result of calling `name` (the API `verb` `noun`) with `args`: {"status": "ok", facts…}
    or, for a share `ERROR_SHARE`, {"status": "error", "error": why}. Takes one draw of `rng`."""
    token = rng.randint(1000, 9999)  # the one draw the opaque result made: the stream stays aligned
    own = random.Random(f"{name}|{json.dumps(args, sort_keys=True)}|{token}")
    if own.random() < ERROR_SHARE:
        return {STATUS: "error", ERROR: own.choice(ERRORS + (ACTION_ERRORS if verb in ACTION_VERBS else ()))}
    if noun not in RESULTS:
        raise KeyError(f"no result kind for the generated API {verb}_{noun}: add it to tool_results.RESULTS")
    return {STATUS: "ok", **RESULTS[noun](own, args)}


def opaque_result(rng: random.Random, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The result the shipped adapter was trained on: an id and nothing to restate."""
    return {"status": "ok", "tool": name, "request": args, "result_id": f"R{rng.randint(1000, 9999)}"}


def facts(result: dict[str, Any]) -> dict[str, Any]:
    """The fields of `result` an answer restates (every one but the status and the error)."""
    return {k: v for k, v in result.items() if k not in (STATUS, ERROR)}


def failed(result: dict[str, Any]) -> bool:
    return result.get(STATUS) == "error"
