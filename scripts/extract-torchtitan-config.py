#!/usr/bin/env python3
"""Extracts the names a torchtitan recipe uses from torchtitan's source, without importing it (no torch).

usage: scripts/extract-torchtitan-config.py TORCHTITAN_CHECKOUT [GIT_DIR] > configs/frameworks/torchtitan-config.txt

torchtitan no longer reads TOML files: a run is a Python function returning `Trainer.Config`
(torchtitan/config/README.md), named on the command line with `--module M --config F`. Starfish's
export is such a module, and this list is what it may name:
  - `from MODULE import NAME`: each name bound at the top level of MODULE (a def, class,
    assignment, import, or a submodule of a package), for the modules a recipe imports;
  - `CALLABLE.keyword [choice,...]`: each keyword a config class takes (its dataclass fields,
    base classes first, `X.Config` resolved to the Config nested in class X) or a function
    takes (its parameters), with the values it accepts when the source says them: a Literal[...]
    annotation, the optimizer names OptimizersContainer resolves, the attention backends
    get_attention_config builds (those that only raise are left out).
tests/sim/search/test_export.cpp checks every import and keyword Starfish's torchtitan export
writes against this list.
"""
import ast
import pathlib
import subprocess
import sys

# The modules the recipe imports from.
MODULES = [
    "torchtitan.components.data",
    "torchtitan.components.loss",
    "torchtitan.components.optimizer",
    "torchtitan.config",
    "torchtitan.distributed.activation_checkpoint",
    "torchtitan.hf_datasets.text_datasets",
    "torchtitan.models",
    "torchtitan.models.common",
    "torchtitan.models.llama3",
    "torchtitan.trainer",
]

# The callables the recipe calls with keywords, as the recipe names them -> (file, class path or
# function name). A class path "A.Config" is the Config class nested in class A.
CALLABLES = {
    "Trainer.Config": ("torchtitan/trainer.py", "Trainer.Config"),
    "TrainingConfig": ("torchtitan/config/configs.py", "TrainingConfig"),
    "ParallelismConfig": ("torchtitan/config/configs.py", "ParallelismConfig"),
    "DebugConfig": ("torchtitan/config/configs.py", "DebugConfig"),
    "FullAC.Config": ("torchtitan/distributed/activation_checkpoint.py", "FullAC.Config"),
    "CrossEntropyLoss.Config": ("torchtitan/components/loss.py", "CrossEntropyLoss.Config"),
    "OptimizersContainer.Config": ("torchtitan/components/optimizer/optimizer.py", "OptimizersContainer.Config"),
    "ParamGroupConfig": ("torchtitan/components/optimizer/optimizer.py", "ParamGroupConfig"),
    "GrainDataLoader.Config": ("torchtitan/components/data/loader.py", "GrainDataLoader.Config"),
    "ConcatThenSplitPackingConfig": ("torchtitan/components/data/packing.py", "ConcatThenSplitPackingConfig"),
    "Llama3Model.Config": ("torchtitan/models/llama3/model.py", "Llama3Model.Config"),
    "Embedding.Config": ("torchtitan/models/common/embedding.py", "Embedding.Config"),
    "Linear.Config": ("torchtitan/models/common/linear.py", "Linear.Config"),
    "RMSNorm.Config": ("torchtitan/models/common/nn_modules.py", "RMSNorm.Config"),
    "ComplexRoPE.Config": ("torchtitan/models/common/rope.py", "ComplexRoPE.Config"),
    "llama3._build_llama3_layers": ("torchtitan/models/llama3/__init__.py", "_build_llama3_layers"),
    "model_registry": ("torchtitan/models/llama3/__init__.py", "model_registry"),
}

TREES = {}


def tree(root, file):
    if file not in TREES:
        TREES[file] = ast.parse((root / file).read_text(errors="replace"))
    return TREES[file]


def find_class(root, name, file=None):
    """The top-level class `name`, in `file` when given, else anywhere under torchtitan/."""
    files = [file] if file else [str(p.relative_to(root)) for p in sorted(root.glob("torchtitan/**/*.py"))]
    for f in files:
        for node in tree(root, f).body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node, f
    raise SystemExit(f"class {name} not found" + (f" in {file}" if file else " under torchtitan/"))


def resolve(root, path, file=None):
    """A class path "A" or "A.Config" to its ClassDef and file."""
    outer, _, inner = path.partition(".")
    cls, f = find_class(root, outer, file)
    if not inner:
        return cls, f
    for node in cls.body:
        if isinstance(node, ast.ClassDef) and node.name == inner:
            return node, f
    raise SystemExit(f"class {path} not found in {f}")


