#!/usr/bin/env python3
"""check_report_formats.py - validates heapcheck's report files.

usage:
  check_report_formats.py json FILE                 every line against the schema
  check_report_formats.py sarif FILE                SARIF 2.1.0 fields code scanning needs
  check_report_formats.py svg FILE JSON CHECK       flame graph of check CHECK: XML, self-contained,
                                                    frames and total equal to the JSON report's
  check_report_formats.py folded FILE JSON CHECK    folded stacks equal to the JSON report's records
  check_report_formats.py profile-svg FILE FUNC...  heap-profile flame graph naming FUNC...
  check_report_formats.py render SVG PLAIN.png ZOOMED.png FRAME
                                                    screenshots of SVG: PLAIN shows each frame's colour
                                                    inside its rectangle; ZOOMED (loaded with
                                                    ?z=FRAME&s=FRAME) shows FRAME zoomed to the full
                                                    width and highlighted by the search
Prints what it checked; exits 1 with "FAIL: ..." lines on any mismatch.
The schema below is the one documented in docs/report-formats.md.
"""
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


# ---- a small validator for the documented schema ----
# A type is: a Python type, a tuple of alternatives (None = null), a dict
# (object with exactly these keys), or a one-element list (array of it).
HEX = "hex"
FRAME = {"address": HEX, "module": str, "offset": HEX, "function": (str, None),
         "function_offset": (int, None), "file": (str, None), "line": (int, None)}
RECORD = {"kind": ("direct", "indirect"), "bytes": int, "objects": int, "stack_id": int,
          "suppression": (str, None), "frames": [FRAME]}
TOTALS = {k: int for k in ("leaked_bytes", "leaked_objects", "direct_bytes", "direct_objects",
                           "indirect_bytes", "indirect_objects", "records", "reachable_bytes",
                           "reachable_objects")}
CHECK = {"schema": ("heapcheck-leak-check/1",), "tool": ("heapcheck",), "program": str, "pid": int,
         "time": int, "check": str, "mode": str, "whole_program": bool, "totals": TOTALS,
         "leaks": [RECORD]}


def conforms(v, t, path):
    if t == HEX:
        if not (isinstance(v, str) and re.fullmatch(r"0x[0-9a-f]+", v)):
            fail(f"{path}: {v!r} is not a hex string")
    elif isinstance(t, dict):
        if not isinstance(v, dict):
            fail(f"{path}: not an object")
            return
        if set(v) != set(t):
            fail(f"{path}: keys {sorted(v)} != {sorted(t)}")
        for k in t:
            if k in v:
                conforms(v[k], t[k], f"{path}.{k}")
    elif isinstance(t, list):
        if not isinstance(v, list):
            fail(f"{path}: not an array")
            return
        for i, e in enumerate(v):
            conforms(e, t[0], f"{path}[{i}]")
    elif isinstance(t, tuple):
        ok = False
        for alt in t:
            if alt is None:
                ok = ok or v is None
            elif isinstance(alt, str):
                ok = ok or v == alt
            else:
                ok = ok or (isinstance(v, alt) and not (alt is int and isinstance(v, bool)))
        if not ok:
            fail(f"{path}: {v!r} is not one of {t}")
    elif t is int:
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            fail(f"{path}: {v!r} is not a non-negative integer")
    elif not isinstance(v, t):
        fail(f"{path}: {v!r} is not {t.__name__}")


def load_json_lines(path):
    docs = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                docs.append(json.loads(line))
            except ValueError as e:
                fail(f"{path}:{n}: not JSON: {e}")
    return docs


def check_json(path):
    docs = load_json_lines(path)
    if not docs:
        fail(f"{path}: no document")
    for i, d in enumerate(docs):
        conforms(d, CHECK, f"doc[{i}]")
        if failures:
            continue
        t, leaks = d["totals"], d["leaks"]
        if t["records"] != len(leaks):
            fail(f"doc[{i}]: records {t['records']} != {len(leaks)} leaks")
        for kind in ("direct", "indirect"):
            b = sum(r["bytes"] for r in leaks if r["kind"] == kind)
            o = sum(r["objects"] for r in leaks if r["kind"] == kind)
            if (b, o) != (t[kind + "_bytes"], t[kind + "_objects"]):
                fail(f"doc[{i}]: {kind} totals {t[kind + '_bytes']}/{t[kind + '_objects']} != records {b}/{o}")
        if t["leaked_bytes"] != t["direct_bytes"] + t["indirect_bytes"]:
            fail(f"doc[{i}]: leaked_bytes is not direct + indirect")
        print(f"json doc {i}: check {d['check']}: {t['leaked_bytes']} bytes in {t['leaked_objects']} objects, "
              f"{len(leaks)} records")
    return docs


