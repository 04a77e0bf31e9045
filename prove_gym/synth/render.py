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
from typing import TYPE_CHECKING, Any

from prove_gym.server.tool import ToolSpec, enum_choices
from prove_gym.synth.chains import COPY_VERBS, is_secret_kind
from prove_gym.synth.dates import iso_date, iso_datetime, say_iso, spoken_minutes
from prove_gym.synth.enums import enum_values
from prove_gym.synth.grounding import DoneStep
from prove_gym.synth.knowledge import ORDINALS, Knowledge, taken

if TYPE_CHECKING:
    from prove_gym.server.base import Server

SLOT = re.compile(r"\{(\w+)\}")
LOGIN = re.compile(r"^(?:log_?in|sign_?in|authenticate|auth)(?:_|$)")
"""Names of tools that log a user in (and take who they are)."""

OPENERS = ["", "", "Hi! ", "Hello. ", "Could you help me? ", "Please help me with this. "]
FOLLOW_UPS = ["Now ", "Thanks. Now ", "Great. ", "OK, next: ", "One more thing: ", "Also, "]
CONNECTORS = ["Then ", "After that, ", "Next, ", "Once that's done, ", "And then "]
MINIMAL_CONNECTORS = ["Then ", "And "]
QUESTION_CONNECTORS = ["Also, ", "And "]
"""Connectors before a yes/no question: "Also, is it open?", never "Then is it open?"."""
QUESTION_FOLLOW_UPS = ["Great. ", "OK, next: ", "One more thing: ", "Also, "]
"""Follow-ups before a yes/no question: never "Now is it open right now?"."""
AUXILIARIES = frozenset(
    [
        "am",
        "is",
        "are",
        "was",
        "were",
        "do",
        "does",
        "did",
        "can",
        "could",
        "will",
        "would",
        "should",
        "has",
        "have",
        "had",
        "may",
    ]
)
"""First words of a yes/no question."""
SUPPLY = [
    "It's {value}.",
    "The {words} is {value}.",
    "Sorry, I forgot: the {words} is {value}.",
    "Use {value} for the {words}.",
]

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

OWN_OUT_OF_SCOPE = 0.5
"""Share of irrelevant requests drawn from the server's own ``out_of_scope`` requests
(what a user of that server might ask for that no tool does), when it declares some."""


def words(name: str) -> str:
    """``calendar_id`` -> ``calendar id``."""
    return name.replace("_", " ").strip()


