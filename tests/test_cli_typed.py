"""`--output-schema` on `run` and `chat` (issue 46): the answer as JSON of the schema, a bad
schema file one line and exit 2 before any model loads."""

from __future__ import annotations

import json

import pytest
from conftest import DEFAULT_ENV, run_cli
from typer.testing import CliRunner

import localagent.llm
from localagent.cli import app

PLAN = {"function": "DemoPlugin.Diff", "args": {
    "value1": {"function": "DemoPlugin.GetInvoice", "args": {"company": "C"}}, "value2": 100}}
SCHEMA = {"type": "object", "properties": {"company": {"type": "string"},
                                           "difference": {"type": "integer"}},
          "required": ["company", "difference"]}

runner = CliRunner()


def test_run_json_prints_the_typed_answer(scripted, tmp_path):
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps(SCHEMA))
    scripted.enqueue(json.dumps(PLAN), '{"company": "C", "difference": 19900}')
    result = runner.invoke(app, ["run", "C minus 100", "--json", "--examples",
                                 "--output-schema", str(schema)])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["answer"] == {"company": "C", "difference": 19900}
    constraint = scripted.requests[1].constraint
    assert constraint is not None and constraint.name == "typed-answer"
    assert "19900" in scripted.requests[1].prompt  # the answer step sees the results


def test_chat_writes_every_answer_as_the_schema(scripted, tmp_path):
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps(SCHEMA))
    scripted.enqueue(json.dumps(PLAN), '{"company": "C", "difference": 19900}')
    result = runner.invoke(app, ["chat", "--examples", "--output-schema", str(schema)],
                           input="C minus 100\n/quit\n")
    assert result.exit_code == 0, result.output
    assert 'answer: {"company": "C", "difference": 19900}' in result.output


@pytest.mark.parametrize("content, words", [
    ("{not json", "is not JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"type": "nonsense"}', "not a valid JSON schema"),
    (None, "cannot read the output schema"),
])
@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_bad_schema_file_is_one_line_and_exit_2_before_the_model_loads(
        monkeypatch, tmp_path, content, words, command):
    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(localagent.llm, "load_llm", no_model)
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content)
    args = [command, *(["a goal"] if command == "run" else []), "--output-schema", str(path)]
    result = runner.invoke(app, args, input="/quit\n")
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in result.output


def test_real_model_run_with_an_output_schema(tmp_path):
    """End to end on the default model in a fresh interpreter: a record-returning tool, a
    schema with other names than the record's keys."""
    plugin = tmp_path / "library.py"
    plugin.write_text(
        "from localagent import tool\n\n\n"
        "class Library:\n"
        "    @tool\n"
        "    def book(self, title: str) -> dict:\n"
        '        """Look up a book by its title: its author, year and page count."""\n'
        '        return {"title": title, "author": "Mary Shelley", "year": 1818, '
        '"pages": 280}\n')
    schema = tmp_path / "facts.json"
    schema.write_text(json.dumps({
        "type": "object", "required": ["writer", "published"],
        "properties": {"writer": {"type": "string"}, "published": {"type": "integer"}}}))
    proc = run_cli("run", "Who wrote Frankenstein, and in which year?", "--plugins",
                   str(plugin), "--output-schema", str(schema), "--json", env=DEFAULT_ENV,
                   timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["answer"] == {"writer": "Mary Shelley", "published": 1818}
