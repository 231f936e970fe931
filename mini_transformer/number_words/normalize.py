"""What people type, read as the number it names, and written back in the training form.

The model was trained on ``num2words``' English only: small letters, single spaces, a
hyphen between tens and units, "and" after "hundred" and after "thousand" before a
last part below 100, a comma after "thousand" before a last part of 100 or more:

    342     "three hundred and forty-two"
    1001    "one thousand and one"
    12345   "twelve thousand, three hundred and forty-five"

``normalize`` accepts the ways people write the same number and returns that form:
any case; spaces around, repeated, or tabs; "forty two" or "forty-two", the hyphen
also a Unicode hyphen or dash (U+2010 to U+2014, U+2212); with or without "and"
("one hundred one", "one thousand one"); with or without the comma after
"thousand"; "a" for "one" before "hundred" or "thousand" ("a hundred and five",
"a thousand"); hundreds counted past ten ("nineteen hundred and eighty-four",
1,100 to 9,999); a full stop or other punctuation at the end ("forty-two.").
Anything else raises ``NotANumber`` with one line naming what the
translator accepts; its ``kind`` says why: "empty", "too-long" (more than
``MAX_CHARS`` characters, checked first, so that no long input costs time),
"not-text" (control characters or undecodable bytes: binary data), "digits",
"beyond" (a million or more), "word" (a word or sign that is not a number word:
other words, German, "-") and "form" (number words in an order that is no number,
such as "forty and two" or "two hundred hundred"). The in-browser translator
(book/translator.js) applies the same rules, with the same messages.
"""

from __future__ import annotations

import re

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
        "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
        "sixteen", "seventeen", "eighteen", "nineteen"]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty",
        "ninety"]
BEYOND = {"million", "millions", "billion", "billions", "trillion", "trillions"}
MAX_CHARS = 300  # the longest number below a million has 73 characters in words
SPACE = " \t\n\r\f\v\u00a0"  # the spaces between words (the page's too)
DASHES = "\u2010\u2011\u2012\u2013\u2014\u2212"  # read as "-" (the page's too)
TRAILING = ".!?;:,"  # punctuation dropped at the end
ACCEPTS = ("the translator takes English number words from zero to 999,999, such "
           "as \"forty-two\" or \"twelve thousand, three hundred and forty-five\"")


