#!/usr/bin/env python3
"""interop: a writer and reader of Confluent wire-format records that
sharerelay did not write.

It produces and consumes Avro, Protobuf and JSON Schema records with
Confluent's own Python client (confluent-kafka and its schema-registry
serializers: fastavro for Avro, the protobuf runtime for Protobuf,
jsonschema for JSON Schema), so the relay's interop tests can check its
bytes against an implementation independent of its Go codecs.

Subcommands (each prints JSON on stdout; errors go to stderr with exit
status 1, or 3 when consume read fewer records than --count: it still
prints those it read):

  produce   serialize records given in the canonical form below and produce
            them with an idempotent producer; prints a summary.
  consume   read N records from the beginning with isolation.level
            read_committed, deserialize them and print one JSON line each.
  register  register a schema under a subject; prints its id.
  generate  print N seeded, deterministic source records (an Order per
            format) as JSON lines, the input produce takes.

Run `interop.py SUBCOMMAND --help` for the flags.

Record lines (produce's input, consume's output)
------------------------------------------------
  {"key": K, "value": V, "headers": {"name": "text", ...},
   "timestamp_ms": N, "partition": N, "message": "pkg.Name"}

Only "value" is required on input. "key" is a string (--key-format string,
the default), standard base64 (bytes), or the canonical form of the key
schema (avro). "message" names the Protobuf message a value is written as
(default: --proto-message, else the first message of --schema). Header
values are UTF-8 text (null for a header without a value). Consume adds
"topic", "offset", "schema_id" (the value's; "key_schema_id" for a key
with a schema) and, for Protobuf, "message" and "message_indexes" (the
writer's message and the indexes found in the record's header); its lines
are sorted by partition and offset.

Canonical JSON form of values
-----------------------------
The same form in both directions, so that what a test wrote compares
equal to what it reads back:

  * records and messages are objects keyed by field name; map keys are
    strings (a Protobuf map<int64, string> key 5 is "5").
  * integers are JSON integers whatever their width: Avro long, Protobuf
    int64, uint64, fixed64, sint64, sfixed64 included (never strings).
  * float and double are JSON numbers.
  * bytes and fixed are standard base64 text (with padding).
  * enums are symbol names (a Protobuf number with no name: the integer).
  * Avro decimal (on bytes or fixed) is text with exactly `scale` digits
    after the point ("12.30", "-0.05", "7" for scale 0).
  * Avro date is "YYYY-MM-DD".
  * Avro time-millis and time-micros are microseconds since midnight.
  * Avro timestamp-millis/-micros and local-timestamp-millis/-micros are
    microseconds since the epoch (local ones as if UTC).
  * Avro uuid is its text.
  * Avro unions are the value of their branch (null, or the value). On
    input the first branch the value fits is taken; a field left out
    takes its schema default.
  * Protobuf messages list every field. A field with presence (a message
    field, a proto3 `optional`, a oneof member) that is not set is null;
    so of a oneof only the set member is non-null. Fields without
    presence always carry their value (0, "", false, [], {} included).
  * google.protobuf.Timestamp is microseconds since the epoch; Duration is
    microseconds (signed); the wrappers (Int64Value, StringValue, ...) are
    their value; Struct is a JSON object, Value its JSON value, ListValue
    an array, Empty {}. A number in a Struct/Value is an integer when it
    is integral (Struct holds doubles: 3 and 3.0 are the same value).
  * JSON Schema values are the JSON value itself.

Avro and Protobuf need the schema to go from the canonical form to the
serializer's input (a Decimal, a datetime, a message); Avro reads it back
from the writer schema in the registry, Protobuf with classes generated at
run time from --schema (grpc_tools.protoc), JSON Schema with the writer
schema in the registry (the deserializer validates against it).
"""

