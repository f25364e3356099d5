# JSON documents made, written and read back: the json module's Python-level work and
# dict/list building.
import json


def document(seed):
    return {
        "id": seed,
        "name": f"item-{seed}",
        "tags": [f"t{(seed * k) % 17}" for k in range(6)],
        "price": seed * 1.25,
        "stock": {"here": seed % 13, "there": (seed * 3) % 7, "ok": seed % 2 == 0},
        "notes": None if seed % 5 else "five",
    }


def work():
    docs = [document(i) for i in range(3000)]
    text = json.dumps(docs, sort_keys=True)
    total = 0
    for _ in range(8):
        back = json.loads(text)
        total += sum(d["stock"]["here"] for d in back)
        text = json.dumps(back, sort_keys=True)
    return f"{len(text)} {total}"
