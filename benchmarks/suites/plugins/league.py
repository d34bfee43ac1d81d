"""League: the table of a six-team football league (generalisation suite).

Data (team: points, wins, goals scored): Falcons: 61, 18, 57; Wolves: 55, 16, 49;
Otters: 48, 13, 52; Herons: 42, 12, 38; Lynx: 37, 10, 41; Badgers: 29, 7, 30.
No two teams have the same points, so TopTeam never has to break a tie.
"""

from __future__ import annotations

from typing import Annotated, Literal

from localagent.tools.decorator import tool

Team = Literal["Falcons", "Wolves", "Otters", "Herons", "Lynx", "Badgers"]

TABLE: dict[str, tuple[int, int, int]] = {
    "Falcons": (61, 18, 57),
    "Wolves": (55, 16, 49),
    "Otters": (48, 13, 52),
    "Herons": (42, 12, 38),
    "Lynx": (37, 10, 41),
    "Badgers": (29, 7, 30),
}

TeamArg = Annotated[Team, "The team's name, e.g. Falcons."]


def _team(name: str) -> tuple[int, int, int]:
    if name not in TABLE:
        raise ValueError(f"no team named {name!r}; known teams: {', '.join(TABLE)}")
    return TABLE[name]


class League:
    """The league table: points, wins and goals scored of each team."""

    @tool(name="GetPoints")
    def get_points(self, team: TeamArg) -> int:
        """Get the number of points a team has in the league."""
        return _team(team)[0]

    @tool(name="GetWins")
    def get_wins(self, team: TeamArg) -> int:
        """Get the number of matches a team has won."""
        return _team(team)[1]

    @tool(name="GetGoals")
    def get_goals(self, team: TeamArg) -> int:
        """Get the number of goals a team has scored."""
        return _team(team)[2]

    @tool(name="TopTeam")
    def top_team(
        self,
        team_a: Annotated[Team, "The first team."],
        team_b: Annotated[Team, "The second team."],
    ) -> Team:
        """Of two teams, get the name of the one with more points."""
        return team_a if _team(team_a)[0] >= _team(team_b)[0] else team_b