import argparse
import atexit
import base64
import datetime as dt
import decimal
import importlib
import importlib.resources
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import uuid

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.schema_registry import (
    RegisteredSchema,
    Schema,
    SchemaReference,
    SchemaRegistryClient,
    dual_schema_id_deserializer,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.schema_registry.serde import SchemaId
from confluent_kafka.serialization import MessageField, SerializationContext, StringDeserializer, StringSerializer

FORMATS = ("avro", "protobuf", "json_schema")
KEY_FORMATS = ("string", "bytes", "avro", "none")
NAMING = {"topic": "TOPIC", "record": "RECORD", "topic_record": "TOPIC_RECORD"}
REGISTRY_TYPES = {"avro": "AVRO", "protobuf": "PROTOBUF", "json_schema": "JSON"}

EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_NAIVE = dt.datetime(1970, 1, 1)


_WORK = []


def scratch(prefix):
    """A new directory under this run's scratch directory, removed at exit."""
    if not _WORK:
        _WORK.append(tempfile.mkdtemp(prefix="interop-"))
        atexit.register(shutil.rmtree, _WORK[0], True)
    return tempfile.mkdtemp(prefix=prefix, dir=_WORK[0])


class Failure(Exception):
    """An error the CLI reports on stderr with exit status 1."""

    status = 1


class TooFew(Failure):
    """consume read fewer records than --count: exit status 3."""

    status = 3


# ---------------------------------------------------------------------------
# Canonical JSON helpers


def b64(data):
    return base64.standard_b64encode(bytes(data)).decode("ascii")


def unb64(text, where):
    if not isinstance(text, str):
        raise Failure(f"{where}: want base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError as e:
        raise Failure(f"{where}: bad base64: {e}") from None


def micros_of(delta):
    """Exact microseconds of a timedelta."""
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def decimal_text(d):
    """Plain (never scientific) text of a Decimal, keeping its exponent's digits."""
    return format(d, "f")


def dumps(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# ---------------------------------------------------------------------------
# Avro: canonical form <-> what fastavro reads and writes


class AvroNames:
    """Named types of an Avro schema by full name, for references by name."""

    PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}

    def __init__(self, schema):
        self.types = {}
        self._collect(schema, "")

    def _full(self, name, namespace):
        if "." in name or not namespace:
            return name
        return namespace + "." + name

    def _collect(self, s, ns):
        if isinstance(s, list):
            for b in s:
                self._collect(b, ns)
        elif isinstance(s, dict):
            t = s.get("type")
            if t in ("record", "error", "enum", "fixed"):
                ns = s.get("namespace", ns)
                full = self._full(s["name"], ns)
                ns = full.rpartition(".")[0]
                self.types[full] = (s, ns)
                for f in s.get("fields", []):
                    self._collect(f["type"], ns)
            elif t == "array":
                self._collect(s["items"], ns)
            elif t == "map":
                self._collect(s["values"], ns)
            elif isinstance(t, (dict, list)):
                self._collect(t, ns)

    def resolve(self, s, ns):
        """The schema a name stands for and its namespace, or (s, ns)."""
        if isinstance(s, str) and s not in self.PRIMITIVES:
            for cand in (self._full(s, ns), s):
                if cand in self.types:
                    return self.types[cand]
            raise Failure(f"avro: unknown type name {s!r}")
        if isinstance(s, dict) and isinstance(s.get("type"), (dict, list)):
            return self.resolve(s["type"], ns)
        if isinstance(s, dict) and isinstance(s.get("type"), str) and s["type"] not in self.PRIMITIVES \
                and s["type"] not in ("record", "error", "enum", "fixed", "array", "map"):
            return self.resolve(s["type"], ns)
        return s, ns


def avro_namespace(s, ns):
    """The namespace the names inside named type s are relative to."""
    if "." in s["name"]:
        return s["name"].rpartition(".")[0]
    return s.get("namespace", ns)


def avro_fits(names, s, ns, v):
    """Whether the canonical value v can be written as union branch s."""
    s, ns = names.resolve(s, ns)
    t = s if isinstance(s, str) else s["type"]
    lt = None if isinstance(s, str) else s.get("logicalType")
    if t == "null":
        return v is None
    if t == "boolean":
        return isinstance(v, bool)
    if t in ("int", "long"):
        return is_int(v) if lt != "date" else isinstance(v, str)
    if t in ("float", "double"):
        return is_num(v)
    if t in ("string", "bytes", "enum"):
        if t == "enum":
            return isinstance(v, str) and v in s["symbols"]
        return isinstance(v, str)
    if t == "fixed":
        return isinstance(v, str)
    if t in ("record", "error", "map"):
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    return False


def avro_in(names, s, v, path, ns=""):
    """Canonical value v to what AvroSerializer (fastavro) writes for schema s."""
    s, ns = names.resolve(s, ns)
    if isinstance(s, list):
        for branch in s:
            if avro_fits(names, branch, ns, v):
                return avro_in(names, branch, v, path, ns)
        raise Failure(f"{path}: {dumps(v)[:80]} fits no branch of the union {dumps(s)[:120]}")
    t = s if isinstance(s, str) else s["type"]
    lt = None if isinstance(s, str) else s.get("logicalType")
    if v is None and t != "null":
        raise Failure(f"{path}: null for a non-null {t}")
    try:
        if t in ("record", "error"):
            ns = avro_namespace(s, ns)
            if not isinstance(v, dict):
                raise Failure(f"{path}: want an object for record {s['name']}")
            out = {}
            known = set()
            for f in s["fields"]:
                known.add(f["name"])
                if f["name"] in v:
                    out[f["name"]] = avro_in(names, f["type"], v[f["name"]], f"{path}.{f['name']}", ns)
                elif "default" not in f:
                    raise Failure(f"{path}.{f['name']}: missing (no default)")
            extra = sorted(set(v) - known)
            if extra:
                raise Failure(f"{path}: fields not in record {s['name']}: {', '.join(extra)}")
            return out
        if t == "array":
            return [avro_in(names, s["items"], x, f"{path}[{i}]", ns) for i, x in enumerate(v)]
        if t == "map":
            return {k: avro_in(names, s["values"], x, f"{path}.{k}", ns) for k, x in v.items()}
        if t == "enum":
            if v not in s["symbols"]:
                raise Failure(f"{path}: {v!r} is not a symbol of enum {s['name']}")
            return v
        if lt == "decimal" and t in ("bytes", "fixed"):
            return decimal.Decimal(str(v))
        if t in ("bytes", "fixed"):
            return unb64(v, path)
        if lt == "date":
            return dt.date.fromisoformat(v)
        if lt in ("time-millis", "time-micros", "timestamp-millis", "timestamp-micros",
                  "local-timestamp-millis", "local-timestamp-micros") and not is_int(v):
            raise Failure(f"{path}: want integer microseconds for {lt}")
        if lt in ("time-millis", "time-micros"):
            us = v
            if not 0 <= us < 86_400_000_000:
                raise Failure(f"{path}: {us} µs is not within a day")
            if lt == "time-millis" and us % 1000:
                raise Failure(f"{path}: {us} µs has sub-millisecond digits for time-millis")
            return (dt.datetime.min + dt.timedelta(microseconds=us)).time()
        if lt in ("timestamp-millis", "timestamp-micros"):
            if lt == "timestamp-millis" and v % 1000:
                raise Failure(f"{path}: {v} µs has sub-millisecond digits for timestamp-millis")
            return EPOCH_UTC + dt.timedelta(microseconds=v)
        if lt in ("local-timestamp-millis", "local-timestamp-micros"):
            if lt == "local-timestamp-millis" and v % 1000:
                raise Failure(f"{path}: {v} µs has sub-millisecond digits for {lt}")
            return EPOCH_NAIVE + dt.timedelta(microseconds=v)
        if lt == "uuid":
            return uuid.UUID(v)
        if t == "null":
            if v is not None:
                raise Failure(f"{path}: want null")
            return None
        if t == "boolean":
            if not isinstance(v, bool):
                raise Failure(f"{path}: want a boolean")
            return v
        if t in ("int", "long"):
            if not is_int(v):
                raise Failure(f"{path}: want an integer for {t}")
            return v
        if t in ("float", "double"):
            if not is_num(v):
                raise Failure(f"{path}: want a number for {t}")
            return float(v)
        if t == "string":
            if not isinstance(v, str):
                raise Failure(f"{path}: want a string")
            return v
    except (ValueError, TypeError, ArithmeticError, OverflowError) as e:
        raise Failure(f"{path}: {e}") from None
    raise Failure(f"{path}: unsupported Avro type {t!r}")


def avro_out(v):
    """What AvroDeserializer (fastavro) read to the canonical form, by Python type."""
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, decimal.Decimal):
        return decimal_text(v)
    if isinstance(v, (bytes, bytearray)):
        return b64(v)
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            return micros_of(v - EPOCH_NAIVE)
        return micros_of(v - EPOCH_UTC)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, dict):
        return {str(k): avro_out(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [avro_out(x) for x in v]
    raise Failure(f"avro: cannot put a {type(v).__name__} in the canonical form")


# ---------------------------------------------------------------------------
# Protobuf: classes generated at run time; canonical form <-> messages


def proto_imports(path):
    """The import paths of a .proto file (comments ignored)."""
    with open(path, encoding="utf-8") as f:
        text = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S)
    return re.findall(r'^\s*import\s+(?:public\s+|weak\s+)?"([^"]+)"\s*;', text, flags=re.M)


def is_builtin_proto(name):
    # The files the Confluent serializer treats as known types (it does not
    # register them as references when skip.known.types is on).
    return name.startswith(("google/protobuf/", "google/type/", "confluent/"))


def local_protos(path):
    """The .proto file at path and the non-builtin files it imports, recursively,
    as names relative to its directory."""
    root = os.path.dirname(os.path.abspath(path))
    seen, order = set(), []

    def walk(name):
        if name in seen:
            return
        seen.add(name)
        full = os.path.join(root, name)
        if not os.path.exists(full):
            raise Failure(f"protobuf: {name} (imported from {os.path.basename(path)}) not found in {root}")
        for imp in proto_imports(full):
            if not is_builtin_proto(imp):
                walk(imp)
        order.append(name)

    walk(os.path.basename(path))
    return root, order


def load_proto_module(path):
    """Generates Python classes for a .proto file (and its local imports) with
    grpc_tools.protoc into a temporary directory and imports them."""
    from grpc_tools import protoc

    root, files = local_protos(path)
    out = scratch("pb2-")
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    args = ["protoc", f"-I{root}", f"-I{include}", f"--python_out={out}"] + files
    if protoc.main(args) != 0:
        raise Failure(f"protobuf: protoc failed on {path} (see stderr)")
    sys.path.insert(0, out)
    name = files[-1][: -len(".proto")].replace("/", ".") + "_pb2"
    return importlib.import_module(name)


def message_classes(module):
    """Every message class of a generated module (nested included) by full name."""
    from google.protobuf.message_factory import GetMessageClass

    classes = {}

    def add(desc):
        classes[desc.full_name] = GetMessageClass(desc)
        for nested in desc.nested_types:
            if not nested.GetOptions().map_entry:
                add(nested)

    for desc in module.DESCRIPTOR.message_types_by_name.values():
        add(desc)
    return classes


WRAPPERS = {
    "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
    "google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
    "google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue",
}
JSON_WKT = {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}


def pb_scalar_in(f, v, path):
    from google.protobuf.descriptor import FieldDescriptor as FD

    t = f.type
    if t == FD.TYPE_BYTES:
        return unb64(v, path)
    if t == FD.TYPE_ENUM:
        if isinstance(v, str):
            ev = f.enum_type.values_by_name.get(v)
            if ev is None:
                raise Failure(f"{path}: {v!r} is not a value of enum {f.enum_type.full_name}")
            return ev.number
        if is_int(v):
            return v
        raise Failure(f"{path}: want an enum name or number")
    if t == FD.TYPE_BOOL:
        if not isinstance(v, bool):
            raise Failure(f"{path}: want a boolean")
        return v
    if t == FD.TYPE_STRING:
        if not isinstance(v, str):
            raise Failure(f"{path}: want a string")
        return v
    if t in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        if not is_num(v):
            raise Failure(f"{path}: want a number")
        return float(v)
    if not is_int(v):
        raise Failure(f"{path}: want an integer")
    return v


def pb_map_key_in(f, k, path):
    from google.protobuf.descriptor import FieldDescriptor as FD

    if f.type == FD.TYPE_STRING:
        return k
    if f.type == FD.TYPE_BOOL:
        if k not in ("true", "false"):
            raise Failure(f"{path}: map key {k!r} is not true or false")
        return k == "true"
    try:
        return int(k)
    except ValueError:
        raise Failure(f"{path}: map key {k!r} is not an integer") from None


def pb_fill(msg, v, path):
    """Sets message msg from the canonical value v."""
    from google.protobuf import json_format

    d = msg.DESCRIPTOR
    full = d.full_name
    try:
        if full in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            if not is_int(v):
                raise Failure(f"{path}: want integer microseconds for {full}")
            if full.endswith("Timestamp"):
                secs, us = divmod(v, 1_000_000)  # nanos are never negative
                msg.seconds, msg.nanos = secs, us * 1000
            else:
                sign = -1 if v < 0 else 1  # seconds and nanos share the sign
                secs, us = divmod(abs(v), 1_000_000)
                msg.seconds, msg.nanos = sign * secs, sign * us * 1000
            return
        if full in WRAPPERS:
            msg.value = pb_scalar_in(d.fields_by_name["value"], v, path)
            return
        if full in JSON_WKT:
            json_format.ParseDict(v, msg)
            return
    except (ValueError, TypeError, json_format.ParseError) as e:
        raise Failure(f"{path}: {e}") from None
    if not isinstance(v, dict):
        raise Failure(f"{path}: want an object for message {full}")
    msg.SetInParent()
    for name, x in v.items():
        f = d.fields_by_name.get(name)
        if f is None:
            raise Failure(f"{path}: message {full} has no field {name!r}")
        fp = f"{path}.{name}"
        if x is None:
            if f.has_presence:
                continue  # unset
            raise Failure(f"{fp}: null for a field without presence")
        try:
            if f.message_type is not None and f.message_type.GetOptions().map_entry:
                if not isinstance(x, dict):
                    raise Failure(f"{fp}: want an object for a map")
                kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
                m = getattr(msg, name)
                for k, mv in x.items():
                    key = pb_map_key_in(kf, k, fp)
                    if vf.message_type is not None:
                        pb_fill(m[key], mv, f"{fp}.{k}")
                    else:
                        m[key] = pb_scalar_in(vf, mv, f"{fp}.{k}")
            elif f.is_repeated:
                if not isinstance(x, list):
                    raise Failure(f"{fp}: want an array")
                r = getattr(msg, name)
                for i, item in enumerate(x):
                    if f.message_type is not None:
                        pb_fill(r.add(), item, f"{fp}[{i}]")
                    else:
                        r.append(pb_scalar_in(f, item, f"{fp}[{i}]"))
            elif f.message_type is not None:
                sub = getattr(msg, name)
                pb_fill(sub, x, fp)
                sub.SetInParent()
            else:
                setattr(msg, name, pb_scalar_in(f, x, fp))
        except (ValueError, TypeError) as e:
            raise Failure(f"{fp}: {e}") from None


def json_value_canon(v):
    """A Struct/Value's JSON with integral numbers as integers."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 2**53:
        return int(v)
    if isinstance(v, dict):
        return {k: json_value_canon(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_value_canon(x) for x in v]
    return v


def pb_scalar_out(f, v):
    from google.protobuf.descriptor import FieldDescriptor as FD

    if f.type == FD.TYPE_BYTES:
        return b64(v)
    if f.type == FD.TYPE_ENUM:
        ev = f.enum_type.values_by_number.get(v)
        return ev.name if ev is not None else v
    return v


def pb_out(msg):
    """Message msg in the canonical form."""
    from google.protobuf import json_format

    d = msg.DESCRIPTOR
    full = d.full_name
    if full == "google.protobuf.Timestamp":
        return msg.seconds * 1_000_000 + msg.nanos // 1000
    if full == "google.protobuf.Duration":
        return msg.seconds * 1_000_000 + int(msg.nanos / 1000)
    if full in WRAPPERS:
        return pb_scalar_out(d.fields_by_name["value"], msg.value)
    if full in JSON_WKT:
        return json_value_canon(json_format.MessageToDict(msg))
    if full == "google.protobuf.Any":
        raise Failure("protobuf: google.protobuf.Any has no canonical form here")
    out = {}
    for f in d.fields:
        x = getattr(msg, f.name)
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            out[f.name] = {
                (("true" if k else "false") if isinstance(k, bool) else str(k)):
                    (pb_out(mv) if vf.message_type is not None else pb_scalar_out(vf, mv))
                for k, mv in x.items()
            }
        elif f.is_repeated:
            out[f.name] = [pb_out(i) if f.message_type is not None else pb_scalar_out(f, i) for i in x]
        elif f.has_presence and not msg.HasField(f.name):
            out[f.name] = None
        elif f.message_type is not None:
            out[f.name] = pb_out(x)
        else:
            out[f.name] = pb_scalar_out(f, x)
    return out


# ---------------------------------------------------------------------------
# Serializers and deserializers, one per format


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class RegistryClient(SchemaRegistryClient):
    """Confluent's registry client, with Protobuf schemas always handed to the
    serdes as the base64 FileDescriptorProto they ask for with
    ?format=serialized.

    Confluent's registry answers format=serialized with that base64 text
    whatever form the schema was registered in. Apicurio's ccompat API does
    not: for a schema registered as a base64 descriptor (as Confluent's
    Python serializer registers them) it answers 500 (it parses the base64
    as .proto text), and for one registered as .proto text it answers with
    the descriptor's raw bytes in a JSON string, not base64. So this client
    never sends format=serialized: it takes the schema as stored and, when
    it is .proto text, compiles it (and its references) with protoc into the
    descriptor. The serdes' own logic (wire header, message indexes,
    parsing) is untouched.
    """

    def __init__(self, conf):
        super().__init__(conf)
        self._serialized = {}

    def get_schema(self, schema_id, subject_name=None, fmt=None, reference_format=None):
        s = super().get_schema(schema_id, subject_name, None, reference_format)
        return self._as_serialized(s) if fmt == "serialized" else s

    def get_version(self, subject_name, version="latest", deleted=False, fmt=None):
        rs = super().get_version(subject_name, version, deleted, None)
        return self._registered_as_serialized(rs) if fmt == "serialized" else rs

    def get_latest_version(self, subject_name, fmt=None):
        rs = super().get_latest_version(subject_name, None)
        return self._registered_as_serialized(rs) if fmt == "serialized" else rs

    def _registered_as_serialized(self, rs):
        return RegisteredSchema(schema_id=rs.schema_id, guid=rs.guid, subject=rs.subject,
                                version=rs.version, schema=self._as_serialized(rs.schema))

    def _as_serialized(self, schema):
        if schema.schema_type != "PROTOBUF" or proto_b64_descriptor(schema.schema_str) is not None:
            return schema
        key = (schema.schema_str, tuple((r.name, r.subject, r.version) for r in schema.references or []))
        if key not in self._serialized:
            self._serialized[key] = compile_proto_text(self, schema)
        return Schema(self._serialized[key], "PROTOBUF", schema.references, schema.metadata, schema.rule_set)


def proto_b64_descriptor(text):
    """The FileDescriptorProto text holds in base64, or None if it is not one."""
    from google.protobuf import descriptor_pb2

    if not text or not re.fullmatch(r"[A-Za-z0-9+/=\s]+", text):
        return None
    try:
        fdp = descriptor_pb2.FileDescriptorProto()
        fdp.ParseFromString(base64.b64decode(text, validate=False))
    except Exception:
        return None
    return fdp if fdp.name or fdp.message_type or fdp.package else None


def compile_proto_text(client, schema):
    """The base64 FileDescriptorProto of a schema registered as .proto text,
    compiled by protoc with its references fetched from the registry (text
    ones as files, base64 ones through --descriptor_set_in)."""
    from google.protobuf import descriptor_pb2
    from grpc_tools import protoc

    tmp = scratch("ref-")
    deps = descriptor_pb2.FileDescriptorSet()
    done = set()

    def put(refs):
        for ref in refs or []:
            if ref.name in done or is_builtin_proto(ref.name):
                continue
            done.add(ref.name)
            rs = SchemaRegistryClient.get_version(client, ref.subject, ref.version)
            put(rs.schema.references)
            fdp = proto_b64_descriptor(rs.schema.schema_str)
            if fdp is not None:
                fdp.name = ref.name
                deps.file.append(fdp)
            else:
                path = os.path.join(tmp, ref.name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(rs.schema.schema_str)

    put(schema.references)
    main_name = "interop_registered_schema.proto"
    with open(os.path.join(tmp, main_name), "w", encoding="utf-8") as f:
        f.write(schema.schema_str)
    include = str(importlib.resources.files("grpc_tools") / "_proto")
    out = os.path.join(tmp, "out.pb")
    args = ["protoc", f"-I{tmp}", f"-I{include}", f"--descriptor_set_out={out}"]
    if deps.file:
        with open(os.path.join(tmp, "deps.pb"), "wb") as f:
            f.write(deps.SerializeToString())
        args.append(f"--descriptor_set_in={os.path.join(tmp, 'deps.pb')}")
    if protoc.main(args + [main_name]) != 0:
        raise Failure("protobuf: protoc could not compile a schema from the registry (see stderr)")
    with open(out, "rb") as f:
        fds = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    return base64.standard_b64encode(fds.file[0].SerializeToString()).decode("ascii")


def registry_client(url):
    return RegistryClient({"url": url})


def serde_conf(args):
    """A serializer's configuration: the subject name strategy, and either
    auto-registration (the default) or the subject's latest version."""
    conf = {"subject.name.strategy.type": NAMING[args.subject_naming]}
    if getattr(args, "use_latest_version", False):
        conf["auto.register.schemas"] = False
        conf["use.latest.version"] = True
    else:
        conf["auto.register.schemas"] = True
    return conf


