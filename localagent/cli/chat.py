"""`localagent chat`: one goal per line over a warm agent, in one conversation.

The model, the tool index and llama.cpp's prompt cache stay loaded between goals, so the
second question skips the start-up and re-reads only the part of the prompt that changed.
Lines starting with `/` are commands (`/help` lists them); every other line is a goal,
run as `localagent run` would run it. A goal that gets no answer prints one error line and
the session goes on; bad input to a command does the same. Reads stdin, so it works on a
terminal (with line editing and a history file under $LOCALAGENT_HOME) and piped.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from localagent.cli import app
from localagent.cli.common import console, err_console, handle_errors
from localagent.cli.run import (
    DRY_RUN_OPT,
    EXAMPLES_OPT,
    EXCLUDE_OPT,
    EXCLUDE_PLUGIN_OPT,
    INCLUDE_OPT,
    MAX_ITERATIONS_OPT,
    MAX_TOOLS_OPT,
    MCP_OPT,
    MODEL_OPT,
    OUTPUT_SCHEMA_OPT,
    PLANNER_OPT,
    PLUGINS_OPT,
    TECHNIQUES_OPT,
    THREADS_OPT,
    THRESHOLD_OPT,
    YES_OPT,
    _agent,
    _filter,
    _LiveView,
    _print_result,
    _settings,
    read_output_schema,
)
from localagent.conversation import Conversation
from localagent.errors import LocalAgentError, UsageError

_HELP = """Ask goals one per line; the model stays loaded between them.

Each goal is planned after the earlier ones (their goals, calls, results and answers),
so a line may refer to the one before ("and in miles?"); /new starts afresh.

Commands: /new, /planner NAME, /model NAME_OR_PATH, /tools [GOAL], /help, /quit (or end
of input). Example:

    printf 'What is 2 plus 3?\\n/planner react\\nWhat is 7 times 6?\\n' | localagent chat
