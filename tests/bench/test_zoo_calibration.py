"""``python -m bench.scripts.calibrate --zoo``: the cost model's launches against Inductor's count for the
programs eqsat chooses on the zoo (issue 29), on the fake H200 here."""
import pytest

from bench.scripts import calibrate, zoo_calibration
from eqsat_torch.inductor.probe import available

pytestmark = pytest.mark.skipif(not available("cuda"), reason="no way to probe Inductor's CUDA path here")


def test_a_rewritten_program_is_counted_by_inductor_next_to_its_prediction(capsys):
    """Optimus' ten unequal linears on one input: eqsat fuses them (the chosen program differs from
    the input) and Inductor's count of both programs is read, not assumed."""
    (row,) = zoo_calibration.run(["ten_unequal_linears"], "cpu", train=False)
    assert row.name == "ten_unequal_linears/infer" and row.changed
    assert row.counted_chosen < row.counted_input  # the fused program launches fewer kernels
    assert row.predicted_chosen < row.predicted_input
    assert row.error == abs(row.predicted_chosen - row.counted_chosen)
    text = zoo_calibration.summary([row])
    assert text.startswith("1 graphs (1 rewritten)") and "more launches for than the input: 0" in text


def test_rows_of_programs_kept_as_they_were_count_the_input_once():
    row = zoo_calibration.Row("m/infer", 10, 5, 7, 5, 7, changed=False)
    assert row.error == 2
    assert "(input)" in zoo_calibration.table([row])
    assert "median 2" in zoo_calibration.summary([row])


@pytest.mark.slow  # a training step compiled by Inductor, each Aten graph optimized and probed: ~40 s
def test_the_cli_measures_a_training_steps_aten_graphs(capsys):
    calibrate.main(["--zoo", "--train", "--only", "split_cat_two_stage"])
    out = capsys.readouterr().out
    assert "split_cat_two_stage/fwd" in out and "split_cat_two_stage/bwd" in out
    assert "graphs (" in out.splitlines()[-1]


def test_the_models_kernel_groups_are_listed_in_the_probes_form():
    """``modelled_launches``: one ``T+E ops`` line per planned group, as the probe lists Inductor's, so
    the two can be diffed group by group; the lines add up to the model's prediction."""
    import torch
    from captured import dynamo_graph
    from eqsat.cost import CostModel
    from eqsat_torch.inductor.probe import count_launches
    from eqsat_torch.pipeline import price_input

    gpu = CostModel.for_device("cuda")
    gm, ex = dynamo_graph(lambda x, w: torch.relu(torch.bmm(x, w)).sum(-1), torch.randn(4, 8, 16), torch.randn(4, 16, 8))
    modelled = zoo_calibration.modelled_launches(gm, ex, gpu)
    counted = count_launches(gm, ex, "cuda", "torch").described

    def totals(lines):
        pairs = [tuple(map(int, line.split()[0].split("+"))) for line in lines]
        return sum(t for t, _ in pairs), sum(e for _, e in pairs)

    before = price_input(gm, ex, gpu)[0].before
    assert totals(modelled) == (before.generated, before.extern) == totals(counted) == (1, 1)
    assert "0+1 bmm" in modelled and any(line.startswith("1+0 ") and "relu" in line and "sum" in line for line in modelled)
