"""What the two mock model APIs share: a scripted step's input may name a
field of the last tool result, as "{{result.FIELD}}" (a studio's
`question_id`, to answer it), filled in when the step is sent."""

import json


def find(value, field):
    """FIELD of the first JSON object in `value` that has it: `value` may be
    that object, JSON text of it, or a list or object holding either (a tool
    result's content blocks)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        if field in value:
            return value[field]
        value = list(value.values())
    if isinstance(value, list):
        for item in value:
            found = find(item, field)
            if found is not None:
                return found
    return None


def fill(value, last):
    """`value` with each "{{result.FIELD}}" string replaced by FIELD of
    `last`, the last tool result as the API carried it."""
    if isinstance(value, dict):
        return {k: fill(v, last) for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, last) for v in value]
    if isinstance(value, str) and value.startswith("{{result.") and value.endswith("}}"):
        return find(last, value[len("{{result."):-2])
    return value