def literal_choices(annotation):
    """The values of a Literal[...] annotation (Optional / `| None` unwrapped), else None."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return literal_choices(annotation.left) or literal_choices(annotation.right)
    if isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", "") == "Literal":
        elts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        return [e.value for e in elts if isinstance(e, ast.Constant)]
    return None


def class_fields(root, cls, file):
    """{field: choices} of a dataclass, base classes first."""
    fields = {}
    for base in cls.bases:
        name = ast.unparse(base)
        if name in ("object", "ABC", "Generic") or name.startswith(("nn.", "Generic[")):
            continue
        try:
            base_cls, base_file = resolve(root, name)
        except SystemExit:
            continue  # a class outside torchtitan (nn.Module, ...): no dataclass fields
        fields.update(class_fields(root, base_cls, base_file))
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            if ast.unparse(stmt.annotation).startswith("ClassVar") or stmt.target.id.startswith("_"):
                continue
            fields[stmt.target.id] = literal_choices(stmt.annotation)
    return fields


def function_params(root, file, name):
    for node in tree(root, file).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            a = node.args
            return {p.arg: literal_choices(p.annotation) if p.annotation else None
                    for p in a.posonlyargs + a.args + a.kwonlyargs}
    raise SystemExit(f"function {name} not found in {file}")


def optimizer_names(root):
    """The keys of the optimizer_factories dict OptimizersContainer resolves names with."""
    for node in ast.walk(tree(root, "torchtitan/components/optimizer/optimizer.py")):
        if (isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "optimizer_factories"
                and isinstance(node.value, ast.Dict)):
            return [k.value for k in node.value.keys]
    raise SystemExit("optimizer_factories not found in torchtitan/components/optimizer/optimizer.py")


def attention_backends(root):
    """The `backend == "..."` branches of get_attention_config that build a config (not only raise)."""
    for node in tree(root, "torchtitan/models/common/config_utils.py").body:
        if isinstance(node, ast.FunctionDef) and node.name == "get_attention_config":
            out = []
            for branch in ast.walk(node):
                if (isinstance(branch, ast.If) and isinstance(branch.test, ast.Compare)
                        and isinstance(branch.test.comparators[0], ast.Constant)
                        and not all(isinstance(s, ast.Raise) for s in branch.body)):
                    out.append(branch.test.comparators[0].value)
            return out
    raise SystemExit("get_attention_config not found")


def module_names(root, module):
    base = root / module.replace(".", "/")
    file = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    names = set()
    if base.is_dir():
        names.update(p.stem for p in base.iterdir() if p.suffix == ".py" and p.stem != "__init__")
        names.update(p.name for p in base.iterdir() if (p / "__init__.py").exists())
    for node in ast.parse(file.read_text(errors="replace")).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def main():
    root = pathlib.Path(sys.argv[1])
    lines = []
    for module in MODULES:
        lines += [f"from {module} import {n}" for n in sorted(module_names(root, module))]
    special = {"ParamGroupConfig.optimizer_name": optimizer_names(root)}
    backends = attention_backends(root)
    for callee, (file, target) in CALLABLES.items():
        if "." in target or target[0].isupper():
            cls, f = resolve(root, target, file)
            params = class_fields(root, cls, f)
        else:
            params = function_params(root, file, target)
            if "attn_backend" in params:
                special[callee + ".attn_backend"] = backends
        for name in sorted(params):
            key = f"{callee}.{name}"
            choices = special.get(key) or params[name]
            lines.append(key + (" " + ",".join(str(c) for c in choices) if choices else ""))
    git = ["git", "-C", str(root)] if len(sys.argv) < 3 else ["git", "--git-dir", sys.argv[2]]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    version_file = root / "assets/version.txt"
    version = version_file.read_text().strip() if version_file.exists() else "unknown"
    print("# torchtitan recipe names, extracted by scripts/extract-torchtitan-config.py")
    print("# source: https://github.com/pytorch/torchtitan torchtitan/trainer.py, config/configs.py,")
    print("#   components/{loss,optimizer/optimizer,data/loader,data/packing}.py, distributed/activation_checkpoint.py,")
    print("#   models/llama3/{__init__,model}.py, models/common/{embedding,linear,nn_modules,rope,config_utils}.py")
    print(f"# commit: {commit or 'unknown'} (version {version})")
    print("# format: `from MODULE import NAME` | `CALLABLE.keyword [choice,choice,...]`")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
