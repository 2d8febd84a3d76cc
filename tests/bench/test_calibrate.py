"""Calibration: predictions for the seeded random corpus, and rescoring a committed run's rows."""
from bench.calibrate import predict, random_graph, rescore
from eqsat.cost import CostModel


def test_rescore_pairs_todays_prediction_with_the_measured_launches(tmp_path):
    model = CostModel.for_device("cuda")
    predicted = [predict(*random_graph(s), model)[0].kernels for s in (3, 5)]
    run = tmp_path / "calibrate.txt"
    run.write_text("== calibrate\n"
                   "  random/3                 terms=  16 predicted=  9 measured=  2 (extern 0/0)  0.008 ms\n"
                   "  random/5                 terms=  13 predicted=  9 measured=  7 (extern 1/1)  0.109 ms\n")
    rows = rescore(str(run), "cuda", model)
    assert [(r.name, r.predicted, r.measured, r.ms) for r in rows] == [
        ("random/3", predicted[0], 2, 0.008), ("random/5", predicted[1], 7, 0.109)]