def check_sarif(path):
    with open(path, encoding="utf-8") as f:
        log = json.load(f)
    if log.get("version") != "2.1.0":
        fail("version is not 2.1.0")
    if not isinstance(log.get("runs"), list) or not log["runs"]:
        fail("no runs")
        return
    for i, run in enumerate(log["runs"]):
        drv = run.get("tool", {}).get("driver", {})
        if drv.get("name") != "heapcheck":
            fail(f"runs[{i}].tool.driver.name")
        rules = [r.get("id") for r in drv.get("rules", [])]
        for r in drv.get("rules", []):
            if not r.get("shortDescription", {}).get("text"):
                fail(f"runs[{i}] rule {r.get('id')} has no shortDescription.text")
        for k, res in enumerate(run.get("results", [])):
            where = f"runs[{i}].results[{k}]"
            if res.get("ruleId") not in rules:
                fail(f"{where}.ruleId {res.get('ruleId')!r} not among the rules {rules}")
            if rules.index(res.get("ruleId", "")) != res.get("ruleIndex", -1) if res.get("ruleId") in rules else False:
                fail(f"{where}.ruleIndex does not match")
            if res.get("level") not in ("error", "warning", "note", "none"):
                fail(f"{where}.level")
            if not res.get("message", {}).get("text"):
                fail(f"{where}.message.text missing")
            locs = res.get("locations", [])
            if not locs:
                fail(f"{where}.locations empty")
                continue
            pl = locs[0].get("physicalLocation", {})
            uri = pl.get("artifactLocation", {}).get("uri")
            line = pl.get("region", {}).get("startLine")
            if not uri or not isinstance(line, int) or line < 1:
                fail(f"{where}: no physicalLocation uri/startLine ({uri!r}, {line!r})")
            base = pl.get("artifactLocation", {}).get("uriBaseId")
            if base and base not in run.get("originalUriBaseIds", {}):
                fail(f"{where}: uriBaseId {base} not in originalUriBaseIds")
            if not uri.startswith("file://") and not base:
                fail(f"{where}: relative uri {uri!r} without uriBaseId")
        print(f"sarif run {i}: {run.get('automationDetails', {}).get('id')}: {len(run.get('results', []))} results")


def frame_name(fr):
    if fr["function"]:
        return fr["function"]
    return fr["module"].rsplit("/", 1)[-1] + "+" + fr["offset"]


def find_check(jpath, name):
    for d in load_json_lines(jpath):
        if d["check"] == name:
            return d
    fail(f"{jpath}: no check {name}")
    return None


def svg_frames(path):
    tree = ET.parse(path)
    root = tree.getroot()
    ns = "{http://www.w3.org/2000/svg}"
    if root.tag != ns + "svg":
        fail(f"root element is {root.tag}")
    # Self-contained: no element refers to anything outside the file.
    for el in root.iter():
        for k, v in el.attrib.items():
            if k.endswith("href") or k == "src":
                fail(f"external reference {k}={v}")
    scripts = [el for el in root.iter(ns + "script")]
    if len(scripts) != 1 or "hcZoom" not in (scripts[0].text or "") or "hcSearch" not in scripts[0].text:
        fail("no inline script with zoom and search")
    for ident in ("search", "unzoom", "details", "matched", "title"):
        if root.find(f".//*[@id='{ident}']") is None:
            fail(f"no element with id {ident}")
    frames = []
    for g in root.iter(ns + "g"):
        if g.get("class") != "f":
            continue
        r = g.find(ns + "rect")
        t = g.find(ns + "title")
        frames.append({"name": g.get("data-name"), "depth": int(g.get("data-depth")),
                       "x": float(r.get("x")), "w": float(r.get("width")), "title": t.text or ""})
    return frames


def check_tree(frames, total):
    root = [f for f in frames if f["depth"] == 0]
    if len(root) != 1 or root[0]["name"] != "all":
        fail("no single root frame 'all'")
        return
    m = re.match(r"all \((\d+) bytes", root[0]["title"])
    if not m or int(m.group(1)) != total:
        fail(f"root title {root[0]['title']!r} does not give the total {total}")
    # Children lie within their parent's span (one level up, overlapping x).
    for f in frames:
        if f["depth"] == 0:
            continue
        parents = [p for p in frames if p["depth"] == f["depth"] - 1 and p["x"] - 0.02 <= f["x"]
                   and f["x"] + f["w"] <= p["x"] + p["w"] + 0.05]
        if not parents:
            fail(f"frame {f['name']} at depth {f['depth']} has no parent under it")


