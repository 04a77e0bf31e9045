"""User turns in natural language, rendered from the tools' ``phrasings``.

A request joins one phrase per step of its turn. A phrase is one of the tool's
phrasings (varied by seed) with its ``{param}`` slots filled: a value the user
states is written out verbatim; an identifier that an earlier step produced is
referred to ("that event", "the first account in those results"). Gold
arguments the phrasing has no slot for are stated after it ("(calendar id:
cal_01)"), so every gold value is either in the user's words or in an earlier
tool result.

Information levels (paper: 60/20/20):

- ``complete``: a fuller phrasing, sometimes with optional values, polite openers.
- ``minimal``: the tersest phrasing (fewest optional slots), required values only,
  no openers.
- ``missing``: like complete, but one required value the user would have to give
  is left out; that turn is a ``clarify`` turn (the right move is to ask), and
  the next user turn supplies the value and carries the gold calls.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from prove_gym.server.tool import ToolSpec, enum_choices
from prove_gym.synth.chains import is_secret_kind
from prove_gym.synth.dates import iso_datetime, say_datetime
from prove_gym.synth.enums import enum_values
from prove_gym.synth.grounding import DoneStep

SLOT = re.compile(r"\{(\w+)\}")

OPENERS = ["", "", "Hi! ", "Hello. ", "Could you help me? ", "Please help me with this. "]
FOLLOW_UPS = ["Now ", "Thanks. Now ", "Great. ", "OK, next: ", "One more thing: ", "Also, "]
CONNECTORS = ["Then ", "After that, ", "Next, ", "Once that's done, ", "And then "]
MINIMAL_CONNECTORS = ["Then ", "And "]
SUPPLY = [
    "It's {value}.",
    "The {words} is {value}.",
    "Sorry, I forgot: the {words} is {value}.",
    "Use {value} for the {words}.",
]
ORDINALS = ["first", "second", "third", "fourth", "fifth"]

IRRELEVANT = [
    "What's the capital of Australia?",
    "Can you write me a haiku about autumn leaves?",
    "Tell me a joke about programmers.",
    "How many ounces are in a pound?",
    "Who painted the Mona Lisa?",
    "Translate 'thank you very much' into Japanese.",
    "Recommend a good science-fiction novel.",
    "What's a good name for a golden retriever puppy?",
    "Explain photosynthesis in one sentence.",
    "How tall is Mount Everest?",
    "What rhymes with 'orange'?",
    "Give me three tips for sleeping better.",
    "What is the boiling point of water at sea level in Fahrenheit?",
    "Who wrote 'Pride and Prejudice'?",
    "Suggest a vegetarian dinner idea.",
    "What's the difference between weather and climate?",
    "Can you summarise the plot of Hamlet in two sentences?",
    "How do I say 'good morning' in Portuguese?",
    "What year did the first person walk on the Moon?",
    "Write a two-line birthday message for my aunt.",
    "Is a tomato a fruit or a vegetable?",
    "What's the square root of 144?",
    "Give me a fun fact about octopuses.",
    "Which planet is closest to the Sun?",
]


def words(name: str) -> str:
    """``calendar_id`` -> ``calendar id``."""
    return name.replace("_", " ").strip()


def render_value(value: Any) -> str:
    """A value as the user would write it.

    >>> render_value(True), render_value(["a", "b"]), render_value(45)
    ('yes', 'a, b', '45')
    >>> render_value("2026-08-15T17:00") != "2026-08-15T17:00"
    True
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(render_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        when = iso_datetime(value)
        if when is not None:  # "5 pm on August 15, 2026", never "2026-08-15T17:00"
            return say_datetime(when)
    return str(value)


def said_values(value: Any) -> list[str]:
    """The strings a turn that states ``value`` writes for it (a paraphrase must keep
    them): :func:`literal_values` as the user writes them (:func:`render_value`)."""
    return [render_value(text) for text in literal_values(value)]


def choice_words(spec: ToolSpec | None, name: str, value: Any) -> Any:
    """``value`` with each snake_case choice of parameter ``name`` (an enum value, or an
    array item's) as words: a user says "in progress", "like new", "want to go", never
    "in_progress". Other values (identifiers, paths) as they are; the text check takes
    the words for the token (:func:`prove_gym.synth.validate.text_problems`).

    >>> from prove_gym import get_registry
    >>> spec = get_registry().get_tool("issue_tracker.transition_issue")
    >>> choice_words(spec, "to_status", "in_progress"), choice_words(spec, "issue_id", "iss_1")
    ('in progress', 'iss_1')
    """
    if spec is None or not isinstance(value, str | list):
        return value
    choices = set(enum_values(spec.input_schema().get("properties", {}).get(name, {})))
    if not choices:
        return value

    def one(v: Any) -> Any:
        return v.replace("_", " ") if isinstance(v, str) and "_" in v and v in choices else v

    return [one(v) for v in value] if isinstance(value, list) else one(value)


def literal_values(value: Any) -> list[str]:
    """The strings that must appear verbatim wherever a stated value is written."""
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, list):
        return [s for v in value for s in literal_values(v)]
    if isinstance(value, dict):
        return []
    return [str(value)]


