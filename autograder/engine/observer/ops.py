"""The op types a graph the kernel sent may hold, and the sizes it may have.

`check(graph_def)` refuses, with `Refused` (its message names the op or the size), a
graph that holds an op outside `ALLOWED` (at its top level, in any function of its
library, or named by any function-valued attr: a `PartitionedCall`'s `f`, a `While`'s body,
an `If`'s branches), a function-valued attr naming a function the library lacks, or more
than `MAX_NODES` nodes, `MAX_GRAPH_BYTES` serialized bytes, or constants of more than
`MAX_CONST_BYTES` (as they take in memory once built: a `Const` of shape [10**10] and one
value is 40 GB). The allow-list names the plain math, array, variable and control-flow ops
and what the course's solutions and mutants trace to; never an op that calls Python
(`PyFunc`, `EagerPyFunc`), reads or writes files, readers, savers, datasets, queues,
the network, collectives, `Send`/`Recv`, `RemoteCall`, `ImmutableConst`, debug ops or
`PrintV2`. Nothing here runs the graph: it is read as a protocol buffer.
"""

from __future__ import annotations

MAX_NODES = 20_000  # nodes, top level and library together
MAX_GRAPH_BYTES = 8 * 2**20  # the serialized GraphDef (it crosses the wire's 12 MB)
MAX_CONST_BYTES = 8 * 2**20  # every constant's tensor together, as built in memory

_MATH = """
Abs Acos Acosh Add AddN AddV2 All Any ApproximateEqual ArgMax ArgMin Asin Asinh Atan Atan2
Atanh BatchMatMul BatchMatMulV2 BatchMatMulV3 BiasAdd BiasAddGrad Bincount BitwiseAnd
BitwiseOr BitwiseXor Cast Ceil ClipByValue ComplexAbs Conj Cos Cosh Cross Cumprod Cumsum
DenseBincount Digamma DivNoNan Div Elu EluGrad Equal Erf Erfc Exp Expm1 Floor FloorDiv
FloorMod Greater GreaterEqual Imag InTopKV2 Inv InvGrad Invert IsFinite IsInf IsNan
L2Loss LeakyRelu LeakyReluGrad LeftShift Less LessEqual Lgamma Log Log1p LogSoftmax
LogicalAnd LogicalNot LogicalOr MatMul Max Maximum Mean Min Minimum Mod Mul MulNoNan Neg
NextAfter NotEqual Pow Prod Real RealDiv Reciprocal ReciprocalGrad Relu Relu6 Relu6Grad
ReluGrad RightShift Rint Round Rsqrt RsqrtGrad Selu SeluGrad Sigmoid SigmoidGrad Sign Sin
Sinh Softmax SoftmaxCrossEntropyWithLogits Softplus SoftplusGrad Softsign SoftsignGrad
SparseSoftmaxCrossEntropyWithLogits Sqrt SqrtGrad Square SquaredDifference Sub Sum Tan
Tanh TanhGrad TruncateDiv TruncateMod Xdivy Xlog1py Xlogy Zeta EuclideanNorm
SegmentSum SegmentMean SegmentMax SegmentMin SegmentProd UnsortedSegmentSum
UnsortedSegmentMax UnsortedSegmentMin UnsortedSegmentProd SparseSegmentSum
SparseSegmentMean SparseSegmentSqrtN SparseSegmentSumWithNumSegments
SparseSegmentMeanWithNumSegments SparseSegmentSqrtNWithNumSegments SparseSegmentSumGrad
SparseSegmentMeanGrad SparseSegmentSqrtNGrad SparseSegmentSumGradV2
SparseSegmentMeanGradV2 SparseSegmentSqrtNGradV2 Betainc Igamma Igammac Polygamma
"""

_ARRAY = """
BroadcastArgs BroadcastGradientArgs BroadcastTo CheckNumerics CheckNumericsV2 Concat
ConcatOffset ConcatV2 Const DeepCopy Diag DiagPart DynamicPartition DynamicStitch
Einsum EmptyTensorList EnsureShape ExpandDims Fill Gather GatherNd GatherV2 Identity
IdentityN InvertPermutation LinSpace ListDiff MatrixBandPart MatrixDiag MatrixDiagPart
MatrixDiagPartV3 MatrixDiagV3 MatrixSetDiag MatrixSetDiagV3 MirrorPad MirrorPadGrad
NoOp OneHot OnesLike Pack Pad PadV2 ParallelConcat ParallelDynamicStitch Placeholder
PlaceholderWithDefault PreventGradient Range Rank Reshape ResizeNearestNeighbor Reverse
ReverseSequence ReverseV2 ScatterNd ScatterNdNonAliasingAdd SearchSorted LowerBound
UpperBound Select SelectV2 Shape ShapeN Size Slice Snapshot Sort Split SplitV Squeeze
StopGradient StridedSlice StridedSliceGrad Tile TileGrad TopKV2 Transpose
TensorScatterAdd TensorScatterMax TensorScatterMin TensorScatterSub TensorScatterUpdate
Unique UniqueV2 UniqueWithCounts UniqueWithCountsV2 Unpack Where ZerosLike
SparseToDense SparseTensorDenseMatMul SparseTensorDenseAdd SparseReshape
SparseReorder SparseSlice SparseAdd SparseReduceSum SparseFillEmptyRows
SparseFillEmptyRowsGrad SparseSparseMaximum SparseSparseMinimum
RaggedTensorToTensor RaggedTensorFromVariant RaggedTensorToVariant RaggedRange
RaggedGather RaggedTensorToSparse StringToHashBucketFast
"""