def check_svg(path, jpath, name):
    d = find_check(jpath, name)
    frames = svg_frames(path)
    if d is None:
        return
    names = {f["name"] for f in frames}
    want = {frame_name(fr) for r in d["leaks"] for fr in r["frames"]}
    if want - names:
        fail(f"frames of the report missing from the SVG: {sorted(want - names)}")
    if names - want - {"all"}:
        fail(f"SVG frames not in the report: {sorted(names - want - {'all'})}")
    check_tree(frames, d["totals"]["leaked_bytes"])
    print(f"svg {path}: {len(frames)} frames, total {d['totals']['leaked_bytes']}, names = the report's")


def check_folded(path, jpath, name):
    d = find_check(jpath, name)
    if d is None:
        return
    got = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, _, value = line.rstrip("\n").rpartition(" ")
            got.append((stack, int(value)))
    want = [(";".join(frame_name(fr).replace(";", ":") for fr in reversed(r["frames"])), r["bytes"])
            for r in d["leaks"]]
    if sorted(got) != sorted(want):
        fail(f"folded stacks differ from the report:\n got  {sorted(got)}\n want {sorted(want)}")
    print(f"folded {path}: {len(got)} stacks = the report's records")


def check_profile_svg(path, funcs):
    frames = svg_frames(path)
    names = {f["name"] for f in frames}
    for fn in funcs:
        if fn not in names:
            fail(f"profile flame graph lacks {fn}")
    root = [f for f in frames if f["depth"] == 0]
    if root:
        m = re.match(r"all \((\d+) bytes", root[0]["title"])
        if m:
            check_tree(frames, int(m.group(1)))
    print(f"profile svg {path}: {len(frames)} frames")


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {ctype}, interlace {interlace})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def near(c1, c2, tol=12):
    return all(abs(a - b) <= tol for a, b in zip(c1, c2))


def check_render(svg, plain, zoomed, frame):
    tree = ET.parse(svg)
    ns = "{http://www.w3.org/2000/svg}"
    rects = {}
    for g in tree.getroot().iter(ns + "g"):
        if g.get("class") == "f":
            r = g.find(ns + "rect")
            fill = tuple(int(v) for v in re.findall(r"\d+", r.get("fill")))
            rects.setdefault(g.get("data-name"), (float(r.get("x")), float(r.get("y")), float(r.get("width")), fill))
    if frame not in rects or "all" not in rects:
        fail(f"{svg}: no frame {frame} or all")
        return
    _, _, px = read_png(plain)
    shown = 0
    for name, (x, y, w, fill) in rects.items():
        if w < 4:
            continue
        # a pixel inside the rectangle, away from its label and border
        cx, cy = int(x + w - 2), int(y + 2)
        if near(px[cy][cx], fill):
            shown += 1
        else:
            fail(f"{plain}: frame {name} at ({cx},{cy}) is {px[cy][cx]}, not its colour {fill}")
    print(f"render {plain}: {shown} frames drawn in their colours")
    _, _, pz = read_png(zoomed)
    x, y, w, fill = rects[frame]
    purple = (200, 60, 220)
    right = int(rects["all"][0] + rects["all"][2] - 3)
    if not near(pz[int(y + 2)][right], purple, 20):
        fail(f"{zoomed}: {frame} is not zoomed to the full width and highlighted "
             f"(pixel ({right},{int(y + 2)}) is {pz[int(y + 2)][right]})")
    ax, ay, aw, afill = rects["all"]
    if near(pz[int(ay + 2)][int(ax + aw - 2)], afill, 3):
        fail(f"{zoomed}: the ancestor 'all' is not dimmed")
    print(f"render {zoomed}: {frame} zoomed, highlighted; ancestors dimmed")


def main(argv):
    if len(argv) < 3:
        print(__doc__)
        return 2
    what, path = argv[1], argv[2]
    try:
        if what == "json":
            check_json(path)
        elif what == "sarif":
            check_sarif(path)
        elif what == "svg":
            check_svg(path, argv[3], argv[4])
        elif what == "folded":
            check_folded(path, argv[3], argv[4])
        elif what == "profile-svg":
            check_profile_svg(path, argv[3:])
        elif what == "render":
            check_render(path, argv[3], argv[4], argv[5])
        else:
            print(__doc__)
            return 2
    except (OSError, ValueError, ET.ParseError, KeyError, TypeError) as e:
        fail(f"{what} {path}: {type(e).__name__}: {e}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
