# Reads `vpnctl metrics` output (argv[1]) with prometheus_client's text parser and
# `vpnctl status --json` output (argv[2]) with json, checks the JSON's form (sorted keys,
# no escaped slashes, the schema vpnctl documents (argv[3]), hex marks) and that every
# profile's metrics agree with it, then prints each sample as a JSON line: name, labels,
# type, value.
import json, re, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
raw = open(sys.argv[2]).read()
def sorted_hook(pairs):
    keys = [k for k, _ in pairs]
    assert keys == sorted(keys), "keys out of order: %r" % keys
    return dict(pairs)
status = json.loads(raw, object_pairs_hook=sorted_hook)
assert "\\/" not in raw, "escaped slash"
assert status["schema"] == int(sys.argv[3]), (status["schema"], sys.argv[3])
samples = {}
for family in text_string_to_metric_families(text):
    for s in family.samples:
        samples[(s.name, tuple(sorted(s.labels.items())))] = (family.type, s.value)
for p in status["profiles"]:
    assert re.fullmatch(r"0x[0-9a-f]+", p["mark"]), p["mark"]
    label = (("profile", p["name"]),)
    for name, key in [("sent", "sent"), ("received", "received"), ("tunneled", "throughTunnel"), ("killswitch_dropped", "droppedByKillswitch")]:
        kind, value = samples[("vpnexec_profile_%s_packets_total" % name, label)]
        assert kind == "counter" and value >= p[key]["packets"], (name, value, p[key])
    assert samples[("vpnexec_profile_members", label)] == ("gauge", p["members"])
    tunnel = (("interface", p["tunnel"]["interface"]), ("profile", p["name"]))
    assert samples[("vpnexec_tunnel_up", tunnel)] == ("gauge", 1 if p["tunnel"]["state"] == "up" else 0)
for key, (kind, value) in sorted(samples.items()):
    print(json.dumps({"name": key[0], "labels": dict(key[1]), "type": kind, "value": value}))
