"""Train notebook 06's BiLSTM tagger in full and measure it against a baseline without GloVe.

    .venv/bin/python benchmarks/bench_ner.py                    # about 4 minutes on 2 cores
    .venv/bin/python benchmarks/bench_ner.py --seeds 0,1,2      # the spread across three seeds
    .venv/bin/python benchmarks/bench_ner.py --eval tweets.conll --save model.keras
    .venv/bin/python benchmarks/bench_ner.py --load model.keras --eval tweets.conll

Models (all with the notebook's vocabulary, masked loss, `train_step`, `LazyAdam`):
- `glove+chars`: GloVe rows frozen, new tokens trainable, character CNN (the notebook's);
- `glove`: the same without the character features (do they pay for themselves?);
- `random+chars` (the baseline): no GloVe; every training token gets a trainable
  random row.

Each is trained on the train split with the weights of its best validation epoch kept
(early stopping on validation; the test split is never looked at before the end), tags
the most probable sequence that obeys the BIO rules (`--decode bio`, the default; `argmax`
tags each token on its own), and is scored with seqeval-equal span F1 (micro) on
validation and test. Prints the tables,
writes JSON (`--out`) and the test-set predictions of the first model in CoNLL format
(`--predictions`). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RESULTS = Path(__file__).resolve().parent / "results"
MODELS = {
    "glove+chars": {"use_glove": True, "use_chars": True},
    "glove": {"use_glove": True, "use_chars": False},
    "random+chars": {"use_glove": False, "use_chars": True},
}
BASELINE = "random+chars"
TARGETS = {"test_f1": 0.45, "train_seconds": 300.0, "margin_over_baseline": 0.05}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--units", type=int, default=64)
    parser.add_argument("--word-dropout", type=float, default=0.0,
                        help="probability that a training token reads <UNK>")
    parser.add_argument("--decode", choices=("argmax", "bio"), default="bio",
                        help="tag of highest probability per token, or the most probable "
                        "sequence that obeys the BIO rules")
    parser.add_argument("--seeds", default="0", help="comma list; each model is trained "
                        "once per seed and the table shows the mean and the range")
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma list among {', '.join(MODELS)}")
    parser.add_argument("--train-tweets", type=int, default=None,
                        help="train on the first N training tweets only (smoke runs)")
    parser.add_argument("--eval", action="append", default=[], metavar="FILE",
                        help="also score this CoNLL file (token TAB tag); repeatable")
    parser.add_argument("--save", type=Path, help="save the first model (seed 0) to this "
                        ".keras file (its new tokens go to the .json beside it)")
    parser.add_argument("--load", type=Path, help="evaluate this saved model instead of "
                        "training (no other model is trained)")
    parser.add_argument("--out", type=Path, default=RESULTS / "ner.json")
    parser.add_argument("--predictions", type=Path,
                        default=RESULTS / "ner_test_predictions.conll")
    parser.add_argument("--threads", type=int, default=0,
                        help="TensorFlow CPU threads (0: TensorFlow's default)")
    args = parser.parse_args(argv)
    args.seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = sorted(set(args.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}; choose among {list(MODELS)}")
    return args


def throughput(tagger, sentences, repeats: int = 3) -> float:
    """Tokens tagged per second (median of `repeats` passes, after one warm-up)."""
    tokens = sum(len(t) for t, _ in sentences)
    tagger.predict(sentences[:64])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        tagger.predict(sentences)
        times.append(time.perf_counter() - start)
    return tokens / statistics.median(times)


def score(tagger, parts: dict) -> dict:
    out = {}
    for name, sentences in parts.items():
        report = tagger.evaluate(sentences)
        out[name] = {"precision": report["precision"], "recall": report["recall"],
                     "f1": report["f1"], "support": report["support"],
                     "per_type_f1": {k: v["f1"] for k, v in report["per_type"].items()},
                     "per_type": report["per_type"]}
    return out


def fmt_range(values) -> str:
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def format_report(report: dict) -> str:
    """The table this script prints, from its JSON alone (`benchmarks/figures.py` quotes it)."""
    runs, config = report["runs"], report["config"]
    names = list(dict.fromkeys(r["model"] for r in runs))
    by_model = {n: [r for r in runs if r["model"] == n] for n in names}
    extra = [f"eval:{path}" for path in config.get("eval") or []]
    seeds = config["seeds"]
    seeds_note = f" (mean and range over seeds {seeds})" if len(seeds) > 1 else ""
    lines = [f"Span F1 (seqeval, micro) of the BiLSTM tagger, "
             f"{report['data']['train']['tweets']} training tweets, {config['epochs']} "
             f"epochs{seeds_note}"]
    header = f"{'model':<16} {'val F1':>22} {'test F1':>22} {'train s':>8} {'tokens/s':>9}"
    for part in extra:
        header += f" {Path(part[5:]).name[:20]:>22}"
    lines += [header, "-" * len(header)]
    for n, rs in by_model.items():
        row = (f"{n:<16} {fmt_range([r['scores']['validation']['f1'] for r in rs]):>22} "
               f"{fmt_range([r['scores']['test']['f1'] for r in rs]):>22} "
               f"{statistics.mean(r['train_seconds'] for r in rs):>8.0f} "
               f"{statistics.mean(r['tokens_per_second'] for r in rs):>9,.0f}")
        for part in extra:
            row += f" {fmt_range([r['scores'][part]['f1'] for r in rs]):>22}"
        lines.append(row)
    types = sorted({t for r in runs for t in r["scores"]["test"]["per_type_f1"]})
    lines += ["", "Test F1 per type (mean over seeds; support = true spans in test)"]
    support = {t: runs[0]["scores"]["test"]["per_type"].get(t, {}).get("support", 0)
               for t in types}
    lines.append(f"{'type':<12} {'support':>7} " + " ".join(f"{n:>14}" for n in names))
    for t in types:
        cells = [statistics.mean(r["scores"]["test"]["per_type_f1"].get(t, 0.0) for r in rs)
                 for rs in by_model.values()]
        lines.append(f"{t:<12} {support[t]:>7} " + " ".join(f"{c:>14.3f}" for c in cells))
    if report["targets"]:
        lines += ["", "Targets:"]
        for t in report["targets"]:
            lines.append(f"  [{'met' if t['met'] else 'NOT met'}] {t['target']}: "
                         f"{t['value']:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = parse_args(argv)
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras

    from embeddings_course import data, tagging

    split = data.wnut16_split()
    train = split["train"][: args.train_tweets] if args.train_tweets else split["train"]
    extra = {}
    for path in args.eval:
        extra[f"eval:{path}"] = data.read_conll(path)
    parts = {"validation": split["validation"], "test": split["test"], **extra}
    log(f"GloVe, {len(train)} training tweets, {len(parts)} sets to score ...")
    words, vectors = data.load_glove()

    runs = []
    first_tagger = None
    if args.load:
        tagger = tagging.load_tagger(args.load, words)
        runs.append({"model": f"loaded:{args.load.name}", "seed": None, "train_seconds": 0.0,
                     "epochs": 0, "best_epoch": None, "tokens_per_second":
                     throughput(tagger, split["test"]), "scores": score(tagger, parts)})
        first_tagger = tagger
    else:
        for name in args.models:
            for seed in args.seeds:
                log(f"training {name}, seed {seed}, {args.epochs} epochs ...")
                tagger = tagging.make_tagger(train, words, vectors, units=args.units, seed=seed,
                                         decode=args.decode, **MODELS[name])
                history = tagging.fit(tagger, train, split["validation"], epochs=args.epochs,
                                  batch_size=args.batch_size, lr=args.lr, seed=seed,
                                  verbose=0, restore_best=True,
                                  word_dropout=args.word_dropout)
                runs.append({
                    "model": name, "seed": seed, "train_seconds": history["seconds"],
                    "epochs": args.epochs, "best_epoch": history["best_epoch"],
                    "val_f1_per_epoch": history["val_f1"],
                    "tokens_per_second": throughput(tagger, split["test"]),
                    "scores": score(tagger, parts),
                })
                log(f"  {history['seconds']:.0f} s, best epoch {history['best_epoch']}, "
                    f"test F1 {runs[-1]['scores']['test']['f1']:.3f}")
                if first_tagger is None:
                    first_tagger = tagger
                    if args.save:
                        tagging.save_tagger(tagger, args.save)
                        log(f"  saved to {args.save}")
                keras.backend.clear_session()

    # the test-set predictions of the first model, readable by data.read_conll
    predicted = first_tagger.predict(split["test"])
    data.write_conll([(tokens, tags) for (tokens, _), tags in zip(split["test"], predicted,
                                                                    strict=True)],
                     args.predictions)

    names = list(dict.fromkeys(r["model"] for r in runs))
    by_model = {n: [r for r in runs if r["model"] == n] for n in names}
    targets = []
    main_name = names[0]
    main_test = statistics.mean(r["scores"]["test"]["f1"] for r in by_model[main_name])
    if not args.load:
        train_s = max(r["train_seconds"] for r in by_model[main_name])
        targets.append({"target": f"test span F1 >= {TARGETS['test_f1']} ({main_name})",
                        "value": main_test, "met": main_test >= TARGETS["test_f1"]})
        targets.append({"target": f"training < {TARGETS['train_seconds']:.0f} s ({main_name})",
                        "value": train_s, "met": train_s < TARGETS["train_seconds"]})
        if BASELINE in by_model and main_name != BASELINE:
            base = statistics.mean(r["scores"]["test"]["f1"] for r in by_model[BASELINE])
            margin = main_test - base
            targets.append({"target": f"beats the baseline ({BASELINE}) by >= "
                            f"{TARGETS['margin_over_baseline']} test F1",
                            "value": margin, "met": margin >= TARGETS["margin_over_baseline"]})
    report = {
        "benchmark": "ner",
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "data": {name: data.describe(sentences) for name, sentences in
                 {"train": train, **parts}.items()},
        "environment": {"python": platform.python_version(), "tensorflow": tf.__version__,
                        "keras": keras.__version__, "cpus": os.cpu_count(),
                        "machine": platform.machine()},
        "runs": runs,
        "targets": targets,
    }
    print(format_report(report))
    print(f"\ntest predictions of {names[0]}: {args.predictions}\nJSON: {args.out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