class ValueWriter:
    """Turns canonical values into Confluent wire-format bytes for one format."""

    def __init__(self, args, client):
        self.fmt = args.format
        conf = serde_conf(args)
        if self.fmt == "avro":
            text = read_text(args.schema)
            self.schema = json.loads(text)
            self.names = AvroNames(self.schema)
            self.ser = AvroSerializer(client, text, conf=conf)
        elif self.fmt == "json_schema":
            self.ser = JSONSerializer(read_text(args.schema), client, conf=conf)
        else:
            if args.proto_register_known_types:
                conf["skip.known.types"] = False
            self.classes = message_classes(load_proto_module(args.schema))
            self.default_message = args.proto_message or next(iter(self.classes))
            if self.default_message not in self.classes:
                raise Failure(f"protobuf: no message {self.default_message} in {args.schema} "
                              f"(have {', '.join(self.classes)})")
            self.conf = conf
            self.client = client
            self.sers = {}

    def __call__(self, rec, ctx, where):
        v = rec["value"]
        if v is None:
            return None
        if self.fmt == "avro":
            return self.ser(avro_in(self.names, self.schema, v, where), ctx)
        if self.fmt == "json_schema":
            return self.ser(v, ctx)
        name = rec.get("message") or self.default_message
        cls = self.classes.get(name)
        if cls is None:
            raise Failure(f"{where}: no message {name} in the schema")
        if name not in self.sers:
            self.sers[name] = ProtobufSerializer(cls, self.client, dict(self.conf))
        msg = cls()
        pb_fill(msg, v, where)
        return self.sers[name](msg, ctx)


