#!/usr/bin/env python3
"""Extracts the ConfigContainer overrides Megatron-Bridge's run_recipe.py accepts, from its source and
Megatron-core's, without importing them (no torch).

usage: scripts/extract-megatron-bridge-overrides.py BRIDGE_CHECKOUT MEGATRON_LM_CHECKOUT [BRIDGE_GIT_DIR] \\
           > configs/frameworks/megatron-bridge-overrides.txt

BRIDGE_CHECKOUT holds src/megatron/bridge; MEGATRON_LM_CHECKOUT holds megatron/core and
megatron/training at the commit Bridge pins as its 3rdparty/Megatron-LM submodule.
scripts/training/run_recipe.py applies trailing KEY=VALUE overrides to the recipe's
ConfigContainer (src/megatron/bridge/training/config.py). One line per key a section takes:
`section.field [choice,...]`, the fields of the dataclass the ConfigContainer annotation names
(bases first, across Bridge and Megatron-core, `init=False` fields left out), with the values
the source lists: Literal[...] and Enum annotations, the activation names
utils/activation_map.py resolves (model.activation_func), the precision recipes
training/mixed_precision.py registers (mixed_precision). tests/sim/search/test_export.cpp
checks every override Starfish's Megatron-Bridge export writes against this list.
"""
import ast
import pathlib
import subprocess
import sys

# ConfigContainer section -> the class of its annotation the export configures.
SECTIONS = {
    "model": "GPTModelProvider",
    "train": "TrainingConfig",
    "optimizer": "OptimizerConfig",
    "ddp": "DistributedDataParallelConfig",
    "dataset": "GPTDatasetConfig",
    "tokenizer": "TokenizerConfig",
    "rng": "RNGConfig",
    "scheduler": "SchedulerConfig",
}
CONFIG = "megatron/bridge/training/config.py"


class Source:
    def __init__(self, bridge, mlm):
        self.bridge, self.mlm, self.trees = bridge / "src", mlm, {}

    def module_file(self, module):
        root = self.bridge if module.startswith("megatron.bridge") else self.mlm
        base = root / module.replace(".", "/")
        for f in (base.with_suffix(".py"), base / "__init__.py"):
            if f.exists():
                return f
        return None

    def absolute(self, node, path):
        """The module an ImportFrom names, a relative one (`from ..x import`) made absolute."""
        if not node.level:
            return node.module
        root = self.bridge if str(path).startswith(str(self.bridge)) else self.mlm
        package = list(path.relative_to(root).with_suffix("").parts)
        package = package[:-1] if package[-1] != "__init__" else package[:-1]
        package = package[:len(package) - (node.level - 1)] if node.level > 1 else package
        return ".".join(package + ([node.module] if node.module else []))

    def tree(self, path):
        if path not in self.trees:
            self.trees[path] = ast.parse(path.read_text(errors="replace"))
        return self.trees[path]

    def resolve(self, name, path, seen=()):
        """The ClassDef `name` means in file `path`: defined there, or imported (aliases followed)."""
        if (name, path) in seen:
            return None
        seen = seen + ((name, path),)
        tree = self.tree(path)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return node, path
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or node.level):
                for a in node.names:
                    if (a.asname or a.name) == name:
                        target = self.module_file(self.absolute(node, path))
                        if target:
                            found = self.resolve(a.name, target, seen)
                            if found:
                                return found
        return None

    def fields(self, cls, path):
        """{field: choices} of a dataclass, bases first; init=False and ClassVar fields left out."""
        out = {}
        for base in cls.bases:
            name = ast.unparse(base).split("[")[0]
            found = self.resolve(name, path) if name.isidentifier() else None
            if found:
                out.update(self.fields(*found))
        for stmt in cls.body:
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            if stmt.target.id.startswith("_") or ast.unparse(stmt.annotation).startswith("ClassVar"):
                continue
            if isinstance(stmt.value, ast.Call) and getattr(stmt.value.func, "id", "") == "field":
                if any(k.arg == "init" and isinstance(k.value, ast.Constant) and k.value.value is False
                       for k in stmt.value.keywords):
                    continue
            out[stmt.target.id] = self.choices(stmt.annotation, path)
        return out

    def choices(self, annotation, path):
        """Literal[...] values or an Enum's member names (Optional / `| None` unwrapped)."""
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return self.choices(annotation.left, path) or self.choices(annotation.right, path)
        if isinstance(annotation, ast.Subscript):
            head = ast.unparse(annotation.value)
            if head.endswith("Literal"):
                elts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
                return [e.value for e in elts if isinstance(e, ast.Constant)]
            if head.endswith("Optional"):
                return self.choices(annotation.slice, path)
            return None
        if isinstance(annotation, ast.Name):
            found = self.resolve(annotation.id, path)
            if found and any("Enum" in ast.unparse(b) for b in found[0].bases):
                return [t.targets[0].id for t in found[0].body
                        if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name)]
        return None


def activation_names(src):
    tree = src.tree(src.bridge / "megatron/bridge/utils/activation_map.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and node.keys and all(isinstance(k, ast.Constant) for k in node.keys):
            names = [k.value for k in node.keys]
            if "silu" in names and "gelu" in names:
                return names
    raise SystemExit("the activation map was not found in utils/activation_map.py")


def precision_recipes(src):
    tree = src.tree(src.bridge / "megatron/bridge/training/mixed_precision.py")
    return [n.name for n in tree.body if isinstance(n, ast.FunctionDef)
            and any(ast.unparse(d) == "register" for d in n.decorator_list)]


def main():
    bridge, mlm = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    src = Source(bridge, mlm)
    config = src.bridge / CONFIG
    lines = []
    for section, cls_name in SECTIONS.items():
        found = src.resolve(cls_name, config)
        if not found:
            raise SystemExit(f"{cls_name} not found from {CONFIG}")
        special = {"activation_func": activation_names(src)} if section == "model" else {}
        for name, choices in sorted(src.fields(*found).items()):
            choices = special.get(name) or choices
            lines.append(f"{section}.{name}" + (" " + ",".join(str(c) for c in choices) if choices else ""))
    lines.append("mixed_precision " + ",".join(precision_recipes(src)))
    git = ["git", "-C", str(bridge)] if len(sys.argv) < 4 else ["git", "--git-dir", sys.argv[3]]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    pinned = subprocess.run(git + ["ls-tree", "HEAD", "3rdparty/Megatron-LM"], capture_output=True, text=True).stdout.split()
    print("# Megatron-Bridge ConfigContainer overrides (scripts/training/run_recipe.py KEY=VALUE), extracted by")
    print("#   scripts/extract-megatron-bridge-overrides.py from src/megatron/bridge/training/config.py and the")
    print("#   Megatron-core / megatron.training dataclasses it builds on")
    print(f"# source: https://github.com/NVIDIA-NeMo/Megatron-Bridge commit: {commit or 'unknown'}")
    print(f"# Megatron-LM (its 3rdparty/Megatron-LM submodule): {pinned[2] if len(pinned) > 2 else 'unknown'}")
    print("# format: section.field [choice,choice,...]")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
