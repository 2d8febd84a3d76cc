"""Our artifacts in torch's structured trace (what ``tlparse`` reads): the report, the graph before
and after and the e-graph statistics, per graph."""
import json

PROGRAM = """
import torch
def f(x):
    return torch.cat([torch.sigmoid(p) for p in torch.split(x, 4, dim=1)], dim=1)
torch.compile(f, backend="eqsat", options={"inner": "eager"})(torch.randn(8, 16))
"""


def test_torch_trace_holds_our_artifacts(tmp_path, fresh_python):
    fresh_python(PROGRAM, TORCH_TRACE=str(tmp_path / "trace"))
    (log,) = (tmp_path / "trace").glob("*.log")
    artifacts = {}
    for line in log.read_text().splitlines():
        if '"artifact"' in line and line.lstrip()[:1] not in ("", "\t"):
            head = json.loads(line[line.index("{"):])
            artifacts[head["artifact"]["name"]] = head["artifact"]["encoding"]
    assert {k: v for k, v in artifacts.items() if k.startswith("eqsat")} == {
        "eqsat_graph_before": "string", "eqsat_graph_after": "string", "eqsat_report": "json",
        "eqsat_egraph_stats": "json"}
    text = log.read_text()
    assert "\"rules_fired\"" in text and "functional.split(" in text  # payloads: the report, the graph before
