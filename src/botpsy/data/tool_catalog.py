"""Unseen-tool APIs in the shapes real APIs have: lists, nested objects, defaults, varied prose.

`data.synthetic_tools` invents tools whose parameters are flat scalars, described in one style,
all of them stated by the request. Tools that other people write look different: a parameter takes
a list ("for Paris, Lima and Oslo"), an object whose fields the request states (an address, a box's
dimensions), or a list of objects (the passengers of a ticket); optional parameters carry a
default that the request sometimes overrides and a gold call leaves out when it does not; and the
descriptions are short, long, give examples, or read like a Python docstring ("The x of y.
Default 5"). Trained only on the flat shapes, the embedded model copied a list parameter's schema
into its value and sent `[]` for lists the request filled (issue 35).

This module is the catalogue: families of two APIs of one domain that do different things (look
hotels up, reserve a room), each parameter with the phrasings a request uses for its value. Two
members of a family make the near-miss tool lists of `data.synthetic_rich`: a request for one of
them, with only the other listed, gets a plain answer. The names and values are generic on
purpose; none comes from an evaluation suite.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botpsy.data.synthetic_tools import CITIES, NAMES


@dataclass(frozen=True)
class Spec:
    """One parameter. `say` holds request phrasings with "{v}" for the value as a request writes it;
    an array's `values` are its item pool, an object's (or an array of objects') `fields` its fields
    and `forms` the ways a request writes one object ("{street}, {city}")."""

    name: str
    type: str  # string, integer, number, boolean, array, object
    desc: str  # a lower-case noun phrase: "city to look in"
    values: tuple[Any, ...] = ()
    say: tuple[str, ...] = ("{v}",)
    enum: bool = False  # the values are the schema's enum (of the items, for an array)
    items: str = ""  # an array's item type: string, integer, number or object
    fields: tuple[Spec, ...] = ()
    forms: tuple[str, ...] = ()  # how a request writes one object, with {field} slots
    default: Any = None  # an optional parameter's default; None with `optional` means no default
    optional: bool = False
    example: str = ""  # what the "e.g." description style quotes; never one of the drawn values


@dataclass(frozen=True)
class Api:
    family: str
    verb: str
    noun: str
    does: str  # what it does, for its description and a decline: "looks hotels up"
    lacks: str  # what its sibling does and it does not, for a decline: "reserve hotel rooms"
    asks: tuple[str, ...]  # openings of a request for it
    params: tuple[Spec, ...]


def s(name: str, type_: str, desc: str, values, say, **kw) -> Spec:
    """A Spec with `say` given as one phrasing or several."""
    return Spec(name, type_, desc, tuple(values), (say,) if isinstance(say, str) else tuple(say), **kw)


DATES = ("2027-01-08", "2027-02-14", "2027-03-03", "2027-04-21", "2027-05-30")
EMAILS = ("ada.obi@example.com", "ken.ito@example.org", "lena@example.net", "sam.park@example.com")
AMENITIES = ("pool", "parking", "gym", "breakfast", "wifi", "spa")
CURRENCIES = ("USD", "EUR", "GBP", "JPY", "CHF", "CAD")
TICKERS = ("ACME", "GLOBX", "INITC", "UMBRL", "STARK", "WAYNE")
PRODUCTS = ("desk lamps", "notebooks", "coffee mugs", "phone chargers", "water bottles", "tea towels")
FILES = ("notes/todo.txt", "reports/q3.csv", "logs/app.log", "drafts/letter.md", "data/plants.json")
LANGS = ("french", "german", "spanish", "italian", "japanese")
TRACKS = ("Morning Light", "Blue Harbor", "Paper Moon", "Slow River", "Northern Road", "Glass House")
INGREDIENTS = ("chickpeas", "spinach", "lemon", "garlic", "rice", "tomatoes", "feta", "mushrooms")
ROOMS = ("kitchen", "bedroom", "office", "living room", "garage")
PLACES = CITIES[:8]

_CITY = s("city", "string", "city to look in", CITIES, ("in {v}", "in the city of {v}"), example="Rome")
_DATE = s("date", "string", "date as YYYY-MM-DD", DATES, ("on {v}", "for {v}"), example="2030-01-01")
# Dates before the runtime's today (2026-12-01), for records of the past.
PAST = ("2025-11-02", "2026-03-14", "2026-07-21", "2026-10-05", "2026-11-18")
_PAST_DATE = s("date", "string", "past date as YYYY-MM-DD", PAST, ("on {v}", "for {v}"), example="2020-01-01")

# A table read row by row: one API per block, one parameter per line. ruff's layout would triple
# its length and split each parameter across lines, so it is kept as written.
# fmt: off
FAMILIES: list[tuple[Api, Api]] = [
    (
        Api("lodging", "search", "hotels", "looks hotels up", "reserve hotel rooms",
            ("Find hotels", "Search for hotels", "I'm looking for a hotel", "Show me hotel options"),
            (_CITY, s("check_in", "string", "check-in date as YYYY-MM-DD", DATES, ("from {v}", "checking in on {v}")),
             s("guests", "integer", "number of guests", range(1, 7), ("for {v} guests", "for {v} people"), default=2),
             s("amenities", "array", "amenities the hotel must have", AMENITIES, ("with {v}", "that have {v}"),
               items="string", optional=True, example='["sauna"]'))),
        Api("lodging", "reserve", "room", "reserves a room at a given hotel", "look hotels up",
            ("Reserve a room", "Book me a room", "Please reserve a hotel room"),
            (s("hotel_id", "string", "identifier of the hotel", ("H-2231", "H-0457", "H-9810"), ("at hotel {v}",)),
             s("nights", "integer", "number of nights", range(2, 9), ("for {v} nights",)),
             s("guest", "object", "guest the room is for", (), ("for {v}", "under the name of {v}"),
               fields=(s("name", "string", "full name", NAMES, "{v}"), s("email", "string", "email address", EMAILS, "{v}")),
               forms=("{name} ({email})", "{name}, email {email}")))),
    ),
    (
        Api("markets", "get", "stock_quotes", "gives the latest share prices of tickers", "convert between currencies",
            ("Get me the share prices of", "What are the stock quotes for", "Look up the latest quotes of"),
            (s("symbols", "array", "ticker symbols", TICKERS, "{v}", items="string", example='["XYZ"]'),
             s("currency", "string", "currency of the prices", CURRENCIES, ("in {v}",), enum=True, default="USD"))),
        Api("markets", "get", "exchange_rates", "gives exchange rates between currencies", "give share prices",
            ("What are the exchange rates", "Give me the conversion rates", "Fetch exchange rates"),
            (s("base", "string", "currency to convert from", CURRENCIES, ("from {v}",), enum=True),
             s("targets", "array", "currencies to convert to", CURRENCIES, ("to {v}", "into {v}"), items="string"))),
    ),
    (
        Api("weather", "get", "forecast", "forecasts the coming days' weather", "give past weather records",
            ("Give me the weather forecast", "What's the forecast", "Show the forecast"),
            (s("cities", "array", "cities to forecast", CITIES, ("for {v}",), items="string", example='["Rome"]'),
             s("days", "integer", "number of days ahead", range(1, 11), ("for the next {v} days",), default=3),
             s("units", "string", "unit system", ("metric", "imperial"), ("in {v} units",), enum=True, default="metric"))),
        Api("weather", "get", "weather_history", "gives recorded weather for past dates", "forecast the weather",
            ("What was the weather", "Pull the weather records", "How was the weather"),
            (_CITY, _PAST_DATE, s("measures", "array", "measures to report", ("rainfall", "temperature", "wind", "humidity"),
                             ("with {v}", "covering {v}"), items="string", enum=True, optional=True))),
    ),
    (
        Api("shop", "place", "order", "places an order for products", "tell an order's status",
            ("Place an order for", "Please buy", "I want to buy"),
            (s("items", "array", "products and quantities", (), "{v}", items="object",
               fields=(s("product", "string", "product name", PRODUCTS, "{v}"), s("quantity", "integer", "quantity", range(2, 7), "{v}")),
               forms=("{quantity} {product}", "{quantity} of the {product}")),
             s("address", "object", "where to deliver", (), ("to {v}", "and ship them to {v}"),
               fields=(s("street", "string", "street and number", ("12 Elm Street", "4 Harbour Road", "77 Mill Lane"), "{v}"),
                       s("city", "string", "city", CITIES, "{v}"), s("postcode", "string", "postal code", ("10115", "75001", "M5V 2T6"), "{v}")),
               forms=("{street}, {city} {postcode}", "{street} in {city}, postcode {postcode}")),
             s("express", "boolean", "whether to ship express", (True,), ("by express",), default=False))),
        Api("shop", "get", "order_status", "tells where an existing order is", "place new orders",
            ("Track down my order", "What's the status of order", "Check on order"),
            (s("order_id", "string", "identifier of the order", ("ORD-5521", "ORD-1180", "ORD-7734"), "{v}"),)),
    ),
    (
        Api("mail", "send", "email", "sends an email", "search the inbox",
            ("Send an email", "Drop a line", "Write an email"),
            (s("to", "array", "recipients' addresses", EMAILS, ("to {v}",), items="string", example='["x@y.org"]'),
             s("subject", "string", "subject line", ("Quarterly numbers", "Trip plans", "Lunch on Friday"), ('with the subject "{v}"', 'titled "{v}"')),
             s("cc", "array", "addresses to copy in", EMAILS, ("copying {v}", "cc {v}"), items="string", optional=True))),
        Api("mail", "search", "inbox", "searches received emails", "send emails",
            ("Search my inbox", "Find emails", "Look through my mail"),
            (s("query", "string", "words to search for", ("invoice", "flight", "contract", "birthday"), ('for "{v}"', 'about "{v}"')),
             s("limit", "integer", "maximum number of results", range(2, 21), ("(at most {v})", "showing {v} at most"), default=10))),
    ),
    (
        Api("numbers", "compute", "summary_stats", "computes mean, median, minimum and maximum", "sort numbers",
            ("Compute summary statistics of", "Give me the stats for", "Summarise the numbers"),
            (s("values", "array", "numbers", (3, 8.5, 12, 4.25, 19, 7, 2.5, 15), "{v}", items="number", example="[1, 2]"),
             s("decimals", "integer", "decimal places to round to", range(0, 5), ("rounded to {v} decimals", "to {v} decimal places"), default=2))),
        Api("numbers", "sort", "numbers", "sorts numbers", "compute statistics",
            ("Sort", "Put in order", "Order the numbers"),
            (s("values", "array", "numbers to sort", (14, 3, 27, 9, 41, 6, 18), "{v}", items="integer"),
             s("descending", "boolean", "whether to put the largest first", (True,), ("from largest to smallest", "in descending order"), default=False))),
    ),
    (
        Api("files", "read", "file", "reads a file's text", "delete files",
            ("Read", "Show me the contents of", "Open and print"),
            (s("path", "string", "path of the file", FILES, "{v}"),
             s("max_lines", "integer", "number of lines to return", (10, 20, 50, 100), ("(first {v} lines)", "but only {v} lines"), optional=True),
             s("encoding", "string", "text encoding", ("utf-8", "latin-1"), ("as {v}",), enum=True, default="utf-8"))),
        Api("files", "delete", "files", "deletes files", "read files",
            ("Delete", "Remove the files", "Please get rid of"),
            (s("paths", "array", "paths of the files", FILES, "{v}", items="string"),)),
    ),
    (
        Api("music", "search", "tracks", "searches the music catalogue", "create playlists",
            ("Search for songs", "Find tracks", "Look up music"),
            (s("query", "string", "title or words to look for", ("rain", "harbor", "moon", "road"), ('matching "{v}"', 'called "{v}"')),
             s("limit", "integer", "maximum results", range(2, 11), ("(top {v})", "and show {v}"), default=5))),
        Api("music", "create", "playlist", "creates a playlist from tracks", "search the catalogue",
            ("Create a playlist", "Make me a playlist", "Start a new playlist"),
            (s("title", "string", "name of the playlist", ("Road Trip", "Focus", "Sunday"), ('called "{v}"', 'named "{v}"')),
             s("tracks", "array", "track titles to add", TRACKS, ("with {v}", "holding {v}"), items="string"),
             s("public", "boolean", "whether others can see it", (True,), ("and make it public",), default=False))),
    ),
    (
        Api("geometry", "compute", "box_volume", "computes a box's volume from its dimensions", "compute perimeters",
            ("What is the volume of a box", "Compute the volume of a crate", "How much does a box hold"),
            (s("dimensions", "object", "box's dimensions", (), ("measuring {v}", "with dimensions {v}"),
               fields=(s("length", "number", "length", (12, 30.5, 45, 80), "{v}"), s("width", "number", "width", (8, 20, 25.5, 40), "{v}"),
                       s("height", "number", "height", (5, 10, 15.5, 60), "{v}")),
               forms=("{length} long, {width} wide and {height} high", "length {length}, width {width}, height {height}", "{length} by {width} by {height}")),
             s("unit", "string", "unit of the dimensions", ("cm", "m", "in"), ("in {v}",), enum=True, default="cm"))),
        Api("geometry", "compute", "polygon_perimeter", "adds up a polygon's side lengths", "compute volumes",
            ("What is the perimeter of a polygon with sides", "Compute the perimeter for sides of", "Add up the sides"),
            (s("sides", "array", "side lengths", (3, 4.5, 6, 7, 9.25, 11), "{v}", items="number"),)),
    ),
    (
        Api("kitchen", "find", "recipes", "finds recipes by ingredients", "give nutrition facts",
            ("Find recipes with", "What can I cook with", "Suggest recipes using"),
            (s("ingredients", "array", "ingredients to use", INGREDIENTS, "{v}", items="string", example='["eggs"]'),
             s("max_minutes", "integer", "longest cooking time in minutes", (15, 20, 30, 45), ("in under {v} minutes", "taking at most {v} minutes"), optional=True),
             s("diet", "string", "dietary style", ("vegan", "vegetarian", "any"), ("that are {v}",), enum=True, default="any"))),
        Api("kitchen", "get", "nutrition_facts", "gives the nutrients of a food", "find recipes",
            ("List the calories and nutrients of", "Give me the nutrition facts for", "What nutrients are in"),
            (s("food", "string", "food", INGREDIENTS, "{v}"),
             s("grams", "number", "portion in grams", (50, 100, 150, 250), ("per {v} grams", "for {v} g"), default=100))),
    ),
    (
        Api("rail", "get", "train_times", "lists train departures between two stations", "buy train tickets",
            ("When do trains run", "Show the train times", "List the departures"),
            (s("origin", "string", "departure station", PLACES, "from {v}"),
             s("destination", "string", "arrival station", PLACES[::-1], "to {v}"), _DATE)),
        Api("rail", "buy", "train_ticket", "buys train tickets for passengers", "list train times",
            ("Buy train tickets", "Book a train", "Get me tickets"),
            (s("origin", "string", "departure station", PLACES, "from {v}"),
             s("destination", "string", "arrival station", PLACES[::-1], "to {v}"),
             s("passengers", "array", "passengers", (), ("for {v}",), items="object",
               fields=(s("name", "string", "full name", NAMES, "{v}"), s("age", "integer", "age in years", (8, 15, 34, 52, 71), "{v}")),
               forms=("{name}, aged {age}", "{name} ({age})", "{name} who is {age}")),
             s("seat_class", "string", "travel class", ("first", "second"), ("in {v} class",), enum=True, default="second"))),
    ),
    (
        Api("home", "set", "thermostat", "sets a room's target temperature", "read the sensors",
            ("Set the thermostat", "Change the heating", "Turn the temperature"),
            (s("room", "string", "room", ROOMS, ("in the {v}", "for the {v}")),
             s("celsius", "number", "target temperature in Celsius", (18, 19.5, 21, 22.5), ("to {v} degrees",)))),
        Api("home", "read", "sensors", "reads the rooms' sensors", "change the heating",
            ("Read the sensors", "What do the sensors say", "Check the readings"),
            (s("rooms", "array", "rooms to read", ROOMS, ("in the {v}", "for the {v}"), items="string"),
             s("kinds", "array", "readings to return", ("temperature", "humidity", "co2"), ("for {v}",), items="string",
               enum=True, optional=True))),
    ),
]
# fmt: on
