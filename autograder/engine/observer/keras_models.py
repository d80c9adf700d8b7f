"""Keras models that crossed as their config and weights, rebuilt of the grader's own objects.

A model the student's code built is not asked about in the kernel: the kernel sends its
JSON config (`model.to_json()`) and its weights (`model.get_weights()`), as data, and
`rebuild` makes a new model from them here, of Keras' own classes. Every fact a test
reads (the model's type, its layers, dropout rates, masking, its outputs, gradients, a
training step) is then read from the rebuilt model, which runs none of the student's
Python: whatever the kernel sent, the model here computes what its config says, so a
config or weights made by hand pass a test only by making the right model.

What a config may name, checked before Keras reads it (`check_config`):
- layers of `keras.layers` named in `LAYERS` (never `Lambda`, `TFSMLayer` or a wrapper
  of another framework's module: they hold code), and the models `Functional` and
  `Sequential`;
- initializers, regularizers, constraints and dtype policies of Keras
  (`SUPPORT_MODULES`); an activation function only from `keras.activations`;
- the operations of `keras.ops` a functional model records (`!=` on its input, for a
  mask), from `OPS_MODULES`;
- a class the caller allows by `(module, class_name)`: the course's own library layers,
  whose code is the grader's copy, never the kernel's.
Anything else (a custom class, a `Lambda`, a Python lambda, a function by name) is refused
with `Refused`, whose message names it. Keras then deserialises with `safe_mode=True`.

Sizes are checked before any memory is taken: the model is made inside a Keras
`StatelessScope`, where a variable is only a shape until it is initialised, and every
weight's shape must be that of the weight sent for it (the weights sent are bounded by what
the grader receives from a kernel); the variables that are not weights (a dropout layer's
seed, the unused template of a `Bidirectional`'s layers) may hold together no more values
than the weights, plus `MAX_STATE_ELEMENTS` each. Only then are the variables made and the
weights set. The config itself may hold at most `MAX_CONFIG_BYTES` and nest `MAX_DEPTH`
deep.
"""

from __future__ import annotations

import json

import numpy as np

from autograder.engine.observer.ops import Refused

MAX_CONFIG_BYTES = 4 * 2**20
MAX_DEPTH = 64
MAX_STATE_ELEMENTS = 64

LAYERS = frozenset("""
Activation Add Average AveragePooling1D BatchNormalization Bidirectional Concatenate
Conv1D Dense Dot Dropout ELU Embedding Flatten GRU GRUCell GaussianDropout GaussianNoise
GlobalAveragePooling1D GlobalMaxPooling1D InputLayer LSTM LSTMCell LayerNormalization
LeakyReLU Masking MaxPooling1D Maximum Minimum Multiply Permute RNN ReLU RepeatVector
Reshape SimpleRNN SimpleRNNCell Softmax SpatialDropout1D StackedRNNCells Subtract
TimeDistributed UnitNormalization
""".split())
MODELS = frozenset({"Functional", "Sequential"})
SUPPORT_MODULES = frozenset({"keras.initializers", "keras.regularizers", "keras.constraints",
                             "keras.dtype_policies"})
OPS_MODULES = frozenset({"keras.src.ops.numpy", "keras.src.ops.math", "keras.src.ops.nn"})
ACTIVATION_MODULES = frozenset({"keras.activations", "keras.src.activations.activations"})
# markers of plain data in a Keras config (a tensor, an array, a symbolic input)
DATA_MARKERS = frozenset({"__keras_tensor__", "__tensor__", "__numpy__", "__tuple__"})


def _allowed(node: dict, extra: dict) -> str | None:
    """Why `node` (a dict naming a class) is refused, or None."""
    name, module = node.get("class_name"), node.get("module")
    registered = node.get("registered_name")
    if not isinstance(name, str) or not (module is None or isinstance(module, str)):
        return "a class named by something other than a string"
    if name in DATA_MARKERS:
        return None
    if name == "__lambda__":
        return "a Python lambda"
    if (module, name) in extra:
        return None if registered in (None, f"{extra[(module, name)][0]}") else \
            f"{name} registered as {registered!r}"
    if registered not in (None, name):
        return f"the class registered as {registered!r}"
    if name == "function":
        return None if module in ACTIVATION_MODULES else \
            f"the function {node.get('config')!r} of {module!r}"
    if module == "keras.layers" and name in LAYERS:
        return None
    if name in MODELS and module in ("keras", "keras.src.models.functional",
                                     "keras.src.models.sequential", "keras.models"):
        return None
    if module == "keras" and name == "DTypePolicy" or module in SUPPORT_MODULES:
        return None
    if module in OPS_MODULES:
        return None
    where = f" of {module}" if module else ""
    return f"the class {name}{where}"