def _lower_first(text: str) -> str:
    """Lower-case a sentence's first letter after a connector ("Then find ..."), not "I"."""
    if re.match(r"I\b", text) or len(text) < 2 or not text[0].isupper() or text[1].isupper():
        return text
    return text[0].lower() + text[1:]


def _starts_a_sentence(spec: ToolSpec, name: str, refs: Mapping[str, str]) -> bool:
    """Whether a phrasing that opens with ``{name}`` opens with a word to capitalise: a
    reference ("that traveller renewed ...") or a choice ("{action} the follow request"),
    not an identifier, a path or a command ("ls -l ...") the user types as it is."""
    if name in refs:
        return True
    return bool(enum_choices(spec.input_schema().get("properties", {}).get(name, {})))


def plural(noun: str) -> str:
    """The plural of a (last) English noun: ``category`` -> ``categories``, ``box`` -> ``boxes``.

    >>> [plural(w) for w in ("event", "category", "address", "day", "match")]
    ['events', 'categories', 'addresses', 'days', 'matches']
    """
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def _label(name: str) -> str:
    """How a user names a parameter: ``calendar_id`` -> ``calendar``, ``max_price`` -> ``max price``."""
    text = words(name)
    for suffix in (" ids", " id"):
        if text.endswith(suffix) and len(text) > len(suffix):
            head = text[: -len(suffix)]
            return (
                " ".join([*head.split()[:-1], plural(head.split()[-1])])
                if suffix == " ids"
                else head
            )
    return text


def setting(name: str, value: Any, spec: ToolSpec | None = None) -> tuple[str | None, str]:
    """``(label, phrase)``: how a user names parameter ``name`` and says ``value`` of it
    (:func:`spoken_name`). Where the name is no noun, the label is None and the phrase
    a clause of its own: "60 minutes before", "show hidden" (a flag set), "don't show
    hidden" (cleared).

    >>> setting("duration_minutes", 90), setting("title", "Design review")
    (('duration', '90 minutes'), ('title', '"Design review"'))
    >>> setting("show_hidden", True), setting("show_hidden", False), setting("open_now", False)
    ((None, 'show hidden'), (None, "don't show hidden"), (None, 'not open now'))
    """
    label, phrase = spoken_name(name)
    if isinstance(value, bool) and label is None:
        flag = phrase.replace("{}", "").strip()
        if value:
            return None, flag
        verb = flag.split(" ", 1)[0] in _NOT_A_NOUN_FIRST - PREPOSITIONS - {"no", "open"}
        return None, ("don't " if verb else "not ") + flag
    shown = render_value(choice_words(spec, name, value))
    if isinstance(value, str) and " " in value:
        shown = f'"{value}"'
    return label, phrase.replace("{}", shown)


def _and(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) < 2:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def usable_phrasings(spec: ToolSpec, args: Mapping[str, Any] | None = None) -> list[str]:
    """Phrasings that can state a call with these arguments (``None``: any arguments).

    A phrasing's slots must all have values. A phrasing with no slot for a
    required choice (an enum: ``to_status``, ``action``) usually implies one
    ("Start working on {issue_id}" means in_progress), so it is used only when no
    phrasing has a slot for every required choice.
    """
    props = spec.input_schema().get("properties", {})
    choices = {p.name for p in spec.params if p.required and enum_choices(props.get(p.name, {}))}
    fits = [ph for ph in spec.phrasings if args is None or set(SLOT.findall(ph)) <= set(args)]
    safe = [ph for ph in fits if choices <= set(SLOT.findall(ph))]
    return safe or fits


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Where a noun phrase ("the same event", "one of my events", "some end date") reads as
# English in place of a slot: after the phrasing's opening verb, or after one of these.
PREPOSITIONS = _word_set(
    "about after against as at before between by for from in into near of on onto over "
    "per than through to toward towards under until via with within without"
)
NOUN_PHRASE_AFTER = PREPOSITIONS | _word_set(
    "am are be been can could did do does had has have i'm is may me must should us was "
    "were will would and but if or so that then which"
)
DETERMINERS = _word_set("a an its my our the their this your")
# The first words of a reference or an omission: "the same user", "that user", "one of my
# users", "some end date".
_REFERRING = _word_set("the that one some")