def render_value(value: Any) -> str:
    """A value as the user would write it.

    >>> render_value(True), render_value(["a", "b"]), render_value(45)
    ('yes', 'a, b', '45')
    >>> render_value("2026-08-15T17:00") != "2026-08-15T17:00", render_value("2026-08")
    (True, 'August 2026')
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(render_value(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):  # "5 pm on August 15, 2026", "August 2026": never ISO
        said = say_iso(value)
        if said is not None:
            return said
    return str(value)


def said_values(value: Any) -> list[str]:
    """The strings a turn that states ``value`` writes for it (a paraphrase must keep
    them): :func:`literal_values` as the user writes them (:func:`render_value`)."""
    return [render_value(text) for text in literal_values(value)]


STATE_WORDS: dict[str, tuple[str, str]] = {"enabled": ("disabled", "enabled")}
"""Yes-or-no parameters whose value is a state with a word of its own, false first:
"Mark automation aut_001 as disabled"."""


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
    if isinstance(value, bool) and name in STATE_WORDS:  # "as enabled", never "to yes"
        return STATE_WORDS[name][value]
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


def _changed_before(done: Sequence[DoneStep], index: int) -> bool:
    """Whether an earlier write of the conversation names an entity step ``index`` names."""

    def ids(step: DoneStep) -> set[str]:
        return {i for e in step.tool.entity_params.values() for i in taken(step, e.name)}

    mine = ids(done[index])
    return any(d.tool.writes and ids(d) & mine for d in done[:index])


_LISTED = re.compile(
    r"\bthe ("
    + "|".join(ORDINALS)
    + r") ([a-z]+(?: [a-z]+){0,3}) (in those results|from that list)\b"
)


def _one_list_once(text: str) -> str:
    """``text`` naming "those results" once: the next item of the same list is "the second
    one".

    >>> _one_list_once("Move 5 from the first account in those results to the second "
    ...                "account from that list.")
    'Move 5 from the first account in those results to the second one.'
    """
    seen: set[str] = set()

    def once(m: re.Match[str]) -> str:
        if m.group(2) in seen:
            return f"the {m.group(1)} one"
        seen.add(m.group(2))
        return m.group(0)

    return _LISTED.sub(once, text)


def _yes_no_question(text: str) -> bool:
    """Whether ``text`` opens with an auxiliary verb ("Is rst_001 open?", "Does ...")."""
    first = text.split(" ", 1)[0]
    return first.lower() in AUXILIARIES


def _introduces(text: str) -> bool:
    """Whether ``text`` says who the user is rather than asking for something ("I'm
    customer cus_033, my passcode is 001755"): what follows it takes no "After that"."""
    return text.startswith(("I'm ", "I am ", "My name is ", "This is "))


_INTRO = re.compile(r"\bI(?:'m| am)(?: [a-z]{1,12})? ([a-z]{1,12}_[0-9]{1,8})\b")
"""A user saying who they are by id: "I'm usr_020", "I'm customer cus_012"."""


def introduced(texts: Sequence[str]) -> set[str]:
    """The ids the user says are theirs ("I'm usr_020", "I'm customer cus_012").

    >>> sorted(introduced(["Cancel lst_1; I'm usr_020.", "I am customer cus_012, my pin"]))
    ['cus_012', 'usr_020']
    """
    return {m[1] for t in texts for m in _INTRO.finditer(t)}


def logged_in_as(done: Sequence[DoneStep], persona: Iterable[str]) -> set[str]:
    """The ids of a ``persona`` kind the logins among ``done`` named ("Log me in: customer
    cus_035"): who the user is from each login on."""
    kinds = frozenset(persona)
    return {
        str(d.args[n])
        for d in done
        if LOGIN.match(d.tool.name)
        for n, e in d.tool.entity_params.items()
        if e.name in kinds and n in d.args
    }


_MY = re.compile(r"\b[Mm]y\b")
_INTRO_SLOT = re.compile(r"\bI(?:'m| am) \{")
"""A phrasing in which the user says who they are ("Cancel my listing {listing_id}; I'm
{seller_id}"): its "my" is theirs."""


def _says_i_am(phrasing: str, name: str) -> bool:
    """Whether ``phrasing`` has the user say they are ``{name}`` ("I'm {buyer_id}; place a
    bid", "Cancel my listing {listing_id}; I am {seller_id}")."""
    return re.search(r"\bI(?:'m| am) \{" + re.escape(name) + r"\}", phrasing) is not None


_PAIRED = re.compile(r"\{(\w+)\} of \{(\w+)\}")
"""A phrasing's "{quantities} of {product_ids}": counts of items, said pair by pair."""


def _said_once(text: str, earlier: Sequence[str]) -> str:
    """``text`` without the "I'm usr_036" an earlier request of the conversation already said: at
    its start ("I'm usr_036; place a bid", "I'm usr_036 and I want to buy ...") or its end
    ("Cancel my listing lst_0130; I'm usr_036."), as "I'm" or "I am". Not "I'm usr_036"
    twice in one message.

    >>> said = ["Cancel lst_0077; I'm usr_036."]
    >>> _said_once("I'm usr_036; place a bid of 67.50 on lst_0009.", said)
    'Place a bid of 67.50 on lst_0009.'
    >>> _said_once("I'm usr_036 and I want to buy listing lst_0009 at its price.", said)
    'I want to buy listing lst_0009 at its price.'
    >>> _said_once("Cancel my listing lst_0130; I'm usr_036.", ["I'm usr_036: accept ofr_1."])
    'Cancel my listing lst_0130.'
    >>> _said_once("I'm usr_014; place a bid.", ["List my box set in books; I am usr_014."])
    'Place a bid.'
    >>> _said_once("I'm usr_036; place a bid.", ["Cancel lst_0077."])
    "I'm usr_036; place a bid."
    """
    said = introduced(earlier)
    for intro in ("I'm ", "I am "):
        if text.startswith(intro):
            who = text[len(intro) :].split(" ", 1)[0].rstrip(";:,.")
            if not who or who not in said:
                return text
            rest = text[len(intro) + len(who) :]
            for lead in ("; ", ": ", ", ", " and "):
                if rest.startswith(lead):
                    rest = rest[len(lead) :]
                    return rest[:1].upper() + rest[1:] if rest else text
            return text
    for intro in ("; I'm ", "; I am "):
        at = text.rfind(intro)
        if at > 0:
            who = text[at + len(intro) :].rstrip(".")
            if who and " " not in who and who in said:
                return text[:at] + "."
    return text


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
    entity = spec.entity_params.get(name) if spec is not None else None
    if entity is not None and label is not None:  # "the saved" of saved_id: a saved place
        kind = words(entity.name)
        if kind.startswith(label + " "):
            label, phrase = kind, phrase.replace(label, kind, 1)
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
    phrasing has a slot for every required choice. A phrasing with no slot at all
    ("How is my budget doing this month?") is for a call whose values no phrasing
    states: else the values it leaves out follow as sentences that can contradict it.
    """
    props = spec.input_schema().get("properties", {})
    choices = {p.name for p in spec.params if p.required and enum_choices(props.get(p.name, {}))}
    fits = [ph for ph in spec.phrasings if args is None or set(SLOT.findall(ph)) <= set(args)]
    safe = [ph for ph in fits if choices <= set(SLOT.findall(ph))]
    out = safe or fits
    if args:  # "Show my recent trips" only for a call with no value a phrasing can state
        stating = [ph for ph in out if SLOT.search(ph)]
        out = stating or out
        # and a phrasing that states every value over one that leaves some to sentences of
        # their own ("Is ana@x.com free on Monday?", not "Am I free on Monday? Check
        # ana@x.com instead of me.")
        covering = [ph for ph in out if set(args) <= set(SLOT.findall(ph))]
        out = covering or out
    return out


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
    >>> noun_phrase_slot("I want to buy listing {listing_id} now", "listing_id", "listing") is None
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
    named = bool(noun and before and before[-1].lower() == noun.lower())
    if named:  # "buy listing {x}": the noun goes, and no other word names it
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
        if (
            not labels
            or named
            or len(before) < 2
            or before[-2].lower() not in DETERMINERS | PREPOSITIONS
        ):
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


_STATES_UNTIL = frozenset({"valid", "due", "open", "good", "available"})
"""Words that say how long something lasts before the preposition of its date ("valid until
{date}"): left out with the date."""


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
    >>> without_prepositional("Passport {number}, valid until {expiry}.", "expiry")
    'Passport {number}.'
    >>> without_prepositional("Add her, passport {number} valid until {expiry}", "expiry")
    'Add her, passport {number}'
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
    before, comma, last = head.rpartition(", ")
    if comma and " " not in last and "{" not in last:
        head = before  # "number {n}, valid until {date}" goes whole, not to "number {n}, valid"
    elif head.rpartition(" ")[2].lower() in _STATES_UNTIL and "{" in head.rpartition(" ")[0]:
        head = head.rpartition(" ")[0]  # "passport {n} valid until {date}": not "{n} valid."
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


NOT_TO_ONESELF = ("Invite",)
"""Verbs a person does to others only: a phrasing that opens with one and the user's own
id ("Invite {user_id} to {channel_id}" for the signed-in user) is not chosen."""

_FIRST_PERSON = (
    (r"\bdoes \{N\} have\b", "do I have"),
    (r"\{N\}'s\b", "my"),
    (r"\bthe ((?:[a-z-]+ )?[a-z-]+) of \{N\}", r"my \1"),
    (r"\b(List|Show) ((?:[a-z-]+ )?[a-z-]+) of \{N\}", r"\1 my \2"),
    (r"\ba new ([a-z-]+) of \{N\}", r"my new \1"),
    (r"\ba ([a-z-]+) for \{N\}", r"my \1"),
)


def first_person(phrasing: str, name: str) -> str | None:
    """``phrasing`` as the person in slot ``name`` says it of themself, or None where no
    rule reads: "Which cards does {customer_id} have?" -> "Which cards do I have?",
    "Show the balances of {customer_id}" -> "Show my balances". (The patterns run on a
    plugin's phrasings, never on model text.)

    >>> first_person("List beneficiaries of {customer_id}", "customer_id")
    'List my beneficiaries'
    >>> first_person("Add {name} as a payee for {customer_id}", "customer_id")
    'Add {name} as my payee'
    >>> first_person("Transfer to {customer_id}", "customer_id") is None
    True
    """
    slot = re.escape("{" + name + "}")
    for pattern, said in _FIRST_PERSON:
        rule = re.compile(pattern.replace(r"\{N\}", slot))
        if rule.search(phrasing):
            return rule.sub(said, phrasing, count=1)
    return None


PEOPLE = frozenset(
    {
        "buyer",
        "courier",
        "customer",
        "employee",
        "member",
        "participant",
        "seller",
        "traveller",
        "user",
    }
)
"""Last words of entity kinds that are people: nobody's possession in a request."""
PUBLIC = frozenset({"instrument", "flight", "hotel", "place", "restaurant", "airport"})
"""Entity kinds that are the world's, not anyone's: "one of the instruments", never "one of
my instruments"."""


def not_the_users(server: Server, me: Iterable[str] = ()) -> frozenset[str]:
    """Entity kinds a request may not call the user's own ("one of my ..."): people
    (:data:`PEOPLE`: "one of the participants", not "one of my users"), what is the
    world's (:data:`PUBLIC`: "one of the instruments"), and where the
    server knows who the user is (its ``persona`` kinds, or ``me``'s), every other kind
    whose rows no principal owns (``owner=``): a customer's "one of the menu items", a
    banking customer's "one of my cards". Where it does not, the rest is the user's."""
    people = set(server.persona) | set(me)
    return frozenset(
        kind
        for kind, source in server.entities.items()
        if kind.split("_")[-1] in PEOPLE  # a person is nobody's: "one of the participants"
        or kind in PUBLIC  # nor a stock or a flight: "one of the instruments"
        or (people and kind not in people and source.owner is None)
    )


def can_leave_out(spec: ToolSpec, args: Mapping[str, Any], name: str) -> bool:
    """Whether a clarify turn can leave ``name`` out of a request for this call: some
    phrasing has no slot for it, or has one where "one of my events" / "some end date"
    reads as English."""
    phrasings = usable_phrasings(spec, args)
    return any(
        "{" + name + "}" not in ph or _left_out(spec, ph, name) is not None for ph in phrasings
    )


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


def _creates(step: DoneStep, kind: str) -> bool:
    return creates(step.tool, kind)


def filtered_by(done: Sequence[DoneStep], index: int) -> frozenset[str]:
    """The choices (as words) of the fields that filtered the lists step ``index`` of a
    read took its identifiers from: "open", "overdue", "paid", "void" for an invoice from
    ``list_invoices(status="overdue")``. Asking that read whether the invoice is paid asks
    what the user already knows (its status)."""
    step = done[index]
    if step.tool.writes:
        return frozenset()
    out: set[str] = set()
    for producer in sorted(set(step.links.values())):
        source = done[producer]
        if source.tool.writes:
            continue
        props = source.tool.input_schema().get("properties", {})
        for name, value in sorted(source.args.items()):
            choices = enum_values(props.get(name, {}))
            if isinstance(value, str) and value in choices:
                out.update(str(choice_words(source.tool, name, c)).lower() for c in choices)
    return frozenset(out)


def asks_about(phrasing: str, known: Iterable[str]) -> bool:
    """Whether ``phrasing``'s own words (not its slots) name one of ``known``'s choices.

    >>> asks_about("Has invoice {invoice_id} been paid?", {"paid"}), asks_about("Show me invoice {invoice_id}", {"paid"})
    (True, False)
    """
    text = SLOT.sub(" ", phrasing).lower()
    return any(re.search(rf"\b{re.escape(word)}\b", text) for word in known)


def _object_slot(phrasing: str, name: str) -> bool:
    """Whether ``{name}`` stands where "me" reads: right after the phrasing's opening verb
    or after a preposition ("Add {user_id} to ...", "Show the posts of {user_id}"), not
    as a subject ("What has {author_id} posted?") nor before "'s".

    >>> _object_slot("Add {user_id} to {channel_id}", "user_id")
    True
    >>> _object_slot("What has {author_id} posted?", "author_id"), _object_slot("Show {user_id}'s profile", "user_id")
    (False, False)
    """
    slot = "{" + name + "}"
    start = phrasing.find(slot)
    if start < 0 or phrasing[start + len(slot) :].startswith("'"):
        return False
    before = [w for w in phrasing[:start].split() if w.lower() != "please"]
    if not before:
        return False
    return len(before) == 1 or before[-1].lower() in PREPOSITIONS


def _vowel_number(text: str) -> bool:
    """Whether a number said aloud starts with a vowel: "an 8000", "an 11.50", "an 18,500".

    >>> [_vowel_number(t) for t in ("8000", "11.50", "18500", "1100", "45", "180")]
    [True, True, True, False, False, False]
    """
    whole = re.match(r"[0-9][0-9,]{0,20}", text)
    if whole is None:
        return False
    digits = whole.group(0).replace(",", "")
    if digits.startswith("8"):
        return True  # eight, eighty, eight hundred, eight thousand
    # eleven, eighteen; eleven thousand, eighteen thousand (never one hundred and ten)
    return digits[:2] in ("11", "18") and len(digits) in (2, 5, 8)


def _fix_articles(phrasing: str, args: Mapping[str, Any]) -> str:
    """``Add an {method} reminder`` with method "popup" -> ``Add a {method} reminder``."""

    def fix(m: re.Match[str]) -> str:
        value = render_value(args.get(m.group(2), ""))
        vowel = value[:1].lower() in "aeiou" if value[:1] else False
        article = "an" if vowel or _vowel_number(value) else "a"
        if m.group(1)[0].isupper():
            article = article.capitalize()
        return f"{article} {{{m.group(2)}}}"

    return re.sub(r"\b([Aa]n?) \{(\w+)\}", fix, phrasing)


_RANGE = re.compile(r"\b(?:from \{(\w+)\} to|between \{(\w+)\} and) \{(\w+)\}")


def _one_day(
    phrasing: str, args: Mapping[str, Any], refs: Mapping[str, str], omit: str | None
) -> tuple[str, set[str]]:
    """``phrasing`` with a range whose two ends read the same said as one day, and the end
    it no longer names: "List my events from {start_date} to {end_date}" with both
    2026-12-11 reads "List my events on {start_date}", never "from 11 December 2026 to
    11 December 2026" (an inclusive range of one day)."""
    gone: set[str] = set()

    def one(m: re.Match[str]) -> str:
        first, last = m.group(1) or m.group(2), m.group(3)
        if {first, last} & {*refs, omit} or first not in args or last not in args:
            return m.group(0)
        value = args[first]
        if not isinstance(value, str) or iso_date(value) is None or value != args[last]:
            return m.group(0)  # a day only: never "Move 10 on acc_1"
        gone.add(last)
        return f"on {{{first}}}"

    return _RANGE.sub(one, phrasing), gone


def _singular_after_one(phrasing: str, args: Mapping[str, Any], refs: Mapping[str, str]) -> str:
    """``phrasing`` with a regular plural after a slot whose value is 1 made singular:
    "change {order_id} to {quantity} shares" says "to 1 share", "for {nights} nights"
    "for 1 night" ("class", "bus" are no plurals)."""
    for name in SLOT.findall(phrasing):
        if name in refs or name not in args or render_value(args[name]) != "1":
            continue
        phrasing = re.sub(
            r"(\{" + re.escape(name) + r"\} [a-z]{2,})s\b",
            lambda m: m.group(1) if not m.group(1).endswith(("s", "u")) else m.group(0),
            phrasing,
        )
    return phrasing


def _finish(text: str) -> str:
    """``text`` ending as a sentence: a full stop unless it has one (or a quote ends it:
    'saying "Thanks!"').

    >>> _finish("Show it"), _finish('The note is "FYI."'), _finish("Done?")
    ('Show it.', 'The note is "FYI."', 'Done?')
    """
    text = text.strip()
    return text if text.endswith(("?", ".", "!", '."', '?"', '!"')) else text + "."


@dataclass(frozen=True)
class Extra:
    """A gold value the chosen phrasing has no slot for, as :func:`settings_sentence` says it.

    Attributes:
        name: The parameter.
        label: How the user names it (:func:`spoken_name`), None where the name is no noun.
        said: The value as said (:func:`setting`), or the reference to it ("that event").
        referred: ``said`` is a reference to a value an earlier step produced.
        plain: The value alone, unquoted and without the parameter's words ("to" of
            "to ana@example.com"), for a template that says those itself.
        count: The number it states, where it is one (a singular unit: "1 day").
        flag: The value, where it is a yes or no ("recursive": "Make it recursive.").
        whom: The value is the person the conversation serves (a ``persona`` kind): "This
            is for the customer cus_083.", not a filter ("Only for the customer ...").
    """

    name: str
    label: str | None
    said: str
    referred: bool = False
    plain: str = ""
    count: float | None = None
    flag: bool | None = None
    whom: bool = False


def _kept(text: str, keep: Sequence[str]) -> list[str]:
    """The literal values a paraphrase of ``text`` must keep: ``keep`` less a number of
    minutes the text says in another unit (:func:`~prove_gym.synth.dates.spoken_minutes`)."""
    return [k for k in keep if not k.isdigit() or k in text]


def _count(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


SAID_AS: dict[str, str] = {
    "limit": "Show me at most {}.",
    "max_results": "Show me at most {}.",
    "lines": "Show {} line(s).",
    "diff.context": "Show {} line(s) of context.",
    "get_order_book.depth": "Show {} price level(s) on each side.",
    "max_depth": "Go {} level(s) deep.",
    "days": "Cover the last {} day(s).",
    "set_recurrence.count": "Stop after {} occurrence(s).",
    "set_recurrence.interval": "Repeat it at an interval of {}.",
    "replace_in_file.find": "Look for {}.",
    "replace_in_file.replace": "Put {} in its place.",
    "quantity": "I'd like {}.",
    "quantities": "The quantities are {}, in that order.",
    "guests": "It's for {} guest(s).",
    "place_order.tip": "Tip the courier {}.",
    "min_price": "Nothing under {}.",
    "max_price": "Nothing over {}.",
    "min_size": "Only files of at least {} bytes.",
    "radius_m": "Search within {} meters.",
    "speed_kph": "Hold {} km/h.",
    "temperature_c": "Make it {} degrees.",
    "fan_speed": "Put the fan on {}.",
    "story_points": "Estimate it at {} point(s).",
    "delete_lines.end": "Up to line {}.",
    "read_lines.end": "Up to line {}.",
    "sort.field": "Sort by column {}.",
    "sort.separator": 'Columns are separated by "{}".',
    "find.name": 'Only names matching "{}".',
    "query": 'Search for "{}".',
    "search": 'Search for "{}".',
    "start_date": "From {}.",
    "end_date": "Until {}.",
    "date": "On {}.",
    "due_date": "It's due on {}.",
    "close_date": "It should close by {}.",
    "month": "In {}.",
    "duration_minutes": "Make it {} minutes long.",
    "create_webhook_endpoint.events": "Subscribe it to {}.",
    "idempotency_key": "Make it safe to retry with the key {}.",
    "to": "Address it to {}.",
    "update_event.start": "Move it to {}.",
    "cc": "Copy {}.",
    "labels": "Label it with {}.",
    "get_free_busy.email": "Check {} instead of me.",
    "author_id": "Only ones by {}.",
    "get_workflow.issue_id": "Check them against {}.",
    "participant_email": "Only ones with {}.",
}
"""How a user says a value the phrasing has no slot for, by parameter name (the same
names mean the same across servers; ``tool.parameter`` for one tool's own), a sentence
with ``{}`` for the value as said, or the reference to it ("that user"); "(s)" is "s"
unless the number is 1. The names it does not list are said by
:func:`extra_sentence`'s general rule."""
SAID_AS_WRITE: dict[str, str] = {
    "assignee_id": "Assign it to {}.",
    "owner_id": "Have {} own it.",
}
"""As :data:`SAID_AS`, for a write (``assignee_id`` of a new issue: "assign it to ...")."""
SAID_AS_READ: dict[str, str] = {
    "assignee_id": "Only ones assigned to {}.",
    "owner_id": "Only ones owned by {}.",
}
"""As :data:`SAID_AS`, for a read (``assignee_id`` of a search: "only ones assigned to ...")."""
CHANGE_VERBS = frozenset({"change", "edit", "modify", "update"})
"""First words of the names of tools that change fields of what they name: a value
given to one is a change ("change the title to ...")."""


def extra_sentence(spec: ToolSpec, extra: Extra) -> str:
    """One value the phrasing has no slot for, as a sentence of its own: never the
    parameter's name in a template ("Use 8 as the count", "Set the limit to 5").

    A name in :data:`SAID_AS` (or its read/write forms) says it its way ("Show me at
    most 5.", 'Search for "pricing".'); a name that is no noun is a clause of its own
    ("Show hidden.", "Make it 60 minutes before."); an identifier is "the calendar
    cal_01" (or the reference to it) used by a write, or a read's filter ("Only for
    that account."); a field of a tool that changes one is changed ("Change the title
    to ..."), and any other value is "The memo is ...".

    >>> from prove_gym import get_registry
    >>> tool = get_registry().get_tool
    >>> extra_sentence(tool("vehicle.get_trip_log"), Extra("limit", "limit", "5", count=5))
    'Show me at most 5.'
    >>> extra_sentence(tool("retail_chain.list_sales"), Extra("days", "days", "1", count=1))
    'Cover the last 1 day.'
    >>> extra_sentence(tool("email.update_draft"), Extra("to", None, "to a@b.com", plain="a@b.com"))
    'Address it to a@b.com.'
    >>> extra_sentence(tool("budget.search_transactions"), Extra("account_id", "account", "that account", True))
    'Only for that account.'
    >>> extra_sentence(tool("shopping.list_returns"), Extra("customer_id", "customer", "cus_083", whom=True))
    'This is for the customer cus_083.'
    >>> extra_sentence(tool("calendar.create_event"), Extra("calendar_id", "calendar", "cal_01"))
    'Use the calendar cal_01.'
    >>> extra_sentence(tool("calendar.update_event"), Extra("title", "title", '"Design review"'))
    'Change the title to "Design review".'
    >>> extra_sentence(tool("banking.transfer_funds"), Extra("memo", "memo", '"Holiday fund"'))
    'The memo is "Holiday fund".'
    >>> extra_sentence(tool("filesystem.grep"), Extra("recursive", "recursive", "yes", flag=True))
    'Make it recursive.'
    """
    said = extra.said if extra.referred else extra.plain or extra.said
    if not said:  # "" is a value too: a note left empty
        return f"Leave the {extra.label or words(extra.name)} empty."
    template = (
        SAID_AS.get(f"{spec.name}.{extra.name}")
        or (SAID_AS_WRITE if spec.writes else SAID_AS_READ).get(extra.name)
        or SAID_AS.get(extra.name)
    )
    if template is not None:
        singular = extra.count == 1
        text = re.sub(r"\(s\)", "" if singular else "s", template).replace("{}", said)
        return text[:1].upper() + text[1:]
    said = extra.said
    if extra.flag is not None and extra.label is not None:  # never "The recursive is yes."
        return f"Make it {extra.label}." if extra.flag else f"Don't make it {extra.label}."
    if extra.label is None:  # "Make it 60 minutes before.", "Show hidden."
        return _finish(f"Make it {said}" if said[:1].isdigit() else said[:1].upper() + said[1:])
    if extra.name in spec.entity_params:
        named = said if extra.referred else f"the {extra.label} {said}"
        if extra.whom:
            return f"This is for {named}."
        return f"Use {named}." if spec.writes else f"Only for {named}."
    if spec.writes and spec.name.split("_")[0] in CHANGE_VERBS:
        return f"Change the {extra.label} to {said}."
    return f"The {extra.label} is {said}."


def settings_sentence(spec: ToolSpec, extras: Sequence[Extra]) -> str:
    """The values a phrasing has no slot for, a sentence each (:func:`extra_sentence`); a
    quoted value that ends a sentence ends it ('The comment is "Thanks!"', not '... "Thanks!".').
    """
    said = [re.sub(r'([.?!]")\.$', r"\1", extra_sentence(spec, extra)) for extra in extras]
    return " ".join(_joined_filters(said))


def _joined_filters(sentences: Sequence[str]) -> list[str]:
    """Consecutive "Only ..." sentences as one: "Only for that workspace and the channel
    chan_009, and only ones by usr_011.", not a list of one-line orders.

    >>> _joined_filters(["Only for ws_01.", "Only for chan_009.", "Only ones by usr_011."])
    ['Only for ws_01 and chan_009, and only ones by usr_011.']
    >>> _joined_filters(["Only ones by usr_011.", "Make it recursive."])
    ['Only ones by usr_011.', 'Make it recursive.']
    """
    out: list[str] = []
    for sentence in sentences:
        last = out[-1] if out else ""
        filters = (
            sentence.startswith("Only ")
            and sentence.endswith(".")
            and last.startswith("Only ")
            and last.endswith(".")
        )
        if filters and sentence.startswith("Only for ") and " and only " not in last:
            out[-1] = f"{last[:-1]} and {sentence.removeprefix('Only for ')}"
        elif filters:
            out[-1] = f"{last[:-1]}, and only {sentence.removeprefix('Only ')}"
        else:
            out.append(sentence)
    return out


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
        self.knowledge: Knowledge | None = None
        """What the user knows (:meth:`reference`); set once the chain has run."""
        self.unknowable: list[str] = []
        """Ids said (or supplied to a clarify turn) where the user could not know them yet
        (``tool.param``; :meth:`Knowledge.knowable <prove_gym.synth.knowledge.Knowledge.knowable>`):
        the conversation is dropped."""
        self.me: Mapping[str, str] = {}
        """Who the user is, where the server's state fixes it (``Server(me=...)``): ids by
        entity kind; the user says "me (usr_001)" for them, never the bare id."""
        self.persona: frozenset[str] = frozenset()
        """The server's ``persona`` kinds: the person the conversation serves, said as
        "This is for the customer cus_083." where no phrasing has a slot for it."""
        self.not_mine: frozenset[str] = frozenset()
        """Entity kinds the user does not own where the server knows who the user is (its
        ``persona``/``me``): one left out of a request is "one of the menu items", never
        "one of my menu items" (:func:`not_the_users`)."""
        self.self_answered: list[str] = []
        """Reads asked only in words that the filter of the list they come from already
        answers ("Has the first paid invoice been paid?"): the conversation is dropped."""
        self.unphrased: list[str] = []
        """Tools a request asked for although none of their phrasings can state the call's
        values (``{}`` for ``set_climate``, whose phrasings each need one): the
        conversation is dropped, not asked as "Set climate."."""
        self.said_before: list[str] = []
        """The requests of the conversation's earlier turns, as said (:func:`_said_once`)."""
        self.framing: dict[str, bool] = {}
        """How the conversation has spoken of each person it serves so far, by id: ``True``
        where the user said they are them ("I'm usr_017; place a bid"), ``False`` where
        they asked on their behalf ("Buy lst_0041 now for usr_017"). Later requests keep
        the framing: never "for usr_017" and then "I'm usr_017"."""
        self.reframed: list[str] = []
        """Slots (``tool.param``) where no phrasing keeps the :attr:`framing` of who the
        request is for: the conversation is dropped."""
        self.persona_reads: list[str] = []
        """Ids of a ``persona`` kind a read asks about ("How is seller usr_020 rated?",
        "the seller profile of the first user from that list"): the conversation is
        dropped where the user says that id is theirs ("I'm usr_020"; :func:`introduced`)."""
        self.self_named: list[str] = []
        """Slots (``tool.param``) where the user would name themself by id in a place "me"
        does not read ("What has usr_001 posted?"): the conversation is dropped."""

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

        As the conversation's :class:`~prove_gym.synth.knowledge.Knowledge` allows (set
        :attr:`knowledge` before rendering): "the same event" for the one event an earlier
        call took, "the new event" for the one a call made, "that event" for the one a
        result about events showed, "the second account in those results" from the one
        list of accounts, right before. A value the user cannot know then is recorded in
        :attr:`unknowable` (the conversation is dropped).
        """
        knowledge = self.knowledge or Knowledge(
            done, {k: d.segment for k, d in enumerate(done)}, lambda kind, v: True, _creates
        )
        step = done[i]
        entity = step.tool.entity_params[param]
        # "that contact" for a contact's address: whose it is, not "that contact email"
        noun = words(entity.name).removesuffix(" email")
        ref = knowledge.reference(i, param)
        if ref is None:
            return None
        if ref.how == "same":
            return f"the same {noun}"
        if ref.how == "new":
            return f"the new {noun}"
        if ref.how == "that":
            return f"that {noun}"
        if ref.count > 1:
            return f"the first {ref.count} {plural(noun)} in those results"
        # "the first list in those results", never "the first list from that list"
        where = self.rng.choice(
            ["in those results", "from that list"] if noun != "list" else ["in those results"]
        )
        return f"the {ORDINALS[ref.position]} {noun} {where}"

    def _signed_in(self, index: int, done: Sequence[DoneStep]) -> set[str]:
        """Parameters of ``done[index]`` whose value is the person a login earlier in the
        conversation named (a ``persona`` kind: "I'm customer cus_012, my passcode is
        ..."): the user says "my cards", never "the cards of cus_012", after that."""
        step = done[index]
        if LOGIN.match(step.tool.name):
            return set()
        said = logged_in_as(done[:index], self.persona)
        return {
            n
            for n, e in step.tool.entity_params.items()
            if e.name in self.persona and n in step.args and str(step.args[n]) in said
        }

    def _mine(self, spec: ToolSpec, args: Mapping[str, Any], refs: Mapping[str, str]) -> set[str]:
        """Parameters of this call whose value is the user themself (:attr:`me`), said
        as they are (not referred to)."""
        return {
            name
            for name, entity in spec.entity_params.items()
            if name not in refs
            and entity.name in self.me
            and name in args
            and str(args[name]) == self.me[entity.name]
        }

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
            kind = spec.entity_params.get(param)
            if kind is not None and self.me.get(kind.name) == str(args.get(param)):
                continue  # the user is "me (usr_001)", never "the same user"
            ref = self.reference(done, index, param)
            if ref is not None:
                refs[param] = ref
        usable = usable_phrasings(spec, args)
        fits = [ph for ph in usable if omit is None or omit not in SLOT.findall(ph)]
        if omit is not None and not fits:
            fits = [ph for ph in usable if _left_out(spec, ph, omit) is not None]
        yourself = self._mine(spec, args, refs)
        if yourself:  # "Add me (usr_001) to chan_014", not "Invite me (usr_001) to chan_014"
            own = [
                ph
                for ph in fits
                if not any(
                    ph.startswith(f"{verb} {{{n}}}") for verb in NOT_TO_ONESELF for n in yourself
                )
            ]
            fits = own or fits
        # after a login names the customer, the user is them ("my cards"); before, they
        # speak of them
        as_persona = bool(logged_in_as(done[:index], self.persona))
        if self.persona and not as_persona and not LOGIN.match(spec.name):
            # a conversation that names the customer never calls their things "my order"
            # until the user signs in as them ("Where is ord_00615?", not "my order")
            third = [ph for ph in fits if not _MY.search(ph) or _INTRO_SLOT.search(ph)]
            fits = third or fits
        whose = {
            n: str(args[n])
            for n, e in spec.entity_params.items()
            if e.name in self.persona and n in args and n not in refs and n != omit
        }
        if not as_persona and not LOGIN.match(spec.name):
            for n, who in sorted(whose.items()):
                if who in self.framing:  # "I'm usr_017" once said, never "for usr_017"
                    kept = [ph for ph in fits if _says_i_am(ph, n) == self.framing[who]]
                    if not kept:
                        self.reframed.append(f"{spec.name}.{n}")
                    fits = kept or fits
        if not spec.writes and _changed_before(done, index):
            # "Has invoice inv_00281 been paid?" or "what's the status of the same order?"
            # right after voiding or cancelling it: the user knows; a read of what the
            # conversation changed asks to see it ("Show me inv_00281")
            shown = [ph for ph in fits if not ph.rstrip().endswith("?")]
            fits = shown or fits
        known = filtered_by(done, index)
        if known:  # not "has the first paid invoice been paid?": another phrasing, or drop
            fits = [ph for ph in fits if not asks_about(ph, known)]
            if not fits:
                self.self_answered.append(f"{spec.name}:{sorted(known)[0]}")
        if planned in fits:
            phrasing = planned
        elif fits:
            phrasing = self.rng.choice(fits)
        elif usable:
            phrasing = self.rng.choice(usable)
        else:  # "Set climate.", "Schedule payment.": no request people make
            self.unphrased.append(spec.name)
            phrasing = words(spec.name).capitalize()
        if not as_persona and not LOGIN.match(spec.name):
            for n, who in whose.items():
                self.framing.setdefault(who, _says_i_am(phrasing, n))
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
        signed: set[str] = set()  # who the user said they are at a login: "my", "I"
        if LOGIN.match(spec.name):  # "I'm the same customer": nobody learns who they are
            for name in sorted(refs):  # from a lookup; a login states its own id
                if not is_secret_kind(spec.entity_params[name].name):
                    self.self_named.append(f"{spec.name}.{name}")
        for name in sorted(self._signed_in(index, done)):  # "Which cards do I have?"
            first = first_person(phrasing, name) if "{" + name + "}" in phrasing else None
            if first is not None:
                phrasing = first
                refs.pop(name, None)
                signed.add(name)
            elif "{" + name + "}" not in phrasing:
                signed.add(name)  # no "This is for the customer cus_012." after "I'm cus_012"
        mine = self._mine(spec, args, refs)
        for name in sorted(mine):
            if "{" + name + "}" not in phrasing:
                continue
            noun = words(spec.entity_params[name].name).split()[-1]
            fitted = noun_phrase_slot(phrasing, name, noun)  # "Add user {x}": "Add {x}"
            if fitted is not None and _object_slot(fitted, name):
                phrasing = fitted
            else:
                self.self_named.append(f"{spec.name}.{name}")
        if not spec.writes and not LOGIN.match(spec.name):  # "How is seller usr_020 rated?"
            self.persona_reads.extend(
                str(args[name])
                for name, entity in spec.entity_params.items()
                if entity.name in self.persona and name in args and name not in signed
            )
        keep: list[str] = []
        phrasing = _singular_after_one(phrasing, args, refs)
        phrasing, same_day = _one_day(phrasing, args, refs, omit)

        def fill(m: re.Match[str]) -> str:
            name = m.group(1)
            if name == omit:
                entity = spec.entity_params.get(name)
                if entity is not None:
                    # "two of my products" left out: "some of my products", not "one of"
                    many = isinstance(args.get(name), list) and len(args[name]) > 1
                    # "one of my calendars", but "one of the menu items": a restaurant's,
                    # not the customer's own
                    own = entity.name not in self.not_mine and (as_persona or not self.persona)
                    whose = "my" if own else "the"
                    return f"{'some' if many else 'one'} of {whose} {plural(words(entity.name))}"
                return f"some {words(name)}"
            if name in refs:
                return refs[name]
            if name in mine:  # "Add me (usr_001) to chan_004", never "Add usr_001 to ..."
                keep.extend(said_values(args[name]))
                return f"me ({render_value(args[name])})"
            value = choice_words(spec, name, args[name])
            keep.extend(said_values(value))
            return render_value(value)

        phrasing, paired = self._paired(phrasing, args, refs, keep, omit)
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
        if self.knowledge is not None:  # every id said (or supplied) must be one the user knows
            for name, kind in spec.entity_params.items():
                if (
                    name in args
                    and name not in refs
                    and not is_secret_kind(kind.name)
                    and not self.knowledge.knowable(index, name)
                ):
                    self.unknowable.append(f"{spec.name}.{name}")
        slots = set(SLOT.findall(phrasing)) | paired
        extras: list[Extra] = []
        for name, value in args.items():
            if name in slots or name == omit or name in signed or name in same_day:
                continue
            entity = spec.entity_params.get(name)
            if name in refs:
                if entity is not None and is_secret_kind(entity.name):
                    continue  # the user never handles credentials a tool issued
                named = spoken_name(name)[0] or _label(name)
                extras.append(Extra(name, named, refs[name], referred=True))
                continue
            keep.extend(said_values(choice_words(spec, name, value)))
            if name in mine:  # "Only ones by me (usr_001)."
                named = spoken_name(name)[0] or _label(name)
                extras.append(Extra(name, named, f"me ({render_value(value)})", referred=True))
                continue
            label, said = setting(name, value, spec)
            plain = render_value(choice_words(spec, name, value))
            flag = value if isinstance(value, bool) else None
            whom = entity is not None and entity.name in self.persona
            extras.append(
                Extra(name, label, said, plain=plain, count=_count(value), flag=flag, whom=whom)
            )
        if extras:
            body = text.rstrip()
            end = body[-1] if body and body[-1] in "?.!" else "."
            body = body[:-1] if body and body[-1] in "?.!" else body
            text = f"{body}{end} {settings_sentence(spec, extras)}"
        text = spoken_minutes(text)  # "a day before", never "1440 minutes before"
        text = _one_list_once(text)
        return _finish(text), _kept(text, keep)

    @staticmethod
    def _paired(
        phrasing: str,
        args: Mapping[str, Any],
        refs: Mapping[str, str],
        keep: list[str],
        omit: str | None,
    ) -> tuple[str, set[str]]:
        """``phrasing`` with a "{counts} of {items}" pair of lists of one length over one
        said item by item ("sell 2 of prd_0013 and 1 of prd_0001", not "sell 2, 1 of
        prd_0013, prd_0001"), and the two parameters it said."""
        for m in _PAIRED.finditer(phrasing):
            counts, items = args.get(m[1]), args.get(m[2])
            if (
                not isinstance(counts, list)
                or not isinstance(items, list)
                or len(counts) != len(items)
                or len(items) < 2
                or {m[1], m[2]} & {*refs, omit}
            ):
                continue
            pairs = [
                f"{render_value(c)} of {render_value(i)}"
                for c, i in zip(counts, items, strict=True)
            ]
            keep.extend(v for value in (counts, items) for v in said_values(value))
            said = ", ".join(pairs[:-1]) + " and " + pairs[-1]
            return phrasing.replace(m[0], said.replace("{", "(").replace("}", ")"), 1), {m[1], m[2]}
        return phrasing, set()

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
        raw: list[str] = []  # each step's words before a connector
        keep: list[str] = []
        for i, idx in enumerate(idxs):
            missing = omit[1] if omit is not None and omit[0] == idx else None
            text, stated = self.phrase(idx, done, planned=planned.get(idx), omit=missing)
            text = _said_once(text, raw + self.said_before)  # "I'm usr_009" once a conversation
            said = text
            keep.extend(stated)
            if i > 0:
                if _yes_no_question(text):
                    choices = QUESTION_CONNECTORS
                elif style == "minimal":
                    choices = MINIMAL_CONNECTORS
                else:
                    choices = CONNECTORS
                conn = self.rng.choice(choices)
                if not (_introduces(text) or _introduces(raw[-1])):
                    text = conn + _lower_first(text)
            raw.append(said)
            parts.append(text)
        self.said_before.extend(raw)
        body = " ".join(parts)
        if style == "complete":
            if first:
                openers = OPENERS
            else:
                plain = _yes_no_question(body) or _introduces(body)  # not "Now is ...?"
                openers = QUESTION_FOLLOW_UPS if plain else FOLLOW_UPS
            opener = self.rng.choice(openers)
            if opener:
                body = opener + (
                    _lower_first(body) if opener.endswith(("Now ", "Also, ", ": ")) else body
                )
        return RenderedTurn(body, keep)

    def supply(self, name: str, value: Any, spec: ToolSpec | None = None) -> RenderedTurn:
        """The user's answer to a clarifying question: the missing value of ``spec``'s
        parameter ``name``."""
        label, said = setting(name, value, spec)
        if spec is not None and (
            f"{spec.name}.{name}" in SAID_AS or name in SAID_AS
        ):  # 'Search for "Walter".', never "The query is Walter."
            plain = render_value(choice_words(spec, name, value))
            text = spoken_minutes(
                extra_sentence(spec, Extra(name, label, said, plain=plain, count=_count(value)))
            )
            if self.rng.random() < 0.5:
                text = "Sorry, I forgot: " + _lower_first(text)
            return RenderedTurn(text, _kept(text, said_values(choice_words(spec, name, value))))
        if label is None:  # "It's 60 minutes before.", "Move open issues to spr_020."
            template = self.rng.choice(
                SUPPLY[:1]
                if said.startswith(render_value(value))
                else ["{value}.", "Sorry, I forgot: {value}."]
            )
        else:
            template = self.rng.choice(SUPPLY)
        text = spoken_minutes(template.format(value=said, words=label))
        if isinstance(value, list) or name.endswith("_ids"):  # "The options are opt_0143."
            text = text.replace(f"The {label} is ", f"The {label} are ")
        text = text[0].upper() + text[1:]
        return RenderedTurn(text, _kept(text, said_values(choice_words(spec, name, value))))

    def irrelevant(self, own: Sequence[str] = (), extra: Iterable[str] = ()) -> RenderedTurn:
        """A request no offered tool can serve: half the time one a user of the task's
        server might make (``own``: its ``out_of_scope``), else a general question or
        another server's request (``extra``)."""
        if own and self.rng.random() < OWN_OUT_OF_SCOPE:
            return RenderedTurn(self.rng.choice(own))
        pool = list(IRRELEVANT) + list(extra)
        return RenderedTurn(self.rng.choice(pool))


def fillable_phrasings(specs: Iterable[ToolSpec]) -> list[tuple[ToolSpec, str]]:
    """The phrasings of ``specs`` that :func:`foreign_requests` can fill, in order.

    Only phrasings whose slots can be filled from list ``examples`` (no identifiers,
    no state-dependent values) qualify, so a request names nothing that does not exist;
    and only those of two words or more (not "popd", a command, as a request).
    Worked out once per server (it reads every phrasing of every other server).
    """
    out = []
    for spec in specs:
        entities = spec.entity_params
        for ph in spec.phrasings:
            slots = SLOT.findall(ph)
            if len(ph.split()) >= 2 and all(
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
