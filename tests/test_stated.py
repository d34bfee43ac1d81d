"""`stated.stated_share`: how much of a turn's calls the goal states, read from characters
and numbers only, so it holds in every language; and `decline.calls_invented`, the rule
the tools planner declines by after its first calls."""

from __future__ import annotations

import re

import pytest

from localagent.grammar.parse import ToolCall
from localagent.planners.decline import calls_invented
from localagent.planners.stated import (
    stated_share,
    value_stated,
    without_unstated_options,
    written_numbers,
)
from localagent.tools.from_schema import schema_tool

CONVERT = schema_tool({
    "name": "time_converter",
    "description": "Converts the local time of the user's region to the target region's.",
    "parameters": {"type": "object", "properties": {
        "user_timezone": {"type": "string"}, "target_timezone": {"type": "string"},
        "time": {"type": "string"}}, "required": ["user_timezone", "target_timezone"]},
}).spec
LOOKUP = schema_tool({
    "name": "lawsuits.search",
    "description": "Lawsuits filed against a company.",
    "parameters": {"type": "object", "properties": {
        "company": {"type": "string"}, "start_date": {"type": "string"},
        "status": {"type": "string", "enum": ["ongoing", "settled"]},
        "rate": {"type": "number"}, "detail": {"type": "boolean"},
        "years": {"type": "array", "items": {"type": "integer"}}},
        "required": ["company", "start_date", "status", "rate", "detail", "years"]},
}).spec


def _stated(value: object, goal: str) -> bool:
    return value_stated(value, goal, written_numbers(goal))


@pytest.mark.parametrize(("value", "goal"), [
    ("Google", "Lawsuits against Google filed in 2021?"),
    ("Google", "¿Qué demandas contra Google se presentaron en 2021?"),
    ("Google", "2021年针对Google的诉讼有哪些？"),
    ("The Salt Road", "Wie viele Seiten hat das Buch „The Salt Road“?"),
    (12000, "Ein Auto fährt 12,000 Meilen im Jahr."),
    (0.03, "Un intérêt de 3% par an."),
    (250, "这段路有250公里。"),
    (440, "the duration between notes of 440Hz and 880Hz"),
    (3, "the building's 2nd, 3rd and 4th floors"),
    (3.5, "Es cuesta 3,5 euros."),
    (1000000, "Die Stadt hat 1.000.000 Einwohner."),
    ("Living room", "Which paint color is most popular for living rooms?"),
    ("2021-01-01", "filed after January 1, 2021"),
    ("2021-01-01", "presentadas después del 1 de enero de 2021"),
    # composed in the tool's format, mostly of what the goal names
    ("Berkeley, CA", "I'm thinking about finding a salon in Berkeley"),
    ("Berkeley, CA", "Busco una peluquería en Berkeley."),
    ("track:Dil Nu artist:Maninder Buttar", "Play 'Dil Nu' by Maninder Buttar."),
    ("東京都, JP", "東京都の天気は？"),
    (True, "anything at all"),
    (None, "anything at all"),
])
def test_values_the_goal_writes_count_as_stated_in_any_language(value: object,
                                                                goal: str) -> None:
    assert _stated(value, goal)


@pytest.mark.parametrize(("value", "goal"), [
    ("America/New_York", "What's the population in New York right now?"),
    ("2023-04-15", "Who plays cricket today?"),
    (100, "The price after a 25% discount and 10% tax?"),
    ("oogle", "Lawsuits against Google?"),  # the inside of a word is not a value
    ("French Cuisine", "Which place in Paris is the most famous?"),
    ("CA/Berkeley", "Can you find a salon in Berk?"),  # "CA" only as a whole token
    (7, "这段路有250公里。"),
])
def test_values_the_goal_does_not_write_are_not_stated(value: object, goal: str) -> None:
    assert not _stated(value, goal)