class NotANumber(ValueError):
    """An input the translator refuses; ``kind`` names the reason (module doc)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def english(n: int) -> str:
    """num2words' English for 0 <= n < 1,000,000: the training form."""
    def below_100(m):
        return ONES[m] if m < 20 else TENS[m // 10] + ("-" + ONES[m % 10]
                                                       if m % 10 else "")

    def below_1000(m):
        if m < 100:
            return below_100(m)
        rest = m % 100
        return ONES[m // 100] + " hundred" + (" and " + below_100(rest) if rest else "")

    thousands, rest = divmod(n, 1000)
    if not thousands:
        return below_1000(rest)
    head = below_1000(thousands) + " thousand"
    if not rest:
        return head
    return head + (", " if rest >= 100 else " and ") + below_1000(rest)


def normalize(text: str) -> str:
    """``text`` in the training form (module doc), or NotANumber; TypeError if
    ``text`` is not a str (bytes: decode them first)."""
    return english(read_number(text))


def read_number(text: str) -> int:
    """The number ``text`` names, 0 <= n < 1,000,000, or NotANumber (module doc);
    TypeError if ``text`` is not a str."""
    if not isinstance(text, str):
        hint = " (decode the bytes to a str first)" if isinstance(
            text, (bytes, bytearray)) else ""
        raise TypeError(f"the translator reads text (a str), got "
                        f"{type(text).__name__}{hint}")
    if len(text) > MAX_CHARS:
        raise NotANumber("too-long", f"the input has {len(text):,} characters, more "
                         f"than the {MAX_CHARS} the translator reads (the longest "
                         f"number below a million has 73 in words)")
    if any(_not_text(c) for c in text):
        raise NotANumber("not-text", f"the input holds control characters or bytes "
                         f"that are not text (binary data?): {ACCEPTS}")
    for dash in DASHES:
        text = text.replace(dash, "-")
    spaced = re.sub(f"[{SPACE}]+", " ", text.lower()).strip(" ")
    spaced = spaced.rstrip(TRAILING + " ")
    words = spaced.replace(",", " , ").replace("-", " - ").split(" ")
    words = [w for w in words if w]
    shown = _quoted(spaced)
    if not words:
        raise NotANumber("empty", f"the input is empty: {ACCEPTS}")
    if any(c in "0123456789" for c in text):
        raise NotANumber("digits", f"{shown} is written in digits: {ACCEPTS}")
    if BEYOND & set(words) or words.count("thousand") > 1:
        raise NotANumber("beyond", f"{shown} is a million or more: {ACCEPTS}")
    known = {*ONES, *TENS[2:], "hundred", "thousand", "and", ",", "-", "a"}
    unknown = [w for w in words if w not in known]
    if unknown:
        raise NotANumber("word", f"{_quoted(unknown[0])} is not an English number "
                         f"word: {ACCEPTS}")
    n = _parse(words)
    if n is None:
        raise NotANumber("form", f"{shown} is not a number in words: {ACCEPTS}")
    return n


def _not_text(c):
    """A control character other than a space, a lone surrogate (undecodable bytes
    read with surrogateescape), or the replacement character U+FFFD."""
    code = ord(c)
    return (c not in SPACE and (code < 32 or 127 <= code < 160)) \
        or 0xD800 <= code < 0xE000 or code == 0xFFFD


def _quoted(text):
    """"text" in quotes, cut to 60 characters and "..." if longer than 63."""
    return f"\"{text[:60]}...\"" if len(text) > 63 else f"\"{text}\""


def _parse(words):
    """The number of a list of number words, commas and hyphens, or None:
    number = "zero" | part ["thousand" ["," | "and" | ", and"] part] | part "thousand"
    part = unit "hundred" ["and"] [tens] | unit "hundred" | tens
    tens = 1..19 | ty | ty ["-"] unit"""
    if words == ["zero"]:
        return 0
    hundreds = _hundreds_past_ten(words)
    if hundreds is not None:
        return hundreds
    if words[:2] == ["a", "thousand"]:
        words = ["one", *words[1:]]
    n, i = _part(words, 0)
    if n is None:
        return None
    if i < len(words) and words[i] == "thousand":
        i += 1
        joined = False
        if i < len(words) and words[i] == ",":
            i, joined = i + 1, True
        if i < len(words) and words[i] == "and":
            i, joined = i + 1, True
        rest, i = _part(words, i) if i < len(words) else (None, i)
        if rest is None and joined:
            return None
        n = 1000 * n + (rest or 0)
    return n if i == len(words) else None


def _hundreds_past_ten(words):
    """1,100 ... 9,999 said in hundreds, "nineteen hundred [and] [eighty-four]": the
    number, or None if ``words`` are not that form."""
    count, i = _tens(words, 0)
    if count is None or count < 11 or i >= len(words) or words[i] != "hundred":
        return None
    i += 1
    if i == len(words):
        return 100 * count
    if words[i] == "and":
        i += 1
    rest, i = _tens(words, i)
    return 100 * count + rest if rest is not None and i == len(words) else None


def _part(words, i):
    """(value, next index) of a number 1..999 at words[i], or (None, i)."""
    def at(j):
        return words[j] if j < len(words) else None

    if at(i) == "a" and at(i + 1) == "hundred":
        words = [*words[:i], "one", *words[i + 1:]]
    if at(i) in ONES[1:10] and at(i + 1) == "hundred":
        n, i = 100 * ONES.index(at(i)), i + 2
        if at(i) == "and":
            rest, i = _tens(words, i + 1)
            return (n + rest, i) if rest is not None else (None, i)
        rest, j = _tens(words, i)
        return (n + rest, j) if rest is not None else (n, i)
    return _tens(words, i)


def _tens(words, i):
    """(value, next index) of a number 1..99 at words[i], or (None, i)."""
    w = words[i] if i < len(words) else None
    if w in ONES[1:]:
        return ONES.index(w), i + 1
    if w not in TENS[2:]:
        return None, i
    n, i = 10 * TENS.index(w), i + 1
    hyphen = i < len(words) and words[i] == "-"
    j = i + 1 if hyphen else i
    if j < len(words) and words[j] in ONES[1:10]:
        return n + ONES.index(words[j]), j + 1
    return (None, i) if hyphen else (n, i)