# A unit written last (or first) in a parameter's name, and how it follows a value:
# ``duration_minutes`` is "the duration", 90 of it "90 minutes"; ``speed_kph`` "0 km/h".
NAME_UNITS = {
    "c": "°C",
    "days": "days",
    "f": "°F",
    "gb": "GB",
    "hours": "hours",
    "kb": "KB",
    "km": "km",
    "kph": "km/h",
    "m": "m",
    "mb": "MB",
    "minutes": "minutes",
    "mph": "mph",
    "ms": "ms",
    "pct": "%",
    "percent": "%",
    "seconds": "seconds",
}
# A parameter name does not read as English when it ends in a unit or a particle, starts
# with a verb or a preposition, or has a one-letter word (see unreadable_name).
_NOT_A_NOUN_LAST = PREPOSITIONS | _word_set(
    "% c days degrees f h hour hours k kelvin km km/h kph min mins minute minutes mph percent "
    "seconds all before after first kb mb gb ms me now only out usd w"
)
_NOT_A_NOUN_FIRST = PREPOSITIONS | _word_set(
    "allow check ignore include make move no open replace reply show skip sort"
)


def unreadable_name(name: str) -> bool:
    """Whether a parameter name with ``_`` reads as a machine name, not as English, after
    "the" (identifiers, "the calendar id", are left alone).

    >>> [unreadable_name(n) for n in ("duration_minutes", "to_currency", "temperature_c")]
    [True, True, True]
    >>> [unreadable_name(n) for n in ("start_date", "first_name", "calendar_id", "limit")]
    [False, False, False, False]
    """
    parts = name.lower().split("_")
    if len(parts) < 2 or parts[-1] in ("id", "ids"):
        return False
    return (
        parts[-1] in _NOT_A_NOUN_LAST
        or parts[0] in _NOT_A_NOUN_FIRST
        or any(len(p) == 1 for p in parts)
    )


def spoken_name(name: str) -> tuple[str | None, str]:
    """How a user names a parameter, and how they say a value of it.

    ``(label, phrase)``: "Set the {label} to {phrase}", with ``{}`` in the phrase for the
    value. A unit last in the name goes after the value ("duration_minutes": "the
    duration", "90 minutes"); a preposition first says which end ("to_currency": "the
    target currency"); a verb and its particle is a noun ("check_in": "the check-in").
    The label is None where the name is no noun a user would say
    (:func:`unreadable_name`): the phrase then says it all ("minutes_before": "60
    minutes before", "move_open_issues_to": "move open issues to spr_020",
    "show_hidden": a flag, "show hidden").

    >>> [spoken_name(n) for n in ("calendar_id", "duration_minutes", "to_currency", "check_in")]
    [('calendar', '{}'), ('duration', '{} minutes'), ('target currency', '{}'), ('check-in', '{}')]
    >>> spoken_name("new_flight_id")  # "the new flight" is one an earlier call made
    ('replacement flight', '{}')
    >>> [spoken_name(n) for n in ("minutes_before", "move_open_issues_to", "open_percent", "to")]
    [(None, '{} minutes before'), (None, 'move open issues to {}'), (None, 'open {}%'), (None, 'to {}')]
    """
    parts = name.lower().split("_")
    if len(parts) < 2:  # "to": "To ana@example.com.", not "Set the to to ana@example.com"
        return (None, f"{parts[0]} {{}}") if parts[0] in PREPOSITIONS else (parts[0], "{}")
    if parts[-1] in ("id", "ids"):  # "calendar_id": the calendar
        parts = _label(name).split()
        if parts[0] == "new" and len(parts) > 1:  # "the new flight" is one a call made
            parts[0] = "replacement"
    elif parts[0] in ("days", "hours", "minutes", "seconds"):  # "minutes_before"
        return None, " ".join(["{}", NAME_UNITS[parts[0]], *parts[1:]])
    value = "{}"
    if parts[-1] in NAME_UNITS:
        unit = NAME_UNITS[parts.pop()]
        value += unit if unit in ("%", "°C", "°F") else " " + unit
    if len(parts) == 2 and parts[1] in ("in", "out", "up", "off"):
        parts = [f"{parts[0]}-{parts[1]}"]  # "check_in": the check-in
    elif parts[0] in ("to", "from") and len(parts) > 1:
        parts[0] = "target" if parts[0] == "to" else "source"
    if unreadable_name("_".join(parts)) or (len(parts) == 1 and parts[0] in _NOT_A_NOUN_FIRST):
        return None, " ".join([*parts, value])
    return " ".join(parts), value