class KeyCodec:
    """Keys: plain UTF-8 text, raw bytes, or Avro under the registry."""

    def __init__(self, args, client, writing):
        self.fmt = args.key_format
        if self.fmt == "avro":
            text = read_text(args.key_schema) if args.key_schema else '"string"'
            self.schema = json.loads(text)
            self.names = AvroNames(self.schema)
            if writing:
                self.ser = AvroSerializer(client, text, conf=serde_conf(args))
            else:
                self.de = AvroDeserializer(client, conf={"subject.name.strategy.type": NAMING[args.subject_naming]})
        elif self.fmt == "string":
            self.ser, self.de = StringSerializer("utf_8"), StringDeserializer("utf_8")

    def write(self, k, ctx, where):
        if k is None or self.fmt == "none":
            return None
        if self.fmt == "string":
            if not isinstance(k, str):
                raise Failure(f"{where}: want a string key")
            return self.ser(k, ctx)
        if self.fmt == "bytes":
            return unb64(k, where)
        return self.ser(avro_in(self.names, self.schema, k, where), ctx)

    def read(self, data, ctx):
        if data is None or self.fmt == "none":
            return None, None
        if self.fmt == "string":
            return self.de(data, ctx), None
        if self.fmt == "bytes":
            return b64(data), None
        return avro_out(self.de(data, ctx)), schema_id_of(data, ctx, "AVRO").id


