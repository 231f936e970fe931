"""The translator's input rules (mini_transformer.number_words.normalize).

The oracle is num2words itself: ``number_words.data.number_words`` spells 0..999 and a sample of
larger numbers; the text of every n < 1,000,000 is composed from those spellings by
string pasting ("<a> thousand", then ", <b>" or " and <b>"), checked against
num2words on the sample. Variants are made from the oracle's text by plain string
edits (case, spaces, hyphens, "and", commas), never by the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

from mini_transformer.number_words.normalize import (
    ACCEPTS, MAX_CHARS, NotANumber, english, normalize, read_number,
)
from mini_transformer.number_words.data import number_words

BELOW_1000 = [en for en, _ in number_words(range(1000))]


def oracle(n: int) -> str:
    a, b = divmod(n, 1000)
    if a == 0:
        return BELOW_1000[b]
    joint = "" if b == 0 else (", " if b >= 100 else " and ") + BELOW_1000[b]
    return BELOW_1000[a] + " thousand" + joint


@pytest.fixture(scope="module")
def sample():
    """Every number below 2,000, every round thousand, one number of every thousand,
    the largest, and 3,000 at random: 5,000 numbers and more, every joint."""
    rng = np.random.default_rng(26)
    numbers = {*range(2000), *range(0, 1_000_000, 1000), 999_999,
               *(a * 1000 + int(rng.integers(1000)) for a in range(1000)),
               *(int(n) for n in rng.integers(0, 1_000_000, 3000))}
    return sorted(numbers)


def test_the_oracle_is_num2words(sample):
    picked = sample[::5] + [1001, 1099, 1100, 101_000, 101_101, 999_999]
    assert [oracle(n) for n in picked] == [en for en, _ in number_words(picked)]


def test_training_forms_are_kept(sample):
    for n in sample:
        text = oracle(n)
        assert english(n) == text and normalize(text) == text, n
        assert read_number(text) == n


def _variants(text, rng):
    """What people type for num2words' text: each change alone, then all at once."""
    spaced = "  ".join(text.split(" "))
    yield text.upper()
    yield text.title()
    yield f"  {text}\t"
    yield spaced
    yield text.replace("-", " ")
    yield text.replace(" and ", " ")
    yield text.replace(",", "")
    yield text.replace(" ", "\u00a0")                     # non-breaking spaces
    loose = text.replace("-", " ").replace(" and ", " ").replace(",", "")
    yield "\n " + "".join(c.upper() if rng.random() < 0.5 else c
                          for c in loose).replace(" ", "   ") + " "


def test_every_way_of_writing_it_reads_as_the_same_number(sample):
    rng = np.random.default_rng(0)
    for n in sample:
        text = oracle(n)
        for typed in _variants(text, rng):
            assert normalize(typed) == text, (n, typed)


def test_the_loosest_form_is_never_ambiguous(sample):
    """With no hyphen, no "and" and no comma, two numbers of the sample never share
    a spelling, and each reads back as its own number."""
    loose = {}
    for n in sample:
        key = oracle(n).replace("-", " ").replace(" and ", " ").replace(",", "")
        assert key not in loose, (n, loose.get(key))
        loose[key] = n
        assert read_number(key) == n


