"""Reference verdicts from Python's tomllib for the differential tests.

Input on stdin: documents as "<byte count>\\n<bytes>" records, back to back.
Output on stdout: one JSON object per document, one per line, in order:
  {"ok": <document in toml-test's tagged JSON shape>}
  {"error": "<why the document is invalid>"}

Values are tagged as in toml-test: {"type": "integer", "value": "42"}, arrays
are JSON arrays and tables JSON objects (key order kept). Date-times carry
Python's isoformat() text so both sides can render them the same way.

Two rules of TOML that tomllib does not apply are applied here, so that the
verdicts are those of the spec:
  * integers must fit in 64 bits (tomllib returns Python's unbounded ints);
  * a leading UTF-8 byte-order mark is ignored (tomllib rejects it).
"""
import datetime
import json
import math
import sys

try:
    import tomllib
except ImportError:  # Python < 3.11
    sys.stderr.write("tomllib_oracle: Python's tomllib module is missing (Python 3.11 or newer is required)\n")
    sys.exit(3)

INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1


class OutOfRange(Exception):
    pass


def tagged(value):
    # bool before int: bool is a subclass of int in Python.
    if isinstance(value, bool):
        return {"type": "bool", "value": "true" if value else "false"}
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise OutOfRange(f"integer {value} does not fit in 64 bits")
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        if math.isnan(value):
            text = "nan"
        elif math.isinf(value):
            text = "inf" if value > 0 else "-inf"
        else:
            text = repr(value)
        return {"type": "float", "value": text}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    # datetime before date: datetime is a subclass of date.
    if isinstance(value, datetime.datetime):
        kind = "datetime" if value.tzinfo is not None else "datetime-local"
        return {"type": kind, "value": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"type": "date-local", "value": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"type": "time-local", "value": value.isoformat()}
    if isinstance(value, list):
        return [tagged(item) for item in value]
    if isinstance(value, dict):
        return {key: tagged(item) for key, item in value.items()}
    raise TypeError(f"unexpected {type(value).__name__} from tomllib")


def verdict(data):
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        return {"error": f"invalid UTF-8: {error}"}
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        return {"error": str(error)}
    except RecursionError:
        return {"error": "nested too deeply for tomllib"}
    try:
        return {"ok": tagged(document)}
    except OutOfRange as error:
        return {"error": str(error)}


def main():
    data = sys.stdin.buffer.read()
    position = 0
    out = sys.stdout
    while position < len(data):
        newline = data.index(b"\n", position)
        length = int(data[position:newline])
        start = newline + 1
        out.write(json.dumps(verdict(data[start:start + length]), ensure_ascii=True))
        out.write("\n")
        position = start + length


if __name__ == "__main__":
    main()