def schema_id_of(data, ctx, schema_type):
    """The schema id (and message indexes) of a record's wire header, read with
    the Confluent client's own header reader."""
    sid = SchemaId(schema_type)
    dual_schema_id_deserializer(data, ctx, sid)
    return sid


class ValueReader:
    """Turns Confluent wire-format bytes into canonical values for one format."""

    def __init__(self, args, client):
        self.fmt = args.format
        self.client = client
        conf = {"subject.name.strategy.type": NAMING[args.subject_naming]}
        if self.fmt == "avro":
            self.de = AvroDeserializer(client, conf=conf)
        elif self.fmt == "json_schema":
            self.de = JSONDeserializer(None, schema_registry_client=client, conf=conf)
        else:
            if not args.schema:
                raise Failure("consume --format protobuf needs --schema (the .proto to generate classes from)")
            self.classes = message_classes(load_proto_module(args.schema))
            self.conf = conf
            self.des = {}
            self.writer_files = {}

    def writer_message(self, sid):
        """The full name of the message a record's indexes point at in its
        writer schema, as the registry has it."""
        from google.protobuf import descriptor_pb2

        if sid.id not in self.writer_files:
            s = self.client.get_schema(sid.id, fmt="serialized")
            fdp = descriptor_pb2.FileDescriptorProto()
            try:
                fdp.ParseFromString(base64.standard_b64decode(s.schema_str))
            except Exception as e:
                raise Failure(f"protobuf: schema {sid.id} from the registry is not a base64 "
                              f"FileDescriptorProto (format=serialized): {e}") from None
            self.writer_files[sid.id] = fdp
        fdp = self.writer_files[sid.id]
        msgs, names = fdp.message_type, []
        for i in sid.message_indexes or [0]:
            if i >= len(msgs):
                raise Failure(f"protobuf: message index {sid.message_indexes} out of range in schema {sid.id}")
            names.append(msgs[i].name)
            msgs = msgs[i].nested_type
        return ".".join(([fdp.package] if fdp.package else []) + names)

    def __call__(self, data, ctx):
        """(canonical value, schema id, extra fields)"""
        if data is None:
            return None, None, {}
        if self.fmt == "avro":
            return avro_out(self.de(data, ctx)), schema_id_of(data, ctx, "AVRO").id, {}
        if self.fmt == "json_schema":
            return self.de(data, ctx), schema_id_of(data, ctx, "JSON").id, {}
        sid = schema_id_of(data, ctx, "PROTOBUF")
        name = self.writer_message(sid)
        cls = self.classes.get(name)
        if cls is None:
            raise Failure(f"protobuf: the record is a {name} (schema {sid.id}, indexes {sid.message_indexes}), "
                          f"which --schema does not define")
        if name not in self.des:
            # The deserializer parses into the class it was built with,
            # whatever the record's indexes say, so there is one per message.
            self.des[name] = ProtobufDeserializer(cls, dict(self.conf), schema_registry_client=self.client)
        msg = self.des[name](data, ctx)
        return pb_out(msg), sid.id, {"message": name, "message_indexes": list(sid.message_indexes or [0])}


