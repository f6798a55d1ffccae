"""Two slips of a small model converted, not refused (protocol.arguments._one_text,
protocol.date_formats): a one-item list where one text is due, and a year-first date where the
parameter declares another date format. Both through the parser and the tool's own check."""

import pytest

from botpsy.protocol.arguments import ToolError, check_arguments, coerce
from botpsy.protocol.date_formats import declared_format, in_declared_format
from botpsy.protocol.formats import parse_completion
from botpsy.tools.registry import all_tools

SEND = {
    "send_email": {
        "type": "object",
        "properties": {
            "to_address": {"type": "string", "description": "The recipient's address."},
            "subject": {"type": "string"},
        },
        "required": ["to_address"],
    }
}


def qwen35_call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"r\n</think>\n\n<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


def test_one_text_in_brackets_is_that_text():
    p = parse_completion(qwen35_call("send_email", to_address='["andy@gorilla.ai"]'), "qwen35", SEND)
    assert p.errors == [] and p.calls[0].arguments == {"to_address": "andy@gorilla.ai"}
    # hermes JSON: an actual list of one
    assert check_arguments("send_email", SEND["send_email"], {"to_address": ["a@b.org"]}) == {
        "to_address": "a@b.org"
    }


@pytest.mark.parametrize(
    "value, kept",
    [
        ('["a@b.org", "c@d.org"]', '["a@b.org", "c@d.org"]'),  # several: which separator is unknown
        ("[home]", "[home]"),  # not JSON: the model's text
        ("[1]", "[1]"),  # a number in brackets is no text
        ('["unclosed"', '["unclosed"'),
        ("a [note] inside", "a [note] inside"),
    ],
)
def test_other_bracketed_text_is_kept_as_written(value, kept):
    assert coerce(value, {"type": "string"}, "f.x") == kept


def test_a_text_parameter_that_speaks_of_json_or_lists_keeps_the_brackets():
    for description in ["Tags as a JSON array.", "A list of recipients, as text.", "The array, encoded."]:
        assert coerce('["a"]', {"type": "string", "description": description}, "f.x") == '["a"]'
    assert coerce('["a"]', {"type": "string", "description": "The listing's title."}, "f.x") == "a"


def test_a_list_of_several_or_of_no_text_is_still_refused_where_text_is_due():
    with pytest.raises(ToolError, match="expected string"):
        coerce(["a", "b"], {"type": "string"}, "f.x")
    with pytest.raises(ToolError, match="expected string"):
        coerce([{"a": 1}], {"type": "string"}, "f.x")
    # and a list parameter keeps its one item as a list
    assert coerce('["a"]', {"type": "array", "items": {"type": "string"}}, "f.x") == ["a"]


def test_one_text_in_brackets_must_still_be_an_allowed_value():
    with pytest.raises(ToolError, match="expected one of"):
        coerce('["purple"]', {"type": "string", "enum": ["red", "blue"]}, "f.x")
    assert coerce('["red"]', {"type": "string", "enum": ["red", "blue"]}, "f.x") == "red"


@pytest.mark.parametrize(
    "description, fmt",
    [
        ("The birth date of the individual. Must be in MM-DD-YYYY format.", "%m-%d-%Y"),
        ("Start of the date range in the format of MM-DD-YYY.", "%m-%d-%Y"),  # BFCL's typo
        ("The departure time, specified in the format of 'dd/mm/yyyy'.", "%d/%m/%Y"),
        ("Date of the concert in 'mm-yyyy' format.", "%m-%Y"),
        ("The date (month-day-year) you want the index for.", "%m-%d-%Y"),
        ("Check-in date for the hotel. Format - DD-MM-YYYY.", "%d-%m-%Y"),
        ("date: YYYY-MM-DD", "%Y-%m-%d"),
        # no format, or not one that can be written without inventing something
        ("The date of the flight. Accepts standard date format e.g., 2022-04-28.", None),
        ("In the format of 'dd/mm/yyyy HH:MM', local time.", None),  # a time too
        ("start: YYYY-MM-DDTHH:MM", None),
        ("Either 'YYYY-MM-DD' or 'MM/DD/YYYY'.", None),  # two formats
        ("The date, M/D/YYYY.", None),  # unpadded: not a strftime code here
        ("Your YYYY-MM-DD-ish token", None),  # part of a longer word
        ("The name of the event.", None),
    ],
)
def test_declared_date_formats_are_read_from_the_description(description, fmt):
    assert declared_format(description) == fmt


@pytest.mark.parametrize(
    "value, description, out",
    [
        ("2023-06-01", "The date, in the format mm-dd-yyyy.", "06-01-2023"),
        ("2022/08/16", "The date (month-day-year).", "08-16-2022"),
        ("2024-03-15", "In the format of 'dd/mm/yyyy'.", "15/03/2024"),
        ("2022-04-20", "In 'mm-yyyy' format.", "04-2022"),
        ("2026-12-7", "date: YYYY-MM-DD", "2026-12-07"),
        # left as written
        ("06/01/2023", "The date, in the format mm-dd-yyyy.", "06/01/2023"),  # not year first
        ("2023-02-30", "The date, in the format mm-dd-yyyy.", "2023-02-30"),  # no such day
        ("2023-06-01T10:00", "The date, in the format mm-dd-yyyy.", "2023-06-01T10:00"),
        ("next Friday", "The date, in the format mm-dd-yyyy.", "next Friday"),
        ("2023-06-01", "The date.", "2023-06-01"),
    ],
)
def test_a_year_first_date_is_written_in_the_declared_format(value, description, out):
    assert in_declared_format(value, description) == out


def test_the_declared_date_format_applies_through_the_parser():
    schemas = {
        "uv_index": {
            "type": "object",
            "properties": {
                "location": {"type": "string"},
                "date": {
                    "type": "string",
                    "description": "The date for the UV index, in the format mm-dd-yyyy.",
                },
            },
            "required": ["location", "date"],
        }
    }
    p = parse_completion(qwen35_call("uv_index", location="Tokyo", date="2023-06-01"), "qwen35", schemas)
    assert p.errors == [] and p.calls[0].arguments == {"location": "Tokyo", "date": "06-01-2023"}


def test_world_tools_keep_their_iso_dates():
    # every world's date parameter declares YYYY-MM-DD (or a date and time): nothing changes there
    for tool in all_tools():
        for name, schema in tool.parameters.get("properties", {}).items():
            if schema.get("type") == "string" and "enum" not in schema:
                assert coerce("2026-12-02", schema, name) == "2026-12-02"
                assert coerce("2026-12-02T07:00", schema, name) == "2026-12-02T07:00"