"""

COMMANDS = {
    "/new": "start a new conversation (the next goal is planned alone)",
    "/planner NAME": "plan the next goals with NAME (sequential, tree, react, tools)",
    "/model NAME_OR_PATH": "load another model (catalog name or .gguf path)",
    "/tools [GOAL]": "list the offered functions (for GOAL: those the filter keeps)",
    "/help": "this list",
    "/quit": "end the session (so does end of input)",
}


@dataclass
class ChatSession:
    """The state a chat keeps between lines: the agent (and so the loaded model), the
    planner and how to make a new agent when the model changes."""

    make_agent: Callable[[str | None], Any]  # model name or path -> Agent
    planner: str
    model: str | None
    max_iterations: int
    agent: Any = field(init=False)
    conversation: Conversation = field(default_factory=Conversation)
    output_type: Any = None  # every answer written as this type (--output-schema)

    def __post_init__(self) -> None:
        self.agent = self.make_agent(self.model)

    def command(self, line: str) -> bool:
        """Run one `/command`; False when the session should end."""
        from localagent.agent import PLANNERS

        name, _, arg = line.strip().partition(" ")
        arg = arg.strip()
        if name in ("/quit", "/exit"):
            return False
        if name == "/new":
            self.conversation.clear()
            console.print("new conversation", highlight=False)
        elif name == "/help":
            for usage, what in COMMANDS.items():
                console.print(f"  {usage:<22} {what}", highlight=False, markup=False)
        elif name == "/planner":
            if arg not in PLANNERS:
                raise UsageError(f"/planner takes one of {', '.join(PLANNERS)}, not {arg!r}")
            self.planner = arg
            console.print(f"planner: {arg}", highlight=False)
        elif name == "/model":
            if not arg:
                raise UsageError("/model takes a catalog name or a .gguf path")
            agent = self.make_agent(arg)
            try:
                loaded = agent.llm.info.name  # load now: a bad name fails here, the old one stays
            except BaseException:
                agent.close()  # its MCP servers
                raise
            old, self.agent, self.model = self.agent, agent, arg
            old.close()
            console.print(f"model: {loaded}", highlight=False)
        elif name == "/tools":
            specs = self.agent.tools_for(arg) if arg else self.agent.registry.specs()
            console.print(f"{len(specs)} functions: "
                          + ", ".join(s.qualified_name for s in specs), highlight=False)
        else:
            raise UsageError(f"unknown command {name!r}; /help lists them")
        return True

    def goal(self, goal: str) -> bool:
        """Run one goal and print its steps and answer; whether it was answered."""
        result = self.agent.run(goal, planner=self.planner,
                                max_iterations=self.max_iterations, on_event=_LiveView(),
                                conversation=self.conversation,
                                output_type=self.output_type)
        _print_result(result)
        return bool(result.ok)


def read_lines(prompt: str) -> Iterator[str]:
    """Lines of stdin; on a terminal with `readline` editing and a history file."""
    if not sys.stdin.isatty():
        for line in sys.stdin:
            yield line.rstrip("\n")
        return
    history = _history()
    while True:
        try:
            line = input(prompt)
        except EOFError:
            console.print()
            break
        if history is not None and line.strip():
            history()
        yield line


def _history() -> Callable[[], None] | None:
    """Load the history file and return a function that saves it (None: no readline)."""
    try:
        import readline
    except ImportError:  # not on every platform
        return None
    from localagent.paths import home_dir

    path = home_dir() / "chat_history"
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)

    def save() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)
        except OSError:
            pass  # history is a convenience; never end a session over it

    return save


@app.command("chat", help=_HELP)
@handle_errors
def chat_command(
    ctx: typer.Context,
    planner: str | None = PLANNER_OPT,
    model: str | None = MODEL_OPT,
    plugins: list[str] | None = PLUGINS_OPT,
    mcp: list[str] | None = MCP_OPT,
    examples: bool | None = EXAMPLES_OPT,
    max_iterations: int | None = MAX_ITERATIONS_OPT,
    threads: int | None = THREADS_OPT,
    techniques: str | None = TECHNIQUES_OPT,
    threshold: float | None = THRESHOLD_OPT,
    max_tools: int | None = MAX_TOOLS_OPT,
    include: list[str] | None = INCLUDE_OPT,
    exclude: list[str] | None = EXCLUDE_OPT,
    exclude_plugin: list[str] | None = EXCLUDE_PLUGIN_OPT,
    yes: bool = YES_OPT,
    dry_run: bool = DRY_RUN_OPT,
    output_schema: Path | None = OUTPUT_SCHEMA_OPT,
) -> None:
    from localagent.agent import PLANNERS

    if planner is not None and planner not in PLANNERS:
        raise UsageError(f"--planner must be one of {', '.join(PLANNERS)}, not {planner!r}")
    output_type = read_output_schema(output_schema)  # a bad file: exit 2, no model loaded
    cfg = _settings(model=model, planner=planner, max_iterations=max_iterations,
                    techniques=techniques, examples=examples, threads=threads, mcp=mcp or None)
    flt = _filter(threshold, max_tools, include, exclude, exclude_plugin)

    def make_agent(name: str | None) -> Any:
        return _agent(cfg, plugins, flt, model=name, yes=yes, dry_run=dry_run)

    session = ChatSession(make_agent, cfg.value("planner"), cfg.value("model"),
                          cfg.value("max_iterations"), output_type=output_type)
    ctx.call_on_close(lambda: session.agent.close())  # its MCP servers, at the end
    answered = unanswered = 0
    for line in read_lines("goal> "):
        if not line.strip():
            continue
        try:
            if line.lstrip().startswith("/"):
                if not session.command(line):
                    break
            elif session.goal(line.strip()):
                answered += 1
            else:
                unanswered += 1
        except LocalAgentError as exc:  # one bad line does not end the session
            err_console.print(f"error: {exc.one_line()}", markup=False)
        except KeyboardInterrupt:
            err_console.print("interrupted (the session goes on; /quit ends it)",
                              markup=False)
    if answered or unanswered:
        console.print(f"[dim]{answered} answered, {unanswered} without an answer[/dim]",
                      highlight=False)