def test_the_share_counts_required_leaves_and_takes_enum_values_from_the_schema() -> None:
    call = ToolCall(LOOKUP.qualified_name, {
        "company": "Google", "start_date": "2021-01-01", "status": "ongoing",
        "rate": 0.05, "detail": False, "years": [2021, 2022]})
    # stated: Google, the date, the enum value, the boolean, 2021; not: 0.05, 2022
    assert stated_share([call], "Lawsuits against Google filed after 1/1/2021?",
                        [LOOKUP]) == pytest.approx(5 / 7)
    invented = ToolCall(CONVERT.qualified_name, {"user_timezone": "America/New_York",
                                                 "target_timezone": "America/New_York",
                                                 "time": "15:30"})  # optional: not counted
    assert stated_share([invented], "What's the population in New York right now?",
                        [CONVERT]) == 0.0
    # no required value, or a function not offered: nothing to judge
    assert stated_share([ToolCall("functions.other", {"x": 1})], "x", [CONVERT]) is None
    assert stated_share([], "x", [CONVERT]) is None


def test_the_share_reads_no_words() -> None:
    """Every letter of the goal outside the values replaced: the share is the same."""
    goal = "Which lawsuits against Google were filed after 1/1/2021, and are they ongoing?"
    call = ToolCall(LOOKUP.qualified_name, {
        "company": "Google", "start_date": "2021-01-01", "status": "settled",
        "rate": 3, "detail": True, "years": [2021]})
    kept = "Google"
    at = goal.index(kept)
    scrambled = (re.sub(r"[A-Za-z]", "q", goal[:at]) + kept
                 + re.sub(r"[A-Za-z]", "q", goal[at + len(kept):]))
    assert stated_share([call], goal, [LOOKUP]) == stated_share([call], scrambled, [LOOKUP])


def test_first_calls_count_as_invented_below_half_or_when_unsure_and_not_all_stated() -> None:
    assert calls_invented(0.99, 0.4)
    assert not calls_invented(0.99, 0.5)
    assert calls_invented(0.6, 0.9) and not calls_invented(0.95, 0.9)
    assert not calls_invented(0.6, 1.0)
    assert not calls_invented(0.31, None)


@pytest.mark.parametrize(("goal", "numbers"), [
    ("12,000 miles at 25 MPG", [12000, 12.0, 25]),
    ("1.000.000 Einwohner", [1000000]),
    ("3,5 € oder 0.25 $", [3.5, 0.25]),
    ("1,234 items", [1234, 1.234]),  # a lone group of three: read both ways
    ("440Hz, the 2nd floor, 250公里, -7", [440, 2, 250, -7]),
    ("from 2021-01-05 on", [2021, 1, 5]),  # a hyphen after a digit is no minus sign
])
def test_written_numbers_read_digits_wherever_they_stand(goal: str,
                                                         numbers: list[float]) -> None:
    assert written_numbers(goal) == numbers


MATCH = schema_tool({
    "name": "sports.match_results",
    "description": "Returns the results of a given match between two teams.",
    "parameters": {"type": "object", "properties": {
        "team1": {"type": "string"}, "team2": {"type": "string"},
        "season": {"type": "string", "description": "Default is the current season."},
        "venue": {"type": "string", "enum": ["home", "away"]},
        "rounds": {"type": "array", "items": {"type": "integer"}}},
        "required": ["team1", "team2"]},
}).spec


def test_optional_values_the_goal_does_not_state_are_left_to_their_default() -> None:
    call = ToolCall(MATCH.qualified_name, {"team1": "Bulls", "team2": "Lakers",
                                           "season": "2023", "venue": "away",
                                           "rounds": [1, 2]})
    goal = "Who won the last match between Bulls and Lakers in rounds 1 and 2?"
    (kept,) = without_unstated_options([call], goal, [MATCH])
    # the made-up season goes; an enum value and stated numbers stay; required args stay
    assert kept.args == {"team1": "Bulls", "team2": "Lakers", "venue": "away",
                         "rounds": [1, 2]}
    (kept,) = without_unstated_options([call], "¿Quién ganó la temporada 2023? Bulls", [MATCH])
    assert kept.args["season"] == "2023" and "rounds" not in kept.args
    other = ToolCall("functions.unknown", {"x": "made up"})
    assert without_unstated_options([other], goal, [MATCH]) == (other,)
