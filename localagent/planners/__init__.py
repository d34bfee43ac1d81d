"""Planners: prompt + grammar in, checked plan (or next step) out. One module each.

- `tree.TreePlanner`: one nested call (`subtract(GetPrice(A), GetPrice(B))`);
- `sequential.SequentialPlanner`: Semantic Kernel BasicPlanner's piped steps;
- `react.ReactPlanner`: the ReAct loop (Thought / Action / Observation / Final Answer);
- `tool_calling.ToolCallingPlanner`: the OpenAI-style tool-calling loop.

Planners never call tools: plans go to the executor, and the two loops hand each step's
calls to it.
"""

from localagent.planners.base import (
    GenerationLog,
    MeteredLLM,
    PlannerEvent,
    PlannerSettings,
    generate_checked,
    select_specs,
)

__all__ = ["GenerationLog", "MeteredLLM", "PlannerEvent", "PlannerSettings",
           "generate_checked", "select_specs"]
