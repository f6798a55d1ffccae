"""Lenient mail parsing (issue 36 item 3): table tests for encoded words and a mutation fuzz.

`mailparse.parse` is the only code that reads a stranger's bytes in the email suite; it must
never raise, and its record must always have the shape the index checks.
"""

from __future__ import annotations

import json
import random

import pytest

from botpsy.stores import mailindex
from botpsy.stores.mailparse import decode_words, parse, text_of


@pytest.mark.parametrize(
    "raw, text",
    [
        ("=?utf-8?q?Gr=C3=BC=C3=9Fe?=", "Grüße"),
        ("=?utf-8?B?R3LDvMOf?= =?utf-8?B?w6k=?=", "Grüßé"),  # whitespace between words is dropped
        ("=?utf-8?q?Gr=C3?= =?utf-8?q?=BC?=", "Grü"),  # one character split across two words
        ("=?utf-8?B?!!!notbase64===?=", "=?utf-8?B?!!!notbase64===?="),  # kept as written
        ("Re: =?utf-8?B?!!!?= and =?iso-8859-1?q?K=F6ln?=", "Re: =?utf-8?B?!!!?= and Köln"),
        ("=?x-unknown?B?SGk=?=", "Hi"),  # unknown charset: UTF-8, then Latin-1
        ("=?rot13?q?abc?=", "abc"),  # not a text codec: not an error
        ("=?utf-8*en?q?hello_world?=", "hello world"),  # RFC 2231 language, Q underscores
        ("plain =?utf-8?q?x?= text", "plain x text"),
        ("=?utf-8?B?SGk?=", "Hi"),  # missing padding
    ],
)
def test_encoded_words(raw, text):
    assert decode_words(raw) == text


def test_text_of_never_fails():
    assert text_of("é".encode()) == "é"
    assert text_of(b"caf\xe9") == "café"
    assert text_of(b"\x81\x8d", "no-such-charset") == "\x81\x8d"


TEMPLATE = (
    "From: Zoë <zoe@example.org>\nTo: me@localhost, =?utf-8?q?Ann?= <ann@x.org>\n"
    "Subject: =?utf-8?B?R3LDvMOfZQ==?= from Köln\nDate: Mon, 30 Nov 2026 10:00:00 +0100\n"
    "Message-ID: <abc@x>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=XYZ\n\n"
    "--XYZ\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n\n"
    "Sch=C3=B6ne Gr=C3=BC=C3=9Fe\n--XYZ\nContent-Type: application/pdf; name*=utf-8''pl%C3%A4n.pdf\n"
    "Content-Disposition: attachment; filename*=utf-8''pl%C3%A4n.pdf\nContent-Transfer-Encoding: base64\n\n"
    "JVBERi0xLjQ=\n--XYZ--\n"
).encode()
NASTY = [
    b"=?",
    b"?=",
    b"=?utf-8?B?",
    b"\xff",
    b"\x00",
    b"\n\n",
    b"\r",
    b":",
    b";",
    b'"',
    b"<",
    b"--XYZ\n",
    b"*0*=",
]


def test_the_template_parses():
    rec = parse(TEMPLATE, 0.0)
    assert rec["subject"] == "Grüße from Köln" and rec["sender"] == "zoe@example.org"
    assert rec["to"] == ["me@localhost", "ann@x.org"] and rec["body"] == "Schöne Grüße"
    assert rec["attachments"] == ["plän.pdf"]


def test_two_thousand_mutated_messages_never_raise():
    rng = random.Random(36)
    for _ in range(2000):
        data = bytearray(TEMPLATE)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(data))
            op = rng.random()
            if op < 0.4:
                data[at : at + rng.randint(1, 3)] = rng.choice(NASTY)
            elif op < 0.7:
                data[at] = rng.randrange(256)
            else:
                del data[at : at + rng.randint(1, 40)]
        rec = parse(bytes(data), 1_700_000_000.0)
        assert mailindex._valid(json.dumps(rec)) is not None, rec