def noun_phrase_slot(
    phrasing: str,
    name: str,
    noun: str | None = None,
    *,
    labels: bool = True,
    omission: bool = False,
) -> str | None:
    """``phrasing`` with ``{name}`` where a noun phrase can fill it, or None where none can.

    A reference ("the same order") or an omission ("one of my orders", "some end date")
    brings its own determiner and noun, so the words that named the value go: the
    entity's ``noun`` ("order {order_id}", "the {label_id} label"), a determiner ("my {order_id}"), and (with
    ``labels``) a label the phrasing put before the slot ("to trip {itinerary_id}", "the
    ticket {booking_id}"). None when what stays before it is not a preposition, an auxiliary
    or the phrasing's opening verb ("sell {quantity} {symbol}", "Could you {action}"),
    when the slot is glued to text ("{duration_minutes}-minute", "'{text}'"), and for
    an ``omission`` also when a noun follows it ("the {position} door", "the
    {recurring_id} bill"), before "'s" (not "one of my customers's cart"), where the
    user says who they are ("I'm {customer_id}": not "I'm one of my customers"), and after
    "is" ("my passcode is {passcode}": not "my passcode is some passcode").

    >>> noun_phrase_slot("Where is my order {order_id}?", "order_id", "order")
    'Where is {order_id}?'
    >>> noun_phrase_slot("Add flight {flight_id} to trip {itinerary_id}", "itinerary_id")
    'Add flight {flight_id} to {itinerary_id}'
    >>> noun_phrase_slot("Sell {quantity} {symbol}", "symbol") is None
    True
    """
    slot = "{" + name + "}"
    start = phrasing.find(slot)
    if start < 0:
        return None
    end = start + len(slot)
    rest = phrasing[end:]
    if noun and rest[: len(noun) + 1].lower() == " " + noun.lower():
        after_noun = rest[len(noun) + 1 : len(noun) + 2]
        if not after_noun or not (after_noun.isalnum() or after_noun == "_"):
            rest = rest[len(noun) + 1 :]  # "the {label_id} label": the reference names it
    if (start and phrasing[start - 1] != " ") or not (
        rest[:1] in ("", " ", ",", ".", "?", "!", ":", ";", ")")
        or (not omission and rest.startswith("'s "))
    ):
        return None
    before = phrasing[:start].split()
    if noun and before and before[-1].lower() == noun.lower():
        before.pop()
    while before and before[-1].lower() in DETERMINERS:
        before.pop()

    def reads(words_before: list[str]) -> bool:
        if not words_before:
            return True
        last = words_before[-1]
        if last.startswith("{") or last.endswith(("'", '"')):
            return False
        if omission and (last.endswith(":") or last.lower() in ("i'm", "am", "is", "are")):
            return False
        # the phrasing's opening verb: "Cancel {order_id}", "Please cancel {order_id}"
        verb = 1 + (words_before[0].lower() == "please")
        if len(words_before) == verb and last.lower() != "please":
            return True
        return last.endswith((",", ":", ";")) or last.lower() in NOUN_PHRASE_AFTER

    if not reads(before):
        # a label after a determiner or a preposition: "to trip {x}", "the ticket {x}"
        if not labels or len(before) < 2 or before[-2].lower() not in DETERMINERS | PREPOSITIONS:
            return None
        before.pop()
        while before and before[-1].lower() in DETERMINERS:
            before.pop()
        if not reads(before):
            return None
    if omission:
        # "some end date" then a preposition, a conjunction or punctuation; not a noun,
        # another value ("add some first name {last_name}") or "a month"
        following = rest.split()[0].lower() if rest.split() else ""
        word = following[:1].isalnum() or following.startswith("{")
        if word and following not in NOUN_PHRASE_AFTER:
            return None
    return " ".join(before) + (" " if before else "") + slot + rest


# Units a phrasing writes after a number ("{speed_kph} km/h", "{minutes_before} minutes",
# "{position}%", "a {duration_minutes}-minute slot"): a measure a user can leave unsaid.
UNITS = _word_set(
    "% c days degrees f h hour hours k kelvin km km/h kph min mins minute minutes mph percent "
    "seconds"
)
# The preposition that leads to a measure and goes with it: "change the speed [to 80 km/h]".
_MEASURE_LEAD = _word_set("at by for to")


def without_measure(phrasing: str, name: str) -> str | None:
    """``phrasing`` with the measure ``{name}`` and its unit left unsaid, or None where the
    slot is not followed by a unit.

    Someone who leaves a number out of a request drops its unit and the preposition
    leading to it too: they do not say "some speed kph km/h".

    >>> without_measure("Drive at {speed_kph} km/h", "speed_kph")
    'Drive'
    >>> without_measure("Remind me {minutes_before} minutes before {event_id}", "minutes_before")
    'Remind me before {event_id}'
    >>> without_measure("Find me a free {duration_minutes}-minute slot on {date}", "duration_minutes")
    'Find me a free slot on {date}'
    >>> without_measure("Set {blind_id} to {position}%", "position")
    'Set {blind_id}'
    >>> without_measure("Open the {position} door", "position") is None
    True
    """
    slot = "{" + name + "}"
    start = phrasing.find(slot)
    if start < 0 or (start and phrasing[start - 1] != " "):
        return None
    end = start + len(slot)
    rest = phrasing[end:]
    if rest.startswith("%"):
        rest = rest[1:]
    elif rest.startswith("-") and rest[1:].split(" ", 1)[0].lower() in UNITS:
        rest = rest[1:].split(" ", 1)[1] if " " in rest[1:] else ""
        return phrasing[:start] + rest  # "a {n}-minute slot": an adjective, no preposition
    elif rest.startswith(" ") and rest[1:].split(" ", 1)[0].rstrip(",.?!)").lower() in UNITS:
        unit = rest[1:].split(" ", 1)[0].rstrip(",.?!)")
        rest = rest[1 + len(unit) :]
    else:
        return None
    before = phrasing[:start].rstrip()
    lead = before.rsplit(" ", 1)
    if len(lead) == 2 and lead[1].lower() in _MEASURE_LEAD:
        before = lead[0]
    if not before or before.lower() == "please":
        return None  # nothing of the request would be left
    return before + rest