def check_config(config, extra: dict | None = None) -> None:
    """Refuse (`Refused`) a model config that names a class or function not allowed
    (see the module's docstring). `extra` maps `(module, class_name)` to
    `(registered_name, class)` for the caller's own classes."""
    extra = extra or {}
    stack = [(config, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise Refused(f"the model's config nests deeper than {MAX_DEPTH} levels")
        if isinstance(node, dict):
            if "class_name" in node:
                why = _allowed(node, extra)
                if why is not None:
                    raise Refused(
                        f"the model holds {why}: only Keras' own layers (keras.layers, "
                        "not Lambda), keras.Sequential and keras.Model(inputs, outputs) "
                        "can be graded")
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def rebuild(config_json: str, weights, extra: dict | None = None):
    """A new Keras model made here from `config_json` (what `model.to_json()` gave) and
    `weights` (what `model.get_weights()` gave): checked, sized, then built; `Refused`
    with a message that says why where it cannot be."""
    import keras
    from keras.src.backend.common import global_state
    from keras.src.backend.common.stateless_scope import StatelessScope
    from keras.src.backend.common.variables import initialize_all_variables

    if not isinstance(config_json, str) or len(config_json) > MAX_CONFIG_BYTES:
        raise Refused(f"the model's config is not JSON text of at most {MAX_CONFIG_BYTES} "
                      "bytes")
    try:
        config = json.loads(config_json)
    except (ValueError, RecursionError) as error:
        raise Refused(f"the model's config is not JSON: {str(error)[:200]}") from None
    if not isinstance(config, dict) or config.get("class_name") not in MODELS:
        kind = config.get("class_name") if isinstance(config, dict) else type(config).__name__
        raise Refused(f"the object is a {kind}, not a keras.Model built as keras.Sequential "
                      "or keras.Model(inputs, outputs)")
    config.pop("compile_config", None)  # a loss or an optimizer is no part of the model
    check_config(config, extra)
    weights = [np.asarray(w) for w in weights]
    if any(w.dtype == object for w in weights):
        raise Refused("a weight sent is not an array of numbers")
    custom = {registered or name: cls for (_, name), (registered, cls) in (extra or {}).items()}
    global_state.set_global_attribute("uninitialized_variables", [])
    try:
        with StatelessScope(initialize_variables=False):
            model = keras.saving.deserialize_keras_object(config, custom_objects=custom,
                                                          safe_mode=True)
        if not isinstance(model, keras.Model):
            raise Refused(f"the config made a {type(model).__name__}, not a keras.Model")
        shapes = [tuple(w.shape) for w in model.weights]
        sent = [tuple(w.shape) for w in weights]
        if shapes != sent:
            raise Refused(f"the weights sent have shapes {sent[:12]}; the model's config "
                          f"makes weights of shapes {shapes[:12]}")
        own = {id(w) for w in model.weights}
        others = [v for v in global_state.get_global_attribute("uninitialized_variables")
                  or [] if id(v) not in own]
        extra_size = sum(int(np.prod(v.shape)) for v in others)
        if extra_size > sum(w.size for w in weights) + MAX_STATE_ELEMENTS * len(others):
            raise Refused(f"the model makes variables of {extra_size} values besides its "
                          "weights, more than its weights hold")
        initialize_all_variables()
    except Refused:
        raise
    except Exception as error:  # noqa: BLE001 - Keras' reason, said as the refusal
        raise Refused(f"the model could not be rebuilt from its config: "
                      f"{type(error).__name__}: {str(error)[:300]}") from None
    finally:
        global_state.set_global_attribute("uninitialized_variables", [])
    model.set_weights(weights)
    return model
