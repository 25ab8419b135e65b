"""Model-level passes around the node rules: opset and IR pinning, dead-initializer cleanup, value_info for
the values a conversion added."""
from __future__ import annotations

import onnx

from custom_ops.config import IR_VERSION, MAX_ORT_OPSET
from custom_ops.errors import ModelError

from .model_io import opset_of, set_opset

from .graph import all_graphs, infer


def _default(domain: str) -> bool:
    return domain in ("", "ai.onnx")


def node_types(model: onnx.ModelProto, domain_test) -> set[str]:
    found = set()
    for graph in all_graphs(model.graph):
        found.update(n.op_type for n in graph.node if domain_test(n.domain))
    for function in model.functions:
        found.update(n.op_type for n in function.node if domain_test(n.domain))
    return found


def uses_domain(model: onnx.ModelProto, domain: str) -> bool:
    return bool(node_types(model, lambda d: d == domain))


def opset_blockers(model: onnx.ModelProto, old: int, new: int) -> list[str]:
    """Default-domain ops whose definition differs between opsets `old` and `new` (so the model's opset
    import cannot simply be changed). Unknown ops count as differing."""
    blockers = []
    for op_type in sorted(node_types(model, _default)):
        try:
            before = onnx.defs.get_schema(op_type, old, "").since_version
            after = onnx.defs.get_schema(op_type, new, "").since_version
        except onnx.defs.SchemaError:  # no such op at that opset
            blockers.append(f"{op_type} (unknown at opset {min(old, new)})")
            continue
        if before != after:
            blockers.append(f"{op_type}-{before} -> {op_type}-{after}")
    return blockers


def plan_default_opset(model: onnx.ModelProto, wanted: int) -> tuple[int | None, str | None]:
    """(opset to emit at, None) when new nodes of opset `wanted` can join the model, else (None, reason).

    A model below `wanted` is moved up only when none of its own ops changes definition on the way.
    """
    current = opset_of(model, "")
    if current is None or current >= wanted:
        return (wanted if current is None else current), None
    blockers = opset_blockers(model, current, wanted)
    if blockers:
        shown = ", ".join(blockers[:5]) + (", ..." if len(blockers) > 5 else "")
        return None, (f"the model imports default-domain opset {current}; the standard ops need {wanted}, "
                      f"and raising the import would change {shown} (upgrade the model with "
                      f"onnx.version_converter first)")
    return wanted, None


def pin_runnable_opset(model: onnx.ModelProto, notes: list[str]) -> None:
    """Bring a default-domain opset above what onnxruntime runs down to MAX_ORT_OPSET when that changes no
    op of the model (e.g. the opset-28 Unique backend tests once their Unique is raised)."""
    current = opset_of(model, "")
    if current is None or current <= MAX_ORT_OPSET:
        return
    blockers = opset_blockers(model, MAX_ORT_OPSET, current)
    if blockers:
        notes.append(f"default-domain opset {current} kept (onnxruntime runs <= {MAX_ORT_OPSET}); "
                     f"changed ops: {', '.join(blockers)}")
        return
    set_opset(model, "", MAX_ORT_OPSET)
    notes.append(f"default-domain opset {current} -> {MAX_ORT_OPSET} (no op of the model changes)")


def drop_domain_if_unused(model: onnx.ModelProto, domain: str) -> None:
    if uses_domain(model, domain):
        return
    kept = [entry for entry in model.opset_import if entry.domain != domain]
    del model.opset_import[:]
    model.opset_import.extend(kept)


def pin_ir(model: onnx.ModelProto) -> None:
    model.ir_version = IR_VERSION


def used_names(model: onnx.ModelProto) -> set[str]:
    used = set()
    for graph in all_graphs(model.graph):
        for node in graph.node:
            used.update(node.input)
        used.update(v.name for v in graph.output)
    return used


def remove_dead_constants(model: onnx.ModelProto, used_before: set[str], notes: list[str]) -> None:
    """Remove initializers and Constant nodes that fed only the converted nodes."""
    dead = used_before - used_names(model)
    removed = []
    for graph in all_graphs(model.graph):
        inputs = {v.name for v in graph.input}
        keep = [t for t in graph.initializer if t.name not in dead or t.name in inputs]
        if len(keep) != len(graph.initializer):
            removed += [t.name for t in graph.initializer if t.name in dead and t.name not in inputs]
            del graph.initializer[:]
            graph.initializer.extend(keep)
        nodes = [n for n in graph.node if not (n.op_type == "Constant" and _default(n.domain)
                                                and n.output and n.output[0] in dead)]
        if len(nodes) != len(graph.node):
            removed += [n.output[0] for n in graph.node if n not in nodes]
            del graph.node[:]
            graph.node.extend(nodes)
    if removed:
        notes.append(f"removed constants only the converted nodes used: {', '.join(sorted(removed))}")


def add_value_info(model: onnx.ModelProto, new_values: list[tuple[onnx.GraphProto, dict[str, int]]]) -> None:
    """value_info (type, and shape where inference finds it) for every value the conversion added."""
    if not new_values:
        return
    inferred = infer(model)
    found = {}
    for graph in all_graphs(inferred.graph):
        for value in graph.value_info:
            found[value.name] = value
    for graph, types in new_values:
        declared = {v.name for v in graph.value_info} | {v.name for v in graph.output}
        for name, code in types.items():
            if name in declared:
                continue
            value = found.get(name)
            if value is None or value.type.tensor_type.elem_type != code:
                value = onnx.helper.make_tensor_value_info(name, code, None)
            graph.value_info.append(value)


def make_runnable(model: onnx.ModelProto) -> onnx.ModelProto:
    """Pin the IR version onnxruntime reads; refuse opsets it cannot run (in place, returns model)."""
    default = opset_of(model, "")
    if default is not None and default > MAX_ORT_OPSET:
        notes: list[str] = []
        pin_runnable_opset(model, notes)  # lowers the opset when no op of the model changes meaning
        if opset_of(model, "") > MAX_ORT_OPSET:
            raise ModelError(f"model imports default-domain opset {default}; onnxruntime runs at most "
                             f"{MAX_ORT_OPSET} and {notes[0].split('changed ops: ')[-1]} changed since. "
                             f"Convert it with onnx.version_converter first.")
    if model.ir_version > IR_VERSION or model.ir_version == 0:
        model.ir_version = IR_VERSION  # onnx >= 1.23 writes IR 14; nothing we emit needs more than 10
    return model