REFUSED = [  # (input, kind, words the message must hold)
    ("", "empty", "the input is empty"),
    ("   \t ", "empty", "the input is empty"),
    ("342", "digits", "\"342\" is written in digits"),
    ("4,005", "digits", "written in digits"),
    ("forty 2", "digits", "written in digits"),
    ("one million", "beyond", "\"one million\" is a million or more"),
    ("Two Millions", "beyond", "a million or more"),
    ("one thousand thousand", "beyond", "a million or more"),
    ("hello world", "word", "\"hello\" is not an English number word"),
    ("dreihundertzweiundvierzig", "word", "\"dreihundertzweiundvierzig\" is not"),
    ("drei hundert", "word", "\"drei\" is not an English number word"),
    ("forty-two!!x", "word", "\"two!!x\" is not an English number word"),
    ("forty\u2015two", "word", "is not an English number word"),   # a bar, no dash
    ("three hundred & two", "word", "\"&\" is not"),
    ("quatre-vingt", "word", "\"quatre\" is not"),
    ("-", "form", "\"-\" is not a number in words"),
    ("forty and two", "form", "\"forty and two\" is not a number in words"),
    ("two two", "form", "not a number in words"),
    ("ten hundred", "form", "not a number in words"),
    ("twelve hundred thousand", "form", "not a number in words"),
    ("twelve hundred and", "form", "not a number in words"),
    ("a", "form", "\"a\" is not a number in words"),
    ("a a hundred", "form", "not a number in words"),
    ("a forty", "form", "not a number in words"),
    ("one thousand a", "form", "not a number in words"),
    (".", "empty", "the input is empty"),
    ("forty\x00two", "not-text", "control characters or bytes that are not text"),
    ("\udc93\udc86", "not-text", "not text (binary data?)"),
    ("\ufffd", "not-text", "not text"),
    ("two-hundred", "form", "not a number in words"),
    ("forty-", "form", "\"forty-\" is not a number in words"),
    ("one hundred and", "form", "not a number in words"),
    ("thousand", "form", "not a number in words"),
    ("zero thousand", "form", "not a number in words"),
    ("and", "form", "not a number in words"),
    ("one, two", "form", "not a number in words"),
    (" ".join(["one"] * 11), "form", "not a number in words"),
    ("x" * MAX_CHARS, "word", "\"" + "x" * 60 + "...\" is not an English"),
    ("a" * 10_000, "too-long", "the input has 10,000 characters, more than the 300"),
    ("forty-two" + " " * MAX_CHARS, "too-long", f"has {MAX_CHARS + 9} characters"),
]


@pytest.mark.parametrize("text, kind, words", REFUSED,
                         ids=[f"{k}:{t[:20]!r}" for t, k, _ in REFUSED])
def test_each_refused_input_gets_its_message(text, kind, words):
    with pytest.raises(NotANumber) as e:
        normalize(text)
    message = str(e.value)
    assert e.value.kind == kind and words in message, message
    assert "\n" not in message and len(message) < 300
    if kind != "too-long":          # the length limit has its own message
        assert message.endswith(ACCEPTS)
    assert isinstance(e.value, ValueError)


def test_the_length_limit_leaves_room_for_every_number():
    """The message's 73: the longest thousands part, " thousand", and the longest
    joint and rest (the lengths add up); the limit keeps room for spaces."""
    rest = max(len(", " if b >= 100 else " and ") + len(BELOW_1000[b])
               for b in range(1, 1000))
    longest = max(len(t) for t in BELOW_1000[1:]) + len(" thousand") + rest
    assert longest == 73 and longest * 4 <= MAX_CHARS
    with pytest.raises(NotANumber, match=f"has {longest} in words"):
        normalize("a" * (MAX_CHARS + 1))
    assert normalize(" " * (MAX_CHARS - 9) + "forty-two") == "forty-two"


def test_everyday_forms_read_as_the_number(sample):
    """"a" for "one" before hundred and thousand, hundreds counted past ten, Unicode
    hyphens and dashes, punctuation at the end: each made from the oracle's text by
    a string edit, each read as the oracle's number."""
    a_forms = {"a hundred": 100, "a thousand": 1000, "a hundred thousand": 100_000,
               "a hundred and five": 105, "a thousand and one": 1001,
               "a thousand, a hundred and one": 1101,
               "A Thousand Two Hundred": 1200, "two thousand, a hundred": 2100}
    for typed, n in a_forms.items():
        assert normalize(typed) == oracle(n), typed
    for n in range(1100, 10_000):
        count, rest = divmod(n, 100)
        if count % 10 == 0:
            continue                  # "twenty hundred" is not how 2,000 is said
        said = BELOW_1000[count] + " hundred" + (f" and {BELOW_1000[rest]}" if rest
                                                 else "")
        assert normalize(said) == oracle(n), said
        assert normalize(said.replace(" and ", " ")) == oracle(n), said
    for n in sample[::7]:
        text = oracle(n)
        for dash in "\u2010\u2011\u2012\u2013\u2014\u2212":
            assert normalize(text.replace("-", dash)) == text, (n, dash)
        for end in (".", "!", "?", " .", "...", ";", ":", ","):
            assert normalize(text + end) == text, (n, end)


@pytest.mark.parametrize("value, what", [(b"forty-two", "bytes (decode the bytes"),
                                         (42, "got int"), (None, "got NoneType"),
                                         (["forty"], "got list")])
def test_what_is_not_text_is_refused_as_what_it_is(value, what):
    with pytest.raises(TypeError, match=r"reads text \(a str\), " + (
            "got " if not what.startswith("got") else "") + what.replace("(", r"\(")):
        normalize(value)
