"""Calibration: predictions for hand-counted graphs, and rescoring a committed run's rows."""
import torch
import torch.nn.functional as F

import bench.scripts.calibrate as calibrate
from eqsat.cost import CostModel


def pointwise_chain():
    """sigmoid(relu(x)): Inductor fuses the chain into one kernel, nothing extern."""
    return torch.fx.symbolic_trace(lambda x: torch.sigmoid(torch.relu(x))), [torch.randn(64, 128)]


def linear_then_relu():
    """relu(linear(x)): one extern matmul, then one pointwise kernel."""
    w = torch.nn.Parameter(torch.randn(32, 128), requires_grad=False)
    b = torch.nn.Parameter(torch.randn(32), requires_grad=False)
    gm = torch.fx.symbolic_trace(lambda x, w, b: torch.relu(F.linear(x, w, b)))
    return gm, [torch.randn(64, 128), w, b]


def test_predicted_kernels_of_hand_counted_graphs():
    model = CostModel.for_device("cuda")
    assert calibrate.predict(*pointwise_chain(), model)[0].kernels == 1
    cost, _ = calibrate.predict(*linear_then_relu(), model)
    assert (cost.generated, cost.extern) == (1, 1)


def test_rescore_pairs_todays_prediction_with_the_measured_launches(tmp_path, monkeypatch):
    graphs = {3: pointwise_chain, 5: linear_then_relu}
    monkeypatch.setattr(calibrate, "random_graph", lambda seed: graphs[seed]())
    run = tmp_path / "calibrate.txt"
    run.write_text("== calibrate\n"
                   "  random/3                 terms=  16 predicted=  9 measured=  2 (extern 0/0)  0.008 ms\n"
                   "  random/5                 terms=  13 predicted=  9 measured=  7 (extern 1/1)  0.109 ms\n")
    rows = calibrate.rescore(str(run), "cuda", CostModel.for_device("cuda"))
    assert [(r.name, r.predicted, r.measured, r.extern_pred, r.extern_meas, r.ms) for r in rows] == [
        ("random/3", 1, 2, 0, 0, 0.008), ("random/5", 2, 7, 1, 1, 0.109)]


class LinearSigmoid(torch.nn.Module):
    """sigmoid(x @ w.T), hand-counted: forward one mm and one pointwise kernel; backward one pointwise
    kernel (the sigmoid's gradient) and two mm (the input's and the weight's gradients)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 32, bias=False)

    def forward(self, x):
        return torch.sigmoid(self.lin(x))


def test_training_step_rows_price_and_measure_the_aten_forward_and_backward(monkeypatch):
    # eqsat's backend only (a compile per backend costs seconds): its post-grad pass runs the pricing pass after its own
    monkeypatch.setattr(calibrate, "TRAIN_BACKENDS", {"eqsat/": calibrate.TRAIN_BACKENDS["eqsat/"]})
    rows = calibrate.calibrate_train([("tiny", LinearSigmoid(), (torch.randn(16, 64),))], "cpu",
                                     CostModel.for_device("cpu"))
    got = {r.name: (r.predicted - r.extern_pred, r.extern_pred, r.measured, r.extern_meas) for r in rows}
    assert got == {"tiny/eqsat/fwd": (1, 1, 2, 1), "tiny/eqsat/bwd": (1, 2, 3, 2)}


def test_launch_names_read_the_kernel_kinds_of_a_wrapper():
    from bench import inductor_metrics

    code = ("def triton_poi_fused_add_0(): pass\n"
            "def call(args):\n"
            "    triton_poi_fused_add_0.run(buf0, grid=grid(64))\n"
            "    triton_per_fused_sum_1.run(buf1, buf2)\n"
            "    buf3 = extern_kernels.mm(buf2, arg0_1)\n"
            "    extern_kernels.bmm(buf3, buf4, out=buf5)\n"
            "    cpp_fused_mul_2(buf5)\n"
            "    buf6 = torch.ops.aten.sort.default(buf5)\n")
    assert sorted(inductor_metrics.launch_names(code)) == [
        "aten.sort", "bmm", "cpp", "mm", "triton_per", "triton_poi"]


def test_rescore_traces_training_rows_again_and_pairs_them_by_name(tmp_path, monkeypatch):
    # Inductor's input programs only (one compile); the committed run measured other programs (terms)
    monkeypatch.setattr(calibrate, "TRAIN_BACKENDS", {"": calibrate.TRAIN_BACKENDS[""]})
    monkeypatch.setattr(calibrate, "model_builds",
                        lambda device, only: [(n, LinearSigmoid(), (torch.randn(16, 64),)) for n in only])
    run = tmp_path / "jobs.txt"
    run.write_text("== calibrate_train\n"
                   "  tiny/fwd                 terms=9999 predicted=  9 measured=  2 (extern 7/1)  nan ms\n"
                   "      predicted: pointwise 1, mm 1\n"
                   "  tiny/bwd                 terms=9999 predicted=  9 measured=  3 (extern 7/2)  nan ms\n")
    rows = calibrate.rescore(str(run), "cuda", CostModel.for_device("cuda"))
    got = {r.name: (r.predicted - r.extern_pred, r.extern_pred, r.measured, r.extern_meas, r.measured_terms)
           for r in rows}
    assert got == {"tiny/fwd": (1, 1, 2, 1, 9999), "tiny/bwd": (1, 2, 3, 2, 9999)}
    assert all(r.terms != r.measured_terms for r in rows)  # another program: summarised apart