# Prepositions that open a range: leaving one end out leaves "from ... to ..." half said.
_RANGE_LEAD = _word_set("between from than")


def without_prepositional(phrasing: str, name: str) -> str | None:
    """``phrasing`` with ``{name}`` and the preposition that leads to it left unsaid, or
    None where that does not leave a request that reads.

    What a user leaves out of "Find flights to {destination} on {date}" is the whole
    "on {date}", not the date alone ("on some date"). Only where the slot follows a
    preposition and ends the sentence or comes before another preposition ("to {x} on
    {y}"), never one end of a range ("from {start} to {end}"), and where at least two
    words of the request stay before it.

    >>> without_prepositional("When am I free for {minutes} minutes on {date}?", "date")
    'When am I free for {minutes} minutes?'
    >>> without_prepositional("Find flights from {origin} to {destination} on {date}", "destination")
    'Find flights from {origin} on {date}'
    >>> without_prepositional("List my events from {start} to {end}", "start") is None
    True
    >>> without_prepositional("touch {path}", "path") is None
    True
    """
    slot = "{" + name + "}"
    start = phrasing.find(slot)
    if start < 0 or (start and phrasing[start - 1] != " "):
        return None
    rest = phrasing[start + len(slot) :]
    following = rest.split(" ", 2)[1].lower() if rest.startswith(" ") else ""
    if not (rest[:1] in ("", ".", "?", "!") or following in PREPOSITIONS):
        return None
    head, _, lead = phrasing[:start].rstrip().rpartition(" ")
    if lead.lower() not in PREPOSITIONS or lead.lower() in _RANGE_LEAD:
        return None
    if len([w for w in head.split() if w.lower() != "please"]) < 2:
        return None
    return head + rest


def _left_out(spec: ToolSpec, phrasing: str, name: str) -> str | None:
    """``phrasing`` ready to leave ``{name}`` out: an identifier as "one of my events", a
    measure with its unit unsaid (:func:`without_measure`), another value with the
    preposition leading to it (:func:`without_prepositional`); never "some end date".

    None when that cannot read as English there (:func:`noun_phrase_slot`). A choice
    (an enum) is never left out of its slot: "Put the car in {gear}" without it is no
    request.
    """
    entity = spec.entity_params.get(name)
    if entity is not None:
        noun = words(entity.name).split()[-1]
        return noun_phrase_slot(phrasing, name, noun, omission=True)
    prop = spec.input_schema().get("properties", {}).get(name, {})
    if prop.get("type") in ("integer", "number"):
        unsaid = without_measure(phrasing, name)
        if unsaid is not None:
            return unsaid
    if enum_values(prop):  # one choice or a list of them
        return None
    return without_prepositional(phrasing, name)


def can_leave_out(spec: ToolSpec, args: Mapping[str, Any], name: str) -> bool:
    """Whether a clarify turn can leave ``name`` out of a request for this call: some
    phrasing has no slot for it, or has one where "one of my events" / "some end date"
    reads as English."""
    phrasings = usable_phrasings(spec, args)
    return any(
        "{" + name + "}" not in ph or _left_out(spec, ph, name) is not None for ph in phrasings
    )


COPY_VERBS = frozenset({"clone", "copy", "cp", "duplicate", "fork", "forward", "reply"})
"""First words of the names of tools that make a new entity of the kind they take."""
UNDO_VERBS = frozenset(
    {"cancel", "close", "delete", "detach", "end", "leave", "remove", "rm", "rmdir"}
)
"""First words of the names of tools that end what they name (as do ``un...`` ones)."""


def creates(spec: ToolSpec, kind: str) -> bool:
    """Whether a successful call of ``spec`` made a new entity of ``kind``: it writes,
    returns that kind and names it (``create_event``, ``book_flight`` for a flight
    booking; not ``add_to_cart``, which returns the restaurant of the cart), ends
    nothing (not ``remove_coupon``, ``unfollow_user``), without
    taking one (not ``create_account``, which takes the owner it returns) unless it
    copies one (a reply to a message is a message). Only then is it "the new {kind}".

    >>> from prove_gym import get_registry
    >>> tool = get_registry().get_tool
    >>> creates(tool("calendar.create_event"), "event"), creates(tool("crm.create_account"), "owner")
    (True, False)
    >>> creates(tool("food_delivery.add_to_cart"), "restaurant"), creates(tool("shopping.remove_coupon"), "coupon")
    (False, False)
    """
    takes = {e.name for e in spec.entity_params.values()}
    named = spec.name.split("_")
    return (
        spec.writes
        and kind in spec.returns
        and not (named[0] in UNDO_VERBS or named[0].startswith("un"))
        and bool(set(kind.split("_")) & set(named))
        and (kind not in takes or named[0] in COPY_VERBS)
    )


