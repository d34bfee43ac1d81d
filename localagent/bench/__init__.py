"""The planner benchmark: task suites, comparators, the run matrix, results and reports.

`scripts/bench_planners.py` is the command line; `load_suite`, `plan_runs` and
`Benchmark` are the API it uses.
"""

from localagent.bench.compare import compare, judge
from localagent.bench.runner import Benchmark, RunSpec, plan_runs, run_one
from localagent.bench.suite import Expectation, Suite, Task, load_suite

__all__ = [
    "Benchmark",
    "Expectation",
    "RunSpec",
    "Suite",
    "Task",
    "compare",
    "judge",
    "load_suite",
    "plan_runs",
    "run_one",
]
