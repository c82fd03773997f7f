"""Validates agentloop.toml files against agentloop's JSON Schema with a real JSON
Schema validator (the `jsonschema` package, pinned by scripts/test).

    python3 validate.py SCHEMA.json FILE.toml...

Prints one JSON object: each file's path, and null when the schema accepts it or the
validator's first message when it does not. The schema itself is checked against its
metaschema first."""

import json
import sys
import tomllib

import jsonschema


def main():
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    out = {}
    for path in sys.argv[2:]:
        with open(path, "rb") as f:
            config = tomllib.load(f)
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.path))
        out[path] = (
            None
            if not errors
            else "%s: %s" % (".".join(str(p) for p in errors[0].path), errors[0].message)
        )
    json.dump({"validator": cls.__name__, "verdicts": out}, sys.stdout)


main()