def _mentions(step: DoneStep, kind: str, *, produced: bool = True) -> set[str]:
    """Identifiers of ``kind`` a step names in its arguments (and, by default, its result)."""
    out: set[str] = set()
    for name, entity in step.tool.entity_params.items():
        if entity.name == kind and name in step.args:
            value = step.args[name]
            out.update(str(v) for v in (value if isinstance(value, list) else [value]))
    if produced:
        out.update(str(v) for v in step.produced.get(kind, []))
    return out


def _fix_articles(phrasing: str, args: Mapping[str, Any]) -> str:
    """``Add an {method} reminder`` with method "popup" -> ``Add a {method} reminder``."""

    def fix(m: re.Match[str]) -> str:
        value = render_value(args.get(m.group(2), ""))
        article = "an" if value[:1].lower() in "aeiou" and value[:1] else "a"
        if m.group(1)[0].isupper():
            article = article.capitalize()
        return f"{article} {{{m.group(2)}}}"

    return re.sub(r"\b([Aa]n?) \{(\w+)\}", fix, phrasing)


def _finish(text: str) -> str:
    text = text.strip()
    return text if text.endswith(("?", ".", "!")) else text + "."


@dataclass
class RenderedTurn:
    """A user turn's text and the literal values it states (a paraphrase must keep them)."""

    text: str
    keep: list[str] = field(default_factory=list)


