"""The ONNX export of the bundled MiniLM: same vectors as sentence-transformers, no torch
import, and a corrupt or stale export set aside (real torch export, real onnxruntime)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from localagent.retrieval.embeddings import MiniLMEmbedder, bundled_model_path
from localagent.retrieval.onnx_minilm import (
    FOLDER,
    MANIFEST,
    MODEL_FILE,
    OnnxMiniLM,
    check,
    ensure_export,
)

TEXTS = [
    "What is the total of the invoices of A and C?",
    "C",
    "Berechne die Summe der Rechnungen von A und C und ziehe B ab.",
    "¿Cuántas páginas tiene el libro más largo?",
    "计算发票C的总额，然后减去A。",
    "word " * 400,  # longer than the 256-token limit: truncated, like sentence-transformers
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A models folder holding a fresh export (about 30 s on two cores)."""
    models = tmp_path_factory.mktemp("models")
    folder, made = ensure_export(bundled_model_path(), models / "all-MiniLM-L6-v2-onnx")
    assert made and folder.is_dir()
    return models


@pytest.fixture()
def models_dir(exported: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private copy of the export as `LOCALAGENT_MODELS_DIR`, for tests that damage it."""
    copy = tmp_path / "models"
    shutil.copytree(exported, copy)
    monkeypatch.setenv("LOCALAGENT_MODELS_DIR", str(copy))
    return copy


def _vectors(embedder: MiniLMEmbedder) -> np.ndarray:
    return np.array(embedder.embed(TEXTS))


def test_export_gives_the_vectors_of_sentence_transformers(models_dir: Path) -> None:
    onnx = MiniLMEmbedder()
    assert onnx.runtime == "onnx"
    reference = MiniLMEmbedder(runtime="sentence-transformers")
    assert reference.runtime == "sentence-transformers"
    got, want = _vectors(onnx), _vectors(reference)
    assert got.shape == want.shape == (len(TEXTS), 384)
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)


def test_batches_of_mixed_lengths_match_one_text_at_a_time(exported: Path) -> None:
    runner = OnnxMiniLM(exported / "all-MiniLM-L6-v2-onnx" / FOLDER, batch_size=4)
    together = runner(TEXTS)
    alone = np.concatenate([runner([t]) for t in TEXTS])
    assert np.abs(together - alone).max() < 1e-5  # padding never leaks into the mean


def test_a_process_embeds_without_importing_torch(models_dir: Path) -> None:
    code = ("import sys; from localagent.retrieval.embeddings import MiniLMEmbedder; "
            "e = MiniLMEmbedder(); v = e.embed(['total of the invoices']); "
            "print(e.runtime, len(v[0]), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "LOCALAGENT_MODELS_DIR": str(models_dir)},
                         timeout=300, check=True)
    assert out.stdout.split() == ["onnx", "384", "False"]


def test_corrupt_export_is_set_aside_with_one_warning(
        models_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    home = models_dir / "all-MiniLM-L6-v2-onnx"
    model = home / FOLDER / MODEL_FILE
    data = bytearray(model.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, new mtime: the sha256 must catch it
    model.write_bytes(bytes(data))
    assert check(bundled_model_path(), home) == f"corrupt: {MODEL_FILE} does not match its sha256"
    embedder = MiniLMEmbedder()
    assert embedder.runtime == "sentence-transformers"
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("warning: the ONNX embedding model is corrupt")
    assert not (home / FOLDER).exists()
    assert [p.name.startswith(f"{FOLDER}.corrupt-") for p in home.iterdir()] == [True]
    assert len(embedder.embed(["still works"])[0]) == 384


def test_export_of_another_model_version_is_stale(models_dir: Path) -> None:
    home = models_dir / "all-MiniLM-L6-v2-onnx"
    manifest = home / FOLDER / MANIFEST
    record = json.loads(manifest.read_text())
    record["source"]["weights_size"] += 1
    manifest.write_text(json.dumps(record))
    assert check(bundled_model_path(), home).startswith("stale")
    assert MiniLMEmbedder().runtime == "sentence-transformers"
    assert not (home / FOLDER).exists()


def test_missing_export_falls_back_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOCALAGENT_MODELS_DIR", str(tmp_path))
    assert MiniLMEmbedder().runtime == "sentence-transformers"
    assert capsys.readouterr().err == ""
    with pytest.raises(Exception, match="ONNX export of the embedding model is missing"):
        MiniLMEmbedder(runtime="onnx").embed(["x"])