_VARIABLES = """
VarHandleOp ReadVariableOp AssignVariableOp AssignAddVariableOp AssignSubVariableOp
ResourceGather ResourceGatherNd ResourceScatterAdd ResourceScatterSub ResourceScatterMul
ResourceScatterDiv ResourceScatterMin ResourceScatterMax ResourceScatterUpdate
ResourceScatterNdAdd ResourceScatterNdSub ResourceScatterNdUpdate VarIsInitializedOp
VariableShape DestroyResourceOp ResourceStridedSliceAssign
ResourceApplyGradientDescent ResourceApplyMomentum ResourceApplyAdam ResourceApplyAdagrad
ResourceApplyAdagradV2 ResourceSparseApplyMomentum ResourceSparseApplyAdagrad
ResourceSparseApplyAdagradV2
"""

_CONTROL = """
While StatelessWhile If StatelessIf Case StatelessCase PartitionedCall
StatefulPartitionedCall Enter Exit Merge Switch NextIteration LoopCond ControlTrigger
TensorListFromTensor TensorListStack TensorListGetItem TensorListSetItem
TensorListReserve TensorListLength TensorListElementShape TensorListPushBack
TensorListPopBack TensorListConcatV2 TensorListSplit TensorListGather TensorListScatter
TensorListScatterV2 TensorListScatterIntoExistingList TensorListResize
StatelessRandomUniformV2 StatelessRandomNormalV2 StatelessRandomGetKeyCounter
StatelessRandomGetAlg StatelessRandomUniform StatelessRandomNormal
StatelessTruncatedNormalV2 StatelessRandomUniformIntV2 RandomUniform
RandomStandardNormal RandomUniformInt TruncatedNormal Assert
"""

ALLOWED = frozenset((_MATH + _ARRAY + _VARIABLES + _CONTROL).split())


class Refused(ValueError):
    """A graph the observer will not import: an op outside the allow-list, or too big."""


def _parse(graph):
    from tensorflow.core.framework import graph_pb2

    if isinstance(graph, graph_pb2.GraphDef):
        size = graph.ByteSize()
    else:
        data = bytes(graph)
        size = len(data)
        if size > MAX_GRAPH_BYTES:
            raise Refused(f"the graph is {size} bytes; at most {MAX_GRAPH_BYTES} are read")
        parsed = graph_pb2.GraphDef()
        try:
            parsed.ParseFromString(data)
        except Exception as error:  # noqa: BLE001 - protobuf's DecodeError, or worse
            raise Refused(f"the graph is not a GraphDef ({type(error).__name__})") from None
        graph = parsed
    if size > MAX_GRAPH_BYTES:
        raise Refused(f"the graph is {size} bytes; at most {MAX_GRAPH_BYTES} are read")
    return graph


def _const_bytes(tensor) -> int:
    """The bytes a TensorProto takes once built (its shape times its element's size: a
    proto of one value broadcasts it to the whole shape)."""
    from tensorflow.python.framework import dtypes

    count = 1
    for dim in tensor.tensor_shape.dim:
        count *= max(int(dim.size), 0)
    try:
        item = dtypes.as_dtype(tensor.dtype).size
    except (TypeError, ValueError):
        item = 8
    content = len(tensor.tensor_content) + sum(len(s) for s in tensor.string_val)
    return max(count * max(item, 1), content)


def _functions_named(attr) -> list[str]:
    """The functions a node's attr value names (a `func`, or a list of them)."""
    if attr.HasField("func"):
        return [attr.func.name]
    if attr.HasField("list"):
        return [f.name for f in attr.list.func]
    return []


def check(graph):
    """The GraphDef `graph` (one, or its serialized bytes), parsed and checked; `Refused`
    where it holds an op outside ALLOWED or is too big (see the module's docstring)."""
    graph = _parse(graph)
    library = {f.signature.name: f for f in graph.library.function}
    for gradient in graph.library.gradient:
        if gradient.gradient_func not in library:
            raise Refused(f"the gradient function {gradient.gradient_func!r} is not in the "
                          "graph's library")
    nodes = list(graph.node) + [n for f in library.values() for n in f.node_def]
    if len(nodes) > MAX_NODES:
        raise Refused(f"the graph has {len(nodes)} nodes; at most {MAX_NODES} are read")
    const_bytes = 0
    for node in nodes:
        if node.op not in ALLOWED and node.op not in library:
            raise Refused(f"the graph holds the op {node.op!r} (node {node.name!r}), which "
                          "the observer does not run")
        for key, attr in node.attr.items():
            for name in _functions_named(attr):
                if name not in library:
                    raise Refused(f"node {node.name!r} names the function {name!r} (attr "
                                  f"{key!r}), which is not in the graph's library")
            if attr.HasField("tensor"):
                const_bytes += _const_bytes(attr.tensor)
            if attr.HasField("list"):
                const_bytes += sum(_const_bytes(t) for t in attr.list.tensor)
        if const_bytes > MAX_CONST_BYTES:
            raise Refused(f"the graph's constants take more than {MAX_CONST_BYTES} bytes "
                          f"(at node {node.name!r})")
    return graph


def op_types(graph) -> list[str]:
    """The type of every node of a checked `graph`, at its top level and then in its
    library's functions (a function called by a node stands for its own ops)."""
    library = {f.signature.name for f in graph.library.function}
    found = [n.op for n in graph.node]
    found += [n.op for f in graph.library.function for n in f.node_def]
    return [t for t in found if t not in library]