# ---------------------------------------------------------------------------
# Subcommands


def read_records(args):
    if args.generate is not None:
        return list(generate(args.format, args.generate, args.seed, args.proto_mix, args.base_time_ms))
    if not args.records:
        raise Failure("produce: give --records FILE (or -) or --generate N")
    f = sys.stdin if args.records == "-" else open(args.records, encoding="utf-8")
    with f:
        recs = []
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    recs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise Failure(f"{args.records}:{n}: {e}") from None
        return recs


def cmd_produce(args):
    client = registry_client(args.registry)
    writer = ValueWriter(args, client)
    keys = KeyCodec(args, client, writing=True)

    # Everything is serialized before anything is produced: a record the
    # serializer refuses leaves the topic untouched.
    msgs, schema_ids = [], set()
    for n, rec in enumerate(read_records(args), 1):
        where = f"record {n}"
        if not isinstance(rec, dict) or "value" not in rec:
            raise Failure(f"{where}: want an object with a \"value\"")
        headers = [(k, None if v is None else str(v).encode("utf-8")) for k, v in (rec.get("headers") or {}).items()]
        kctx = SerializationContext(args.topic, MessageField.KEY, headers)
        vctx = SerializationContext(args.topic, MessageField.VALUE, headers)
        try:
            key = keys.write(rec.get("key"), kctx, where + ".key")
            value = writer(rec, vctx, where + ".value")
        except Failure:
            raise
        except Exception as e:  # the serializers' and the registry's errors
            raise Failure(f"{where}: serialize: {type(e).__name__}: {e}") from None
        if value is not None:
            schema_ids.add(int.from_bytes(value[1:5], "big"))
        kw = {"key": key, "value": value, "headers": headers}
        if rec.get("timestamp_ms") is not None:
            kw["timestamp"] = int(rec["timestamp_ms"])
        if rec.get("partition") is not None:
            kw["partition"] = int(rec["partition"])
        msgs.append(kw)

    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": int(args.timeout * 1000),
    })
    errors, partitions = [], {}

    def delivered(err, msg):
        if err is not None:
            errors.append(f"{msg.topic()}[{msg.partition()}]: {err}")
        else:
            partitions[msg.partition()] = partitions.get(msg.partition(), 0) + 1

    for kw in msgs:
        while True:
            try:
                producer.produce(args.topic, on_delivery=delivered, **kw)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    left = producer.flush(args.timeout)
    if left:
        errors.append(f"{left} records not delivered within {args.timeout}s")
    if errors:
        raise Failure("produce: " + "; ".join(errors[:5]))
    ids = sorted(schema_ids)
    print(dumps({
        "topic": args.topic,
        "count": sum(partitions.values()),
        "schema_id": ids[0] if len(ids) == 1 else None,
        "schema_ids": ids,
        "partitions": {str(p): c for p, c in sorted(partitions.items())},
    }))


def cmd_consume(args):
    client = registry_client(args.registry)
    reader = ValueReader(args, client)
    keys = KeyCodec(args, client, writing=False)
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": f"interop-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "enable.partition.eof": False,
    })
    out = []
    try:
        md = consumer.list_topics(args.topic, timeout=min(args.timeout, 30))
        tmd = md.topics.get(args.topic)
        if tmd is None or tmd.error is not None:
            raise Failure(f"consume: topic {args.topic}: {tmd.error if tmd else 'not found'}")
        consumer.assign([TopicPartition(args.topic, p, -2) for p in sorted(tmd.partitions)])  # -2: beginning
        deadline = time.monotonic() + args.timeout
        linger_until = None
        while True:
            now = time.monotonic()
            if len(out) >= args.count and linger_until is None:
                linger_until = now + args.linger
            end = linger_until if linger_until is not None else deadline
            if now >= end:
                break
            msg = consumer.poll(min(0.5, end - now))
            if msg is None:
                continue
            if msg.error():
                raise Failure(f"consume: {msg.error()}")
            headers = msg.headers() or []
            kctx = SerializationContext(msg.topic(), MessageField.KEY, headers)
            vctx = SerializationContext(msg.topic(), MessageField.VALUE, headers)
            where = f"{msg.topic()}[{msg.partition()}]@{msg.offset()}"
            try:
                key, key_sid = keys.read(msg.key(), kctx)
                value, sid, extra = reader(msg.value(), vctx)
            except Failure as e:
                raise Failure(f"{where}: {e}") from None
            except Exception as e:
                raise Failure(f"{where}: deserialize: {type(e).__name__}: {e}") from None
            ts_type, ts = msg.timestamp()
            rec = {
                "topic": msg.topic(),
                "partition": msg.partition(),
                "offset": msg.offset(),
                "timestamp_ms": ts if ts_type else None,
                "key": key,
                "value": value,
                "headers": {k: (None if v is None else v.decode("utf-8", "backslashreplace")) for k, v in headers},
                "schema_id": sid,
            }
            if key_sid is not None:
                rec["key_schema_id"] = key_sid
            rec.update(extra)
            out.append(rec)
    finally:
        consumer.close()
    out.sort(key=lambda r: (r["partition"], r["offset"]))
    for rec in out:
        print(dumps(rec))
    sys.stdout.flush()
    if len(out) < args.count:
        raise TooFew(f"consume: read {len(out)} of {args.count} records from {args.topic} in {args.timeout}s")


def proto_register(client, path, subject, normalize):
    """Registers a .proto file's text under subject, its local imports first
    (each under its import path, as the Confluent serializer names them).
    Returns the RegisteredSchema."""
    root = os.path.dirname(os.path.abspath(path))

    def reg(name, subj):
        refs = []
        for imp in proto_imports(os.path.join(root, name)):
            if is_builtin_proto(imp):
                continue
            r = reg(imp, imp)
            refs.append(SchemaReference(imp, imp, r.version))
        schema = Schema(read_text(os.path.join(root, name)), "PROTOBUF", refs)
        client.register_schema(subj, schema, normalize_schemas=normalize)
        return client.lookup_schema(subj, schema, normalize_schemas=normalize)

    local_protos(path)  # checks every import is there
    return reg(os.path.basename(path), subject)


