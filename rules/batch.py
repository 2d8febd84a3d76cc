"""The Optimus batch family (torch/_inductor/fx_passes/group_batch_fusion.py) as named rules.

A batch fusion is not a rewrite egglog runs: "these n independent, identical ops" is a set, and
matching sets inside egglog enumerates subsets (and a rule that batches would match its own output).
``fx_bridge.horizontal`` finds the groups in Python and unions each member with its piece of the
batched form; the extractor keeps a fusion only where the cost model says it pays. These entries
give each fusion kind its name (switch it off with ``disabled=["batch_linear"]``, or the whole
family with ``disabled=["batch"]``), its documentation, and the counter the report shows: the
number of groups inserted under that name. Their egglog commands are empty on purpose.
``group_linear`` is Optimus' fbgemm grouped GEMM in open ops (zero padding to the largest shape, one
bmm): more FLOPs and bytes for fewer launches, kept only where the cost model says that pays.

Not provided, and why:
- ``batch_dropout``: dropout in training is random and effectful (lowered as an opaque op keyed by
  its node and kept as an extraction root), so a batched copy would run *in addition to* the
  originals, and it would change the random stream; in eval it lowers to the identity.
"""
from eqsat.rule import Rule

FAMILY = "batch"

# (name, what is grouped → what it becomes)
_DOCS = [
    ("batch_linear", "independent linears with equal input/weight/bias shapes and dtypes"
                     " → stack inputs and weights, one bmm (baddbmm with biases), unbind"),
    ("batch_linear_lhs", "linears (or mm/addmm) reading the same input, any output widths"
                         " → concatenate weights (and biases), one linear/mm/addmm, split the output"),
    ("group_linear", "independent linears of different shapes on distinct inputs (same leading dims and float"
                     " dtype) → zero-pad inputs and weights to the largest K and N, stack, one bmm, narrow"
                     " each output to its N, add its bias"),
    ("batch_mm", "independent mm/addmm of equal shapes (the Aten form of linear after AOTAutograd)"
                 " → stack operands, one bmm/baddbmm, unbind"),
    ("batch_layernorm", "independent layer_norms with equal shapes, normalized_shape, eps, affine"
                        " → stack, one layer_norm without affine, multiply/add the stacked affine, unbind"),
    ("batch_tanh", "independent tanh of equal shape/dtype → stack, one tanh, unbind"),
    ("batch_sigmoid", "independent sigmoid of equal shape/dtype → stack, one sigmoid, unbind"),
    ("batch_relu", "independent relu of equal shape/dtype → stack, one relu, unbind"),
    ("batch_detach", "independent detach of equal shape/dtype → stack, one detach, unbind"),
    ("batch_nan_to_num", "independent nan_to_num with equal nan/posinf/neginf (every argument kept)"
                         " → stack, one nan_to_num, unbind"),
    ("batch_clamp", "independent clamp with equal min/max (every argument kept) → stack, one clamp, unbind"),
    ("batch_unary", "any other pointwise unary op, equal attributes, shape and dtype → stack, one op, unbind"),
    ("batch_add", "independent add (equal alpha) of equal operand shapes/dtypes; a shared operand is"
                  " broadcast, not stacked → stack, one add, unbind"),
    ("batch_sub", "independent sub, as batch_add"),
    ("batch_mul", "independent mul, as batch_add"),
    ("batch_div", "independent div (equal rounding_mode), as batch_add"),
    ("batch_binary", "any other pointwise binary op, as batch_add"),
]

BATCH_RULES = [Rule(name, FAMILY, doc, ()) for name, doc in _DOCS]
