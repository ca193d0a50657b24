#!/usr/bin/env python3
"""Extracts Megatron-LM's command-line arguments from its source, without importing it (no torch).

usage: scripts/extract-megatron-arguments.py MEGATRON_CHECKOUT [GIT_DIR] > configs/frameworks/megatron-lm-arguments.txt

Reads megatron/training/arguments.py: every literal parser.add_argument('--name', ...) call, and
every ArgumentGroupFactory(ConfigClass, exclude=[...]) group, whose flags megatron/training/
argument_utils.py derives from the dataclass fields (`--field-name`; a bool field defaulting to
True becomes `--no-field-name` / `--disable-field-name`; `argparse_meta` overrides). One line per
flag: `--name flag` (takes no value) or `--name value` followed by its choices when they are
literal. The header records the commit the list came from; tests/sim/search check every
argument Starfish's Megatron export writes against this list.
"""
import ast
import pathlib
import subprocess
import sys

ARGUMENTS = "megatron/training/arguments.py"


def literal(node, env):
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError):
        return None


def find_class(root, name, cache={}):
    if name in cache:
        return cache[name]
    for path in sorted(root.glob("megatron/**/*.py")):
        text = path.read_text(errors="replace")
        if f"class {name}(" not in text and f"class {name}:" not in text:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.name == name:
                cache[name] = node
                return node
    raise SystemExit(f"class {name} not found under megatron/")


def dataclass_fields(root, name):
    """(name, annotation source, default node, field() keywords) of a dataclass, bases first."""
    cls = find_class(root, name)
    fields = {}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id not in ("object", "ABC"):
            fields.update(dataclass_fields(root, base.id))
    for stmt in cls.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
            continue
        annotation = ast.unparse(stmt.annotation)
        if annotation.startswith("ClassVar"):
            continue
        default, keywords = stmt.value, {}
        if isinstance(default, ast.Call) and getattr(default.func, "id", "") == "field":
            keywords = {k.arg: k.value for k in default.keywords}
            default = keywords.get("default")
        fields[stmt.target.id] = (annotation, default, keywords)
    return fields


def annotation_choices(root, annotation):
    """The values argparse accepts for a Literal[...] or Enum field (Optional[...] unwrapped)."""
    if annotation.startswith("Optional[") and annotation.endswith("]"):
        annotation = annotation[len("Optional["):-1]
    if annotation.startswith("Literal["):
        choices = literal(ast.parse(annotation[len("Literal"):], mode="eval").body, {})
        return list(choices) if isinstance(choices, (tuple, list)) else [choices]
    if annotation.isidentifier() and annotation not in ("bool", "int", "float", "str"):
        try:
            cls = find_class(root, annotation)
        except SystemExit:
            return None
        if any("Enum" in ast.unparse(b) for b in cls.bases):  # argparse takes the member names
            return [t.targets[0].id for t in cls.body if isinstance(t, ast.Assign) and isinstance(t.targets[0], ast.Name)]
    return None


def factory_flags(root, cls_name, exclude):
    flags = []
    for name, (annotation, default, keywords) in dataclass_fields(root, cls_name).items():
        if name in exclude or name.startswith("_"):
            continue
        if "init" in keywords and literal(keywords["init"], {}) is False:
            continue
        meta = {}
        if "metadata" in keywords:
            md = literal(keywords["metadata"], {})
            if isinstance(md, dict):
                meta = md.get("argparse_meta", {}) or {}
        dashed = "--" + name.replace("_", "-")
        is_bool = annotation in ("bool", "Optional[bool]")
        value = literal(default, {}) if default is not None else None
        if "arg_names" in meta:
            names = meta["arg_names"]
        elif is_bool and value is True:
            names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
        else:
            names = [dashed]
        action = meta.get("action", "store_true" if is_bool else None)
        choices = meta.get("choices") or annotation_choices(root, annotation)
        for n in names:
            flags.append((n, "flag" if action in ("store_true", "store_false", "store_const") else "value", choices))
    return flags


def main():
    root = pathlib.Path(sys.argv[1])
    source = (root / ARGUMENTS).read_text()
    tree = ast.parse(source)
    flags = {}
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef):
            continue
        env = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = literal(node.value, {})
                if value is not None:
                    env[node.targets[0].id] = value
        for node in ast.walk(func):
            if not isinstance(node, ast.Call):
                continue
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee == "add_argument":
                names = [a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")]
                kw = {k.arg: k.value for k in node.keywords}
                action = literal(kw["action"], env) if "action" in kw else None
                choices = literal(kw["choices"], env) if "choices" in kw else None
                kind = "flag" if action in ("store_true", "store_false", "store_const") else "value"
                for n in names:
                    flags.setdefault(n, (kind, choices))
            elif callee == "ArgumentGroupFactory" and node.args and isinstance(node.args[0], ast.Name):
                kw = {k.arg: k.value for k in node.keywords}
                exclude = set(literal(kw["exclude"], env) or []) if "exclude" in kw else set()
                for n, kind, choices in factory_flags(root, node.args[0].id, exclude):
                    flags.setdefault(n, (kind, choices))
    git = ["git", "-C", str(root)] if len(sys.argv) < 3 else ["git", "--git-dir", sys.argv[2]]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    described = subprocess.run(git + ["describe", "--tags"], capture_output=True, text=True).stdout.strip()
    print("# Megatron-LM command-line arguments, extracted by scripts/extract-megatron-arguments.py")
    print(f"# source: https://github.com/NVIDIA/Megatron-LM {ARGUMENTS} (+ the dataclasses its ArgumentGroupFactory groups read)")
    print(f"# commit: {commit or 'unknown'} ({described or 'no tag'})")
    print("# format: --name flag | --name value [choice,choice,...]")
    for name in sorted(flags):
        kind, choices = flags[name]
        line = f"{name} {kind}"
        if kind == "value" and isinstance(choices, (list, tuple)) and all(isinstance(c, (str, int)) for c in choices):
            line += " " + ",".join(str(c) for c in choices)
        print(line)


if __name__ == "__main__":
    main()