def cmd_register(args):
    client = registry_client(args.registry)
    if args.format == "protobuf":
        r = proto_register(client, args.schema, args.subject, args.normalize)
        sid, version = r.schema_id, r.version
    else:
        schema = Schema(read_text(args.schema), REGISTRY_TYPES[args.format])
        sid = client.register_schema(args.subject, schema, normalize_schemas=args.normalize)
        version = client.lookup_schema(args.subject, schema, normalize_schemas=args.normalize).version
    print(dumps({"id": sid, "subject": args.subject, "version": version}))


def cmd_generate(args):
    for rec in generate(args.format, args.count, args.seed, args.proto_mix, args.base_time_ms):
        print(dumps(rec))


# ---------------------------------------------------------------------------
# Deterministic source records


CUSTOMERS = ["ada", "Zoë", "Łukasz", "李小龙", "o'brien", "🚚 fleet", "", "x" * 40]
CITIES = ["Lisboa", "Zürich", "東京", "São Paulo", "Reykjavík"]
SKUS = ["SKU-1", "SKU-22", "ÄÖÜ-3", "sku/4"]


def dec_text(unscaled, scale):
    return decimal_text(decimal.Decimal(unscaled).scaleb(-scale))


def gen_avro(r, i):
    def line():
        return {"sku": r.choice(SKUS), "qty": r.randint(1, 50), "price": dec_text(r.randrange(-10**8 + 1, 10**8), 2)}

    return {
        "id": r.randrange(-2**62, 2**62),
        "customer": r.choice(CUSTOMERS),
        "qty": r.randint(-2**31, 2**31 - 1) if i % 7 == 0 else r.randint(0, 500),
        "price": round(r.uniform(0, 100000), 2),
        "weight": r.randrange(-400, 40000) / 4,
        "gift": r.random() < 0.5,
        "note_bytes": b64(r.randbytes(r.randrange(0, 12))),
        "code": b64(r.randbytes(4)),
        "status": r.choice(["NEW", "PAID", "SHIPPED"]),
        "amount": dec_text(r.randrange(-10**10 + 1, 10**10), 2),
        "rate": dec_text(r.randrange(-10**6 + 1, 10**6), 3),
        "placed_on": (dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-25000, 40000))).isoformat(),
        "open_time": r.randrange(0, 86_400_000) * 1000,
        "cutoff_time": r.randrange(0, 86_400_000_000),
        "created_ms": r.randrange(-2_000_000_000_000, 4_000_000_000_000) * 1000,
        "created_us": r.randrange(-2_000_000_000_000_000, 4_000_000_000_000_000),
        "local_ms": r.randrange(0, 4_000_000_000_000) * 1000,
        "order_uuid": str(uuid.UUID(int=r.getrandbits(128), version=4)),
        "coupon": r.choice([None, "", "SPRING-10"]),
        "ref": r.choice([None, r.randrange(-2**63, 2**63), "ext-" + str(i)]),
        "tags": {r.choice(["a", "b", "ç", "long key"]): r.randint(-2**31, 2**31 - 1) for _ in range(r.randrange(0, 4))},
        "lines": [line() for _ in range(r.randrange(0, 4))],
        "address": {"city": r.choice(CITIES), "zip": r.choice([None, "1000-001", ""])},
        "channel": r.choice(["web", "app", ""]),
    }


def gen_money(r):
    units = r.randrange(-10**12, 10**12)
    nanos = r.randrange(0, 10**9) * (1 if units >= 0 else -1)
    return {"currency": r.choice(["EUR", "USD", "JPY"]), "units": units, "nanos": nanos}


def gen_proto_line(r):
    return {"sku": r.choice(SKUS), "qty": r.randint(0, 50), "price": r.choice([None, gen_money(r)])}


def gen_proto_order(r, i):
    payment = r.choice(["card", "voucher", None])
    return {
        "id": r.randrange(-2**63, 2**63),
        "qty": r.randint(-2**31, 2**31 - 1),
        "delta": r.randint(-2**31, 2**31 - 1),
        "drift": r.randrange(-2**63, 2**63),
        "small": r.randrange(0, 2**32),
        "big": r.randrange(2**63, 2**64) if i % 3 == 0 else r.randrange(0, 2**40),
        "code32": r.randrange(0, 2**32),
        "code64": r.randrange(0, 2**64),
        "offset32": r.randint(-2**31, 2**31 - 1),
        "offset64": r.randrange(-2**63, 2**63),
        "price": round(r.uniform(-1000, 100000), 2),
        "weight": r.randrange(-400, 40000) / 4,
        "gift": r.random() < 0.5,
        "customer": r.choice(CUSTOMERS),
        "note": b64(r.randbytes(r.randrange(0, 12))),
        "status": r.choice(["STATUS_UNSPECIFIED", "NEW", "PAID", "SHIPPED"]),
        "lines": [gen_proto_line(r) for _ in range(r.randrange(0, 4))],
        "ids": [r.randrange(-2**63, 2**63) for _ in range(r.randrange(0, 4))],
        "tags": {r.choice(["a", "b", "ç", ""]): r.randint(-2**31, 2**31 - 1) for _ in range(r.randrange(0, 4))},
        "names_by_id": {str(r.randrange(-2**63, 2**63)): r.choice(CUSTOMERS) for _ in range(r.randrange(0, 3))},
        "card": gen_money(r) if payment == "card" else None,
        "voucher": r.choice(["", "V-1", "V-ü"]) if payment == "voucher" else None,
        "coupon": r.choice([None, "", "SPRING-10"]),
        "placed_at": r.choice([None, r.randrange(-62_135_596_800_000_000, 253_402_300_799_999_999)]),
        "ttl": r.choice([None, r.randrange(-10**12, 10**12)]),
        "parent_id": r.choice([None, 0, r.randrange(-2**63, 2**63)]),
        "note_text": r.choice([None, "", "fragile ☂"]),
        "meta": r.choice([None, {}, {"n": r.randint(-1000, 1000), "f": 0.5, "s": "x", "b": True, "z": None,
                                     "l": [1, "two", False, None], "o": {"deep": [1.25]}}]),
        "labels": r.choice([None, [], ["a", 1, True, None, {"k": "v"}]]),
    }