class Renderer:
    """Renders the requests of one conversation.

    Args:
        rng: The conversation's random generator.
        level: ``complete`` or ``minimal`` (``missing`` renders as complete).
    """

    def __init__(self, rng: random.Random, level: str) -> None:
        self.rng = rng
        self.level = "minimal" if level == "minimal" else "complete"

    # ------------------------------------------------------------ phrasing
    def plan_phrasing(self, spec: ToolSpec) -> str | None:
        """Choose a phrasing before grounding (its optional slots become wanted values)."""
        phrasings = usable_phrasings(spec)
        if not phrasings:
            return None
        if self.level == "minimal":
            required = set(spec.required)

            def cost(ph: str) -> tuple[int, int]:
                slots = set(SLOT.findall(ph))
                return (len(slots - required), len(slots))

            best = min(cost(ph) for ph in phrasings)
            return self.rng.choice([ph for ph in phrasings if cost(ph) == best])
        return self.rng.choice(phrasings)

    def extra_optionals(self, spec: ToolSpec, phrasing: str | None) -> set[str]:
        """Optional values to include: the phrasing's slots, and at complete level a few more.

        A phrasing without slots states a fixed intent ("refuel the car to full"), so
        it gets no extra values that could contradict it.
        """
        slots = set(SLOT.findall(phrasing or ""))
        extra = {s for s in slots if s not in spec.required}
        if self.level == "complete" and slots:
            for p in spec.params:
                if p.required or p.entity is not None or p.name in extra:
                    continue
                if (p.name in spec.examples or p.name in spec.values) and self.rng.random() < 0.25:
                    extra.add(p.name)
        return extra

    # -------------------------------------------------------------- phrases
    def reference(self, done: Sequence[DoneStep], i: int, param: str) -> str | None:
        """How the user refers to a value an earlier step produced, or None to state it.

        A reference is used only when it is unambiguous: no step between the producer
        and ``done[i]`` mentions another entity of that kind. "the same event" when the
        producer acted on that entity itself, "the new event" when a write created it,
        "that event" when a read found just one, "the second account in those
        results" when the immediately preceding step listed several.
        """
        step = done[i]
        j = step.links[param]
        producer = done[j]
        entity = step.tool.entity_params[param]
        kind, noun = entity.name, words(entity.name)
        value = step.args[param]
        values = [str(v) for v in (value if isinstance(value, list) else [value])]
        for k in range(j + 1, i):
            if _mentions(done[k], kind) - set(values):
                return None
        took = set(values) <= _mentions(producer, kind, produced=False)
        produced = [str(v) for v in producer.produced.get(kind, [])]
        if took:
            return f"the same {noun}"
        if len(produced) == 1 and values == produced:
            return f"the new {noun}" if creates(producer.tool, kind) else f"that {noun}"
        if j != i - 1:
            return None  # "those results" would point at a later step
        if len(values) > 1 and values == produced[: len(values)]:
            return f"the first {len(values)} {plural(noun)} in those results"
        if len(values) == 1 and values[0] in produced:
            n = produced.index(values[0])
            if n < len(ORDINALS):
                where = self.rng.choice(["in those results", "from that list"])
                return f"the {ORDINALS[n]} {noun} {where}"
        return None

    def phrase(
        self,
        index: int,
        done: Sequence[DoneStep],
        *,
        planned: str | None,
        omit: str | None = None,
    ) -> tuple[str, list[str]]:
        """One step as a phrase, and the literal values it states.

        Args:
            index: The step's position in ``done``.
            done: All steps of the conversation (producers of linked values).
            planned: The phrasing chosen before grounding, used when it still fits.
            omit: A parameter whose value the user leaves out (clarify turns).
        """
        step = done[index]
        spec = step.tool
        args = step.args
        refs: dict[str, str] = {}
        for param in step.links:
            ref = self.reference(done, index, param)
            if ref is not None:
                refs[param] = ref
        usable = usable_phrasings(spec, args)
        fits = [ph for ph in usable if omit is None or omit not in SLOT.findall(ph)]
        if omit is not None and not fits:
            fits = [ph for ph in usable if _left_out(spec, ph, omit) is not None]
        if planned in fits:
            phrasing = planned
        elif fits:
            phrasing = self.rng.choice(fits)
        else:
            phrasing = self.rng.choice(usable) if usable else f"{words(spec.name).capitalize()}"
        for name in sorted(refs):
            if "{" + name + "}" not in phrasing:
                continue
            # a reference brings its own article and noun: not "my the first order", not
            # "guest of event that event", not "the same label label"
            noun = words(spec.entity_params[name].name).split()[-1]
            fitted = noun_phrase_slot(phrasing, name, noun)
            if fitted is None:
                del refs[name]  # no noun phrase reads there ("sell 10 {symbol}"): say it
            else:
                phrasing = fitted
        if omit is not None and "{" + omit + "}" in phrasing:
            phrasing = _left_out(spec, phrasing, omit) or phrasing
        phrasing = _fix_articles(phrasing, args)
        keep: list[str] = []

        def fill(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == omit:
                entity = spec.entity_params.get(name)
                if entity is not None:
                    return f"one of my {plural(words(entity.name))}"
                return f"some {words(name)}"
            if name in refs:
                return refs[name]
            value = choice_words(spec, name, args[name])
            keep.extend(said_values(value))
            return render_value(value)

        text = SLOT.sub(fill, phrasing)
        for name in SLOT.findall(phrasing):  # "on {when}": "at 5 pm on August 15, 2026"
            value = args.get(name)
            if name not in refs and isinstance(value, str) and iso_datetime(value) is not None:
                said = render_value(value)
                text = text.replace(f" on {said}", f" at {said}")
        opening = SLOT.match(phrasing)
        if opening is not None and (
            opening.group(1) == omit or _starts_a_sentence(spec, opening.group(1), refs)
        ):  # "Approve the request", "That traveller ...", "One of my couriers ..."
            text = text[:1].upper() + text[1:]
        slots = set(SLOT.findall(phrasing))
        extras: list[tuple[str | None, str]] = []
        for name, value in args.items():
            if name in slots or name == omit:
                continue
            entity = spec.entity_params.get(name)
            if name in refs:
                if entity is not None and is_secret_kind(entity.name):
                    continue  # the user never handles credentials a tool issued
                extras.append((spoken_name(name)[0] or _label(name), refs[name]))
                continue
            keep.extend(said_values(choice_words(spec, name, value)))
            extras.append(setting(name, value, spec))
        if extras:
            body = text.rstrip()
            end = body[-1] if body and body[-1] in "?.!" else "."
            body = body[:-1] if body and body[-1] in "?.!" else body
            text = f"{body}{end} {self._settings(extras)}"
        return _finish(text), keep

    def _settings(self, pairs: Sequence[tuple[str | None, str]]) -> str:
        """Values the phrasing has no slot for, as one sentence of their own (a value
        whose name is no noun, :func:`setting`, as a sentence of its own before it).

        >>> Renderer(random.Random(0), "complete")._settings([("limit", "5"), ("status", "open")])
        'Use 5 as the limit and open as the status.'
        >>> Renderer(random.Random(0), "complete")._settings([(None, "show hidden")])
        'Show hidden.'
        >>> Renderer(random.Random(0), "complete")._settings([("category", "that category")])
        'Use that category.'
        """
        clauses = [value for label, value in pairs if label is None]
        if clauses:
            named = [(label, value) for label, value in pairs if label is not None]
            # "Make it 60 minutes before.", "Move open issues to spr_020.", "Show hidden."
            said = " ".join(
                _finish(f"Make it {c}" if c[:1].isdigit() else c[:1].upper() + c[1:])
                for c in clauses
            )
            return f"{said} {self._settings(named)}" if named else said
        labelled = [(label, value) for label, value in pairs if label is not None]
        pairs = labelled
        # "Use the same category", not "Use the same category as the category"; "Use that
        # category", not "Set the category to that category"
        said_alone = [
            (label, value)
            for label, value in pairs
            if value.startswith("the same ") or value == f"that {label}"
        ]
        same = [value for _label, value in said_alone]
        if same:
            rest = [pair for pair in pairs if pair not in said_alone]
            kept = f"Use {_and(same)}."
            return f"{kept} {self._settings(rest)}" if rest else kept
        style = self.rng.randrange(3)
        if style == 0:
            parts = [f"the {label} to {value}" for label, value in pairs]
            return f"Set {_and(parts)}."
        if style == 1:
            parts = [f"{value} as the {label}" for label, value in pairs]
            return f"Use {_and(parts)}."
        (label, value), others = pairs[0], pairs[1:]
        # "the author usr_003", but "the author should be that user", not "the author that user"
        parts = [f"the {label} should be {value}"] + [
            f"the {lb} should be {v}" if v.split(" ", 1)[0] in _REFERRING else f"the {lb} {v}"
            for lb, v in others
        ]
        text = _and(parts)
        return text[0].upper() + text[1:] + "."

    def request(
        self,
        idxs: Sequence[int],
        done: Sequence[DoneStep],
        planned: Mapping[int, str | None],
        *,
        first: bool,
        omit: tuple[int, str] | None = None,
        level: str | None = None,
    ) -> RenderedTurn:
        """A whole user turn asking for the steps ``done[i]`` for ``i`` in ``idxs``.

        Args:
            idxs: Indices of the turn's steps in ``done``.
            done: Every step of the conversation.
            planned: Phrasing chosen before grounding, by step index.
            first: The conversation's first turn (openers differ).
            omit: ``(step index, parameter)`` left out of a clarify turn.
            level: Style override (``complete`` / ``minimal``).
        """
        style = level or self.level
        parts: list[str] = []
        keep: list[str] = []
        for i, idx in enumerate(idxs):
            missing = omit[1] if omit is not None and omit[0] == idx else None
            text, stated = self.phrase(idx, done, planned=planned.get(idx), omit=missing)
            keep.extend(stated)
            if i > 0:
                conn = self.rng.choice(MINIMAL_CONNECTORS if style == "minimal" else CONNECTORS)
                text = conn + _lower_first(text)
            parts.append(text)
        body = " ".join(parts)
        if style == "complete":
            opener = self.rng.choice(OPENERS if first else FOLLOW_UPS)
            if opener:
                body = opener + (
                    _lower_first(body) if opener.endswith(("Now ", "Also, ", ": ")) else body
                )
        return RenderedTurn(body, keep)

    def supply(self, name: str, value: Any, spec: ToolSpec | None = None) -> RenderedTurn:
        """The user's answer to a clarifying question: the missing value of ``spec``'s
        parameter ``name``."""
        label, said = setting(name, value, spec)
        if label is None:  # "It's 60 minutes before.", "Move open issues to spr_020."
            template = self.rng.choice(
                SUPPLY[:1]
                if said.startswith(render_value(value))
                else ["{value}.", "Sorry, I forgot: {value}."]
            )
        else:
            template = self.rng.choice(SUPPLY)
        text = template.format(value=said, words=label)
        return RenderedTurn(
            text[0].upper() + text[1:], said_values(choice_words(spec, name, value))
        )

    def irrelevant(self, extra: Iterable[str] = ()) -> RenderedTurn:
        """A request no offered tool can serve (generic, or another server's phrasing)."""
        pool = list(IRRELEVANT) + list(extra)
        return RenderedTurn(self.rng.choice(pool))


def fillable_phrasings(specs: Iterable[ToolSpec]) -> list[tuple[ToolSpec, str]]:
    """The phrasings of ``specs`` that :func:`foreign_requests` can fill, in order.

    Only phrasings whose slots can be filled from list ``examples`` (no identifiers,
    no state-dependent values) qualify, so a request names nothing that does not exist.
    Worked out once per server (it reads every phrasing of every other server).
    """
    out = []
    for spec in specs:
        entities = spec.entity_params
        for ph in spec.phrasings:
            slots = SLOT.findall(ph)
            if all(
                s not in entities
                and isinstance(spec.examples.get(s), list | tuple)
                and spec.examples.get(s)
                for s in slots
            ):
                out.append((spec, ph))
    return out


def foreign_requests(
    fillable: Iterable[tuple[ToolSpec, str]], rng: random.Random, limit: int = 6
) -> list[str]:
    """Requests written from other servers' phrasings, for tools the task does not offer.

    ``fillable`` is what :func:`fillable_phrasings` returns for those tools.
    """
    out: list[str] = []
    candidates = list(fillable)
    rng.shuffle(candidates)
    for spec, ph in candidates[:limit]:

        def fill(m: re.Match[str], s: ToolSpec = spec) -> str:
            pool = s.examples[m.group(1)]
            assert isinstance(pool, list | tuple)  # candidates only have list examples
            return render_value(choice_words(s, m.group(1), rng.choice(list(pool))))

        text = SLOT.sub(fill, ph)
        out.append(_finish(text))
    return out
