#!/usr/bin/env python3
"""Extracts the DeepSpeed JSON config keys from DeepSpeed's source, without importing it (no torch).

usage: scripts/extract-deepspeed-config-keys.py DEEPSPEED_CHECKOUT [GIT_DIR] > configs/frameworks/deepspeed-config-keys.txt

One dotted key per line:
  - top level: every key deepspeed/runtime/**.py reads from the config dict `param_dict`
    (get_scalar_param(param_dict, KEY, ...), param_dict[KEY], param_dict.get(KEY), KEY in
    param_dict), KEY resolved through the modules' string constants;
  - the sections DeepSpeed parses with pydantic models (extra keys are errors there): their
    fields and aliases (zero_optimization, its offload_param / offload_optimizer, bf16, fp16);
  - activation_checkpointing: the ACT_CHKPT_* keys of activation_checkpointing/config.py;
  - optimizer: `type` and `params.*` (params are the optimizer's own keyword arguments).
tests/sim/search check every key Starfish's DeepSpeed export writes against this list.
"""
import ast
import pathlib
import subprocess
import sys

SECTIONS = {  # section -> (file, pydantic class)
    "zero_optimization": ("deepspeed/runtime/zero/config.py", "DeepSpeedZeroConfig"),
    "zero_optimization.offload_param": ("deepspeed/runtime/zero/offload_config.py", "DeepSpeedZeroOffloadParamConfig"),
    "zero_optimization.offload_optimizer": ("deepspeed/runtime/zero/offload_config.py",
                                            "DeepSpeedZeroOffloadOptimizerConfig"),
    "bf16": ("deepspeed/runtime/precision_config.py", "DeepSpeedBF16Config"),
    "fp16": ("deepspeed/runtime/precision_config.py", "DeepSpeedFP16Config"),
}


def string_constants(root):
    consts = {}
    for path in sorted((root / "deepspeed/runtime").rglob("*.py")):
        for node in ast.parse(path.read_text(errors="replace")).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                value = node.value.value
                if value.replace("_", "").isalnum():  # a key, not a format description of one
                    consts.setdefault(node.targets[0].id, value)
    return consts


def top_level_keys(root, consts):
    keys = set()

    def resolve(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return consts.get(node.id)
        return None

    def is_param_dict(node):  # `param_dict`, or the engine config's `self._param_dict`
        return ((isinstance(node, ast.Name) and node.id == "param_dict")
                or (isinstance(node, ast.Attribute) and node.attr == "_param_dict"))

    for path in sorted((root / "deepspeed/runtime").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(errors="replace"))):
            key = None
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name.startswith("get_") and name.endswith("_param") and len(node.args) >= 2 and is_param_dict(node.args[0]):
                    key = resolve(node.args[1])
                elif name == "get" and isinstance(node.func, ast.Attribute) and is_param_dict(node.func.value) and node.args:
                    key = resolve(node.args[0])
            elif isinstance(node, ast.Subscript) and is_param_dict(node.value):
                key = resolve(node.slice)
            elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In):
                target = node.comparators[0]
                if is_param_dict(target) or (isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute)
                                             and is_param_dict(target.func.value)):
                    key = resolve(node.left)
            if key:
                keys.add(key)
    return keys


def model_fields(root, file, cls_name):
    tree = ast.parse((root / file).read_text())
    cls = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls_name)
    fields = set()
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and not stmt.target.id.startswith("_"):
            fields.add(stmt.target.id)
            if isinstance(stmt.value, ast.Call):
                for kw in stmt.value.keywords:
                    if kw.arg == "alias" and isinstance(kw.value, ast.Constant):
                        fields.add(kw.value.value)
    return fields


def main():
    root = pathlib.Path(sys.argv[1])
    consts = string_constants(root)
    keys = set(top_level_keys(root, consts))
    for section, (file, cls) in SECTIONS.items():
        keys.add(section)
        keys.update(section + "." + f for f in model_fields(root, file, cls))
    act = ast.parse((root / "deepspeed/runtime/activation_checkpointing/config.py").read_text())
    for node in act.body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id.startswith("ACT_CHKPT_") and not node.targets[0].id.endswith("_DEFAULT")
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            keys.add("activation_checkpointing." + node.value.value)
    keys.update({"optimizer.type", "optimizer.params", "optimizer.params.*"})
    git = ["git", "-C", str(root)] if len(sys.argv) < 3 else ["git", "--git-dir", sys.argv[2]]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    version = (root / "version.txt").read_text().strip() if (root / "version.txt").exists() else subprocess.run(
        git + ["show", "HEAD:version.txt"], capture_output=True, text=True).stdout.strip()
    print("# DeepSpeed JSON config keys, extracted by scripts/extract-deepspeed-config-keys.py")
    print("# source: https://github.com/deepspeedai/DeepSpeed deepspeed/runtime/config.py, zero/config.py,")
    print("#   zero/offload_config.py, precision_config.py, activation_checkpointing/config.py")
    print(f"# commit: {commit or 'unknown'} (version {version or 'unknown'})")
    print("# format: one dotted key per line; `x.*` admits any key under x")
    for key in sorted(keys):
        print(key)


if __name__ == "__main__":
    main()