def gen_proto(r, i, mix):
    if mix and i % 10 == 3:
        return "sharerelay.test.Refund", {
            "order_id": r.randrange(-2**63, 2**63),
            "amount": r.choice([None, gen_money(r)]),
            "reason": r.choice(["", "damaged", "late ⏰"]),
            "at": r.choice([None, r.randrange(0, 4_000_000_000_000_000)]),
        }
    if mix and i % 10 == 7:
        return "sharerelay.test.Order.Line", gen_proto_line(r)
    return "sharerelay.test.Order", gen_proto_order(r, i)


def gen_json(r, i):
    v = {
        "id": r.randrange(-2**63, 2**63),
        "customer": r.choice([c for c in CUSTOMERS if c]),
        "qty": r.randint(0, 2**31 - 1),
        "price": round(r.uniform(0, 100000), 2),
        "status": r.choice(["NEW", "PAID", "SHIPPED"]),
        "amount": dec_text(r.randrange(-10**10 + 1, 10**10), 2),
        "placed_at": (EPOCH_UTC + dt.timedelta(microseconds=r.randrange(0, 4_000_000_000_000_000)))
        .isoformat().replace("+00:00", "Z"),
        "lines": [{"sku": r.choice(SKUS), "qty": r.randint(1, 50), "price": dec_text(r.randrange(-10**8 + 1, 10**8), 2)}
                  for _ in range(r.randrange(0, 4))],
        "address": {"city": r.choice(CITIES)} if r.random() < 0.3 else {"city": r.choice(CITIES), "zip": r.choice([None, "1000-001"])},
    }
    optional = {
        "weight": r.randrange(-400, 40000) / 4,
        "gift": r.random() < 0.5,
        "note_bytes": b64(r.randbytes(r.randrange(0, 12))),
        "placed_on": (dt.date(1970, 1, 1) + dt.timedelta(days=r.randint(-25000, 40000))).isoformat(),
        "order_uuid": str(uuid.UUID(int=r.getrandbits(128), version=4)),
        "coupon": r.choice([None, "", "SPRING-10"]),
        "ref": r.choice([None, r.randrange(-2**63, 2**63), "ext-" + str(i)]),
        "tags": {r.choice(["a", "b", "ç"]): r.randint(-1000, 1000) for _ in range(r.randrange(0, 3))},
        "channel": r.choice(["web", "app"]),
    }
    for k, x in optional.items():
        if r.random() < 0.7:
            v[k] = x
    return v


def generate(fmt, n, seed, mix=False, base_time_ms=None):
    """n source records of format fmt, the same for the same (n, seed, mix)."""
    r = random.Random(f"{fmt}:{seed}")
    for i in range(n):
        message = None
        if fmt == "avro":
            value = gen_avro(r, i)
        elif fmt == "protobuf":
            message, value = gen_proto(r, i, mix)
        else:
            value = gen_json(r, i)
        rec = {"key": f"order-{i:06d}", "value": value, "headers": {"seq": str(i), "origin": "interop ✓"}}
        if message is not None:
            rec["message"] = message
        if base_time_ms is not None:
            rec["timestamp_ms"] = base_time_ms + i
        yield rec


# ---------------------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(prog="interop.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(sp, kafka=True, registry=True):
        if kafka:
            sp.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
            sp.add_argument("--topic", required=True)
        if registry:
            sp.add_argument("--registry", required=True, help="schema registry URL (Confluent API)")
        sp.add_argument("--format", required=True, choices=FORMATS)

    def gen_flags(sp):
        sp.add_argument("--seed", type=int, default=1)
        sp.add_argument("--proto-mix", action="store_true",
                        help="protobuf: make every 10th record from the 4th a Refund (index [1]) "
                             "and from the 8th an Order.Line (index [0,0])")
        sp.add_argument("--base-time-ms", type=int, help="give record i the Kafka timestamp base+i")

    def naming(sp):
        sp.add_argument("--subject-naming", choices=sorted(NAMING), default="topic",
                        help="subject name strategy (default topic: <topic>-value)")

    def keys(sp):
        sp.add_argument("--key-format", choices=KEY_FORMATS, default="string")
        sp.add_argument("--key-schema", help="Avro schema file of the key (default: \"string\")")

    sp = sub.add_parser("produce", help="serialize and produce records")
    common(sp)
    sp.add_argument("--schema", required=True, help=".avsc, .proto or JSON Schema file")
    sp.add_argument("--proto-message", help="protobuf: full name of the default message")
    sp.add_argument("--proto-register-known-types", action="store_true",
                    help="protobuf: skip.known.types=false (register google/protobuf/*.proto as references)")
    sp.add_argument("--use-latest-version", action="store_true",
                    help="do not register: write with the subject's latest version (one `register` made)")
    sp.add_argument("--records", help="JSON lines file, - for stdin")
    sp.add_argument("--generate", type=int, metavar="N", help="produce N generated records instead of --records")
    gen_flags(sp)
    naming(sp)
    keys(sp)
    sp.add_argument("--timeout", type=float, default=60, help="seconds to deliver everything")
    sp.set_defaults(func=cmd_produce)

    sp = sub.add_parser("consume", help="read and deserialize records")
    common(sp)
    sp.add_argument("--schema", help="protobuf: the .proto to generate classes from")
    sp.add_argument("--count", type=int, required=True, help="records to read (fewer is an error)")
    sp.add_argument("--timeout", type=float, default=60, help="seconds to read --count records")
    sp.add_argument("--linger", type=float, default=0,
                    help="seconds to keep reading after --count, to see records beyond it")
    naming(sp)
    keys(sp)
    sp.set_defaults(func=cmd_consume)

    sp = sub.add_parser("register", help="register a schema; prints its id")
    common(sp, kafka=False)
    sp.add_argument("--subject", required=True)
    sp.add_argument("--schema", required=True)
    sp.add_argument("--normalize", action="store_true", help="ask the registry to normalize the schema")
    sp.set_defaults(func=cmd_register)

    sp = sub.add_parser("generate", help="print N deterministic source records")
    common(sp, kafka=False, registry=False)
    sp.add_argument("--count", type=int, required=True)
    gen_flags(sp)
    sp.set_defaults(func=cmd_generate)

    args = p.parse_args(argv)
    try:
        args.func(args)
    except Failure as e:
        print(f"interop {args.cmd}: {e}", file=sys.stderr)
        return e.status
    except KafkaException as e:
        print(f"interop {args.cmd}: kafka: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
