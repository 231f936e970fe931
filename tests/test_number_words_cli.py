"""The command line (``number-words``, mini_transformer.number_words.cli), as a user
meets it: every error one line with its exit status (2 usage, 1 failed run), input
from the arguments or standard input, one output line per input, Ctrl-C saving the
work, no file of a run replaced without --force (which clears the earlier run's
files), nothing left by a run that did not start, every setting checked before any
work, a closed pipe ending quietly, and a regular install translating from another
folder. Oracles: the files on disk, ``load_model`` and ``mt.translate``
(and ``mt.beam_search`` / a teacher-forced pass for the scores), exit statuses.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
from pathlib import Path

import numpy as np
import pytest

import mini_transformer as mt
from mini_transformer.number_words import (
    BPE_FILE, EARLY, INTERRUPTED, LAST, LOG, MODEL, MODEL_DIR, Settings, cli,
    load_model, train,
)
from mini_transformer.number_words.normalize import ACCEPTS
from mini_transformer.number_words.train import Interrupted

ROOT = Path(__file__).resolve().parents[1]
SMALL = dict(eval_every=1, n_eval=4, n_chunk=300, max_tokens=400, d_model=16,
             n_heads=2, n_layers=1, n_bpe=1000, vocab_size=200, average_every=1,
             average_last=0)
HANG = 600   # seconds: only a hung process waits this long, however slow the machine


@pytest.fixture(scope="module")
def model():
    return load_model()


def run(capsys, *argv):
    """(exit status, stdout lines, stderr lines) of the command, in this process."""
    try:
        status = cli.main(list(argv))
    except SystemExit as e:           # argparse: --help, --version, usage errors
        status = e.code
    out, err = capsys.readouterr()
    return status, out.splitlines(), err.splitlines()


def one_line_error(err, *words):
    assert len(err) == 1, err
    assert "Traceback" not in err[0] and all(w in err[0] for w in words), err[0]
    return err[0]


@pytest.fixture
def small(monkeypatch):
    """The train command with a tiny model (the options keep their meaning)."""
    monkeypatch.setattr(cli, "Settings", lambda **kw: Settings(**SMALL | kw))


USAGE = [  # (argv, words the one line must hold)
    (["train", "--steps", "0"], ["--steps", "must be 1 or more, got 0"]),
    (["train", "--steps", "ten"], ["--steps", "'ten' is not a whole number"]),
    (["train", "--p-drop", "1"], ["--p-drop", "must be in [0, 1)"]),
    (["train", "--final", "-1"], ["--final", "must be 0 or more"]),
    (["train", "--dtype", "float16"], ["--dtype", "invalid choice"]),
    (["train", "--device", "gpu7"], ["device 'gpu7' is not a torch device"]),
    (["train", "--device", "meta"], ["--device", "'meta' holds no data"]),
    (["train", "--seed", "-1"], ["--seed", "must be 0 or more, got -1"]),
    (["train", "--n-bpe", "10"], ["--n-bpe", "n_bpe must be >= 1000"]),
    (["train", "--max-tokens", "1"], ["--max-tokens", "must be >= 100"]),
    (["train", "--average-last", "100", "--steps", "3"],
     ["--average-last", "at most 1: 3 steps keep 1 checkpoints"]),
    (["train", "--out-dir", ""], ["--out-dir", "the folder name is empty"]),
    (["train", "--out-dir", " "], ["--out-dir", "the folder name is empty"]),
    (["translate", "--beam", "0", "seven"], ["--beam", "must be 1 or more"]),
    (["translate", "--alpha", "-1", "seven"], ["--alpha", "must be in [0, inf)"]),
    (["translate", "--greedy", "--beam", "2", "x"], ["not allowed with argument"]),
    (["translate", "--format", "xml", "seven"], ["--format", "invalid choice"]),
    (["translate", "--nope"], ["unrecognized arguments: --nope"]),
    ([], ["the following arguments are required: command"]),
]


@pytest.mark.parametrize("argv, words", USAGE, ids=[" ".join(a) for a, _ in USAGE])
def test_usage_errors_are_one_line_and_exit_2(capsys, tmp_path, monkeypatch, argv,
                                              words):
    monkeypatch.chdir(tmp_path)
    if "torch" not in sys.modules and any("device" in a for a in argv):
        pytest.importorskip("torch")
    status, out, err = run(capsys, *argv)
    assert status == 2 and out == []
    assert one_line_error(err, *words).startswith("number-words")
    assert list(tmp_path.iterdir()) == []           # nothing written


def test_a_device_this_machine_lacks_is_refused_before_any_work(capsys, tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    status, out, err = run(capsys, "train", "--device", "cuda",
                           "--out-dir", str(tmp_path / "m"))
    assert status == 2 and out == []
    one_line_error(err, "device 'cuda': torch sees no CUDA GPU")
    assert not (tmp_path / "m").exists()


def test_the_output_folder_is_checked_before_the_first_step(capsys, tmp_path, small,
                                                           monkeypatch):
    monkeypatch.setattr(cli, "train", lambda *a, **k: pytest.fail("training started"))
    (tmp_path / "file").write_text("")
    status, _, err = run(capsys, "train", "--out-dir", str(tmp_path / "file"))
    assert status == 2
    one_line_error(err, f"{tmp_path / 'file'} is a file, not a folder")
    status, _, err = run(capsys, "train", "--out-dir", str(tmp_path / "file" / "m"))
    assert status == 2
    one_line_error(err, f"cannot make {tmp_path / 'file' / 'm'}: "
                   f"{tmp_path / 'file'} is a file")


def test_no_model_is_overwritten_without_force(capsys, tmp_path, small, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, err = run(capsys, "train", "--steps", "2", "--final", "0")
    folder = tmp_path / cli.OUT_DIR               # the default: in the current folder
    assert status == 0 and err == [], err
    assert out[-1] == f"wrote {Path(cli.OUT_DIR) / MODEL} and the rest to {cli.OUT_DIR}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [MODEL, BPE_FILE, LAST, LOG])               # whole files, no temporary left
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    status, out, err = run(capsys, "train", "--steps", "1", "--final", "0")
    assert status == 2 and out == []
    one_line_error(err, f"{cli.OUT_DIR} already holds files of a run ({MODEL}",
                   "--force")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    status, out, err = run(capsys, "train", "--steps", "1", "--final", "0", "--force")
    assert status == 0
    assert json.loads((folder / LOG).read_text())["settings"]["steps"] == 1
    params, bpe = load_model(folder)                # what train wrote loads
    assert params.vocab_size == len(bpe) and params.d_model == 16


def test_weights_saved_by_ctrl_c_are_not_replaced_without_force(tmp_path):
    """A folder holding only the weights a stopped run saved is refused too; with
    force, the earlier run's files (its early and interrupted weights) are removed,
    not left beside the new model."""
    def stop_at_2(status):
        if status.startswith("step     2/"):
            raise KeyboardInterrupt

    settings = Settings(steps=50, n_final=0, **SMALL)
    with pytest.raises(Interrupted):
        train(settings, out_dir=tmp_path, log=lambda s: None, progress=stop_at_2)
    saved = (tmp_path / INTERRUPTED).read_bytes()
    with pytest.raises(FileExistsError, match=f"already holds files of a run "
                       f"\\({BPE_FILE}, {INTERRUPTED}\\)"):
        train(settings, out_dir=tmp_path, log=lambda s: None, progress=stop_at_2)
    assert (tmp_path / INTERRUPTED).read_bytes() == saved
    early = tmp_path / EARLY.format(step=7)
    early.write_bytes(b"an earlier run's")
    (tmp_path / "notes.txt").write_text("mine")
    train(Settings(steps=2, n_final=0, keep_steps=(1,), **SMALL), out_dir=tmp_path,
          log=lambda s: None, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [MODEL, BPE_FILE, LAST, LOG, EARLY.format(step=1), "notes.txt"])


def test_a_run_that_never_started_leaves_nothing(tmp_path):
    """Stopped before the first step, or refused by a check: no folder is made."""
    def stop(line):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(Settings(steps=5, n_final=0, **SMALL), out_dir=tmp_path / "a" / "b",
              log=stop)
    with pytest.raises(ValueError, match="n_bpe must be >= 1000"):
        train(Settings(**SMALL | dict(n_bpe=5)), out_dir=tmp_path / "c")
    assert list(tmp_path.iterdir()) == []


def test_final_0_decodes_nothing_after_the_last_step(tmp_path):
    """--final 0: no final evaluation and no check at the last step (only the
    eval_every ones)."""
    decoded = []
    train_module = sys.modules["mini_transformer.number_words.train"]

    real = train_module.translate

    def counting(texts, *a, **k):
        decoded.append(len(texts))
        return real(texts, *a, **k)

    mp = pytest.MonkeyPatch()
    mp.setattr(train_module, "translate", counting)
    try:
        _, _, record = train(Settings(**SMALL | dict(steps=3, eval_every=2,
                                                     n_final=0)),
                             log=lambda s: None)
    finally:
        mp.undo()
    assert decoded == [SMALL["n_eval"]]                 # step 2's check alone
    assert [r["step"] for r in record["log"]] == [2]
    assert record["dev_exact_match"] == {}


def test_loading_errors_are_one_line_and_exit_1(capsys, tmp_path):
    path = tmp_path / MODEL
    for what, write, words in (
            ("random bytes", lambda: path.write_bytes(os.urandom(3000)),
             "is not a checkpoint: not an .npz archive"),
            ("NaN weights", lambda: _nan_model(path), "holds NaN or Inf weights"),
            ("foreign BPE", lambda: _foreign_bpe(tmp_path),
             f"the BPE has {len(FOREIGN)} tokens, the model's vocabulary "
             f"{load_model()[0].vocab_size}")):
        write()
        status, out, err = run(capsys, "translate", "--model", str(tmp_path), "seven")
        assert status == 1 and out == [], what
        message = one_line_error(err, words)
        assert "pickle" not in message
    path.unlink()
    status, _, err = run(capsys, "translate", "--model", str(path), "seven")
    assert status == 1
    one_line_error(err, f"{path}: no such model file")


def _nan_model(path):
    params, _ = load_model()
    params.map(lambda a: np.where(a == a.flat[0], np.nan, a)).save(path)


FOREIGN = mt.BPE.learn(["one two", "eins zwei"], vocab_size=20)


def _foreign_bpe(folder):
    shutil.copy(MODEL_DIR / MODEL, folder)
    FOREIGN.save(folder / BPE_FILE)


def test_each_input_gets_one_line_bad_ones_their_message(capsys, model):
    texts = ["Forty two", "hello world", "342", "  ONE thousand one hundred one ",
             "one million", "", "-", "zero", "a" * 10_000]
    status, out, err = run(capsys, "translate", *texts)
    assert status == 1 and err == []                # refused inputs: status 1
    assert len(out) == len(texts)
    params, bpe = model
    good = mt.translate(["forty-two", "one thousand, one hundred and one", "zero"],
                        params, bpe, beam_size=4, alpha=0.6)
    assert out[0] == f"Forty two -> {good[0]}"
    assert out[3] == f"ONE thousand one hundred one -> {good[1]}"
    assert out[7] == f"zero -> {good[2]}"
    for i in (1, 2, 4, 5, 6):
        assert " -> error: " in out[i] and out[i].endswith(ACCEPTS), out[i]
    assert out[8] == "a" * 97 + "... -> error: the input has 10,000 characters, " \
        "more than the 300 the translator reads (the longest number below a " \
        "million has 73 in words)"


def test_json_and_tsv_with_the_score(capsys, model):
    params, bpe = model
    texts = ["three hundred and forty-two", "Ninety nine", "drei"]
    status, out, _ = run(capsys, "translate", "--format", "json", *texts)
    assert status == 1
    rows = [json.loads(line) for line in out]
    src = np.array(bpe.encode("three hundred and forty-two") + [bpe.eos_id])
    _, score = mt.beam_search(src, params, None, bpe.bos_id, bpe.eos_id, beam_size=4,
                              alpha=0.6)
    assert rows[0] == {"input": texts[0], "normalized": texts[0],
                       "german": mt.translate(texts[0], params, bpe)[0],
                       "score": round(float(score), 6)}
    assert rows[1]["normalized"] == "ninety-nine"
    assert rows[2] == {"input": "drei", "kind": "word", "error":
                       f"\"drei\" is not an English number word: {ACCEPTS}"}
    # greedy: the score is log P(output) / lp, from a teacher-forced pass
    status, out, _ = run(capsys, "translate", "--format", "tsv", "--greedy",
                         "--alpha", "1", texts[0], "drei")
    cells = [line.split("\t") for line in out]
    assert [len(c) for c in cells] == [4, 4] and cells[1][:3] == ["drei", "", ""]
    tokens = list(mt.greedy_decode(src, params, len(src) + 50, bpe.bos_id,
                                   bpe.eos_id))
    ids = tokens[1: tokens.index(bpe.eos_id) + 1]               # the output, EOS
    assert cells[0][1] == bpe.decode(ids[:-1])
    logits = mt.transformer(src, np.array(tokens[: len(ids)]), params)
    log_p = logits - mt.log_sum_exp(logits, axis=-1)[:, None]
    expected = log_p[np.arange(len(ids)), ids].sum() / mt.length_penalty(len(ids), 1)
    assert abs(float(cells[0][2]) - expected) < 2e-5
    assert cells[0][3] == ""


def test_stdin_when_no_text_or_dash(capsys, monkeypatch):
    for argv in ([], ["-"]):
        monkeypatch.setattr(sys, "stdin", io.StringIO("seven\n\nForty Two\n"))
        status, out, err = run(capsys, "translate", *argv)
        assert status == 1 and err == []
        assert out[0] == "seven -> sieben" and out[2] == "Forty Two -> zweiundvierzig"
        assert out[1].startswith(" -> error: the input is empty")


def test_help_shows_every_default_and_version(capsys):
    commands = cli.parser()._subparsers._group_actions[0].choices
    for name, command in commands.items():
        for action in command._actions:
            if action.option_strings and action.dest != "help":
                assert "(default: " in action.help, (name, action.dest)
    status, out, _ = run(capsys, "train", "--help")
    text = " ".join(" ".join(out).split())
    assert status == 0
    for shown in ("--steps STEPS training steps (default: 2500)",
                  "(default: number_words_model, in the current folder)",
                  "--p-drop P_DROP dropout rate (default: 0.1)",
                  "(default: 5, or as many as --steps keeps)"):
        assert shown in text, shown
    status, out, _ = run(capsys, "translate", "--help")
    assert "(default: 4, the paper's)" in " ".join(" ".join(out).split())
    status, out, _ = run(capsys, "--help")
    assert "Exit status: 0 done; 1 the run failed" in " ".join(out)
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out[0].startswith("number-words (mini_transformer ")


def test_ctrl_c_during_the_steps_saves_the_weights(tmp_path):
    """Ctrl-C after step 2 (from the progress callback): the weights after step 2,
    which a 2-step run writes as its last weights, are saved with the BPE."""
    def stop_at_2(status):
        if status.startswith("step     2/"):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted, match=r"stopped after step 2 of 50: the weights "
                       r"so far are saved in .*numbers_en_de_interrupted.npz"):
        train(Settings(steps=50, n_final=0, **SMALL), out_dir=tmp_path / "a",
              log=lambda s: None, progress=stop_at_2)
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [BPE_FILE, INTERRUPTED]
    saved, bpe = load_model(tmp_path / "a" / INTERRUPTED)
    train(Settings(**SMALL | dict(steps=2, n_final=0, average_last=0)),
          out_dir=tmp_path / "b", log=lambda s: None)
    two = mt.TransformerParams.load(tmp_path / "b" / LAST)
    assert np.array_equal(saved.embedding, two.embedding)
    assert bpe.merges == load_model(tmp_path / "b")[1].merges


def test_ctrl_c_during_the_final_evaluation_writes_the_model(tmp_path):
    def stop(status):
        if status.startswith("final evaluation 1/3"):
            raise KeyboardInterrupt

    with pytest.raises(Interrupted, match="stopped during the final evaluation: the "
                       "model is written to"):
        train(Settings(steps=2, n_final=3, **SMALL), out_dir=tmp_path,
              log=lambda s: None, progress=stop)
    record = json.loads((tmp_path / LOG).read_text())
    assert record["dev_exact_match"] == {"interrupted": True}
    load_model(tmp_path)


def _lines(stream):
    """A queue of the stream's lines, read by a thread (None at the end): waiting on
    it has a timeout, where reading the pipe would block for good."""
    q = queue.Queue()

    def read():
        for line in stream:
            q.put(line)
        q.put(None)

    threading.Thread(target=read, daemon=True).start()
    return q


def _sigint_as_default():
    """In the child, before Python starts: SIGINT's default action, whatever was
    inherited (a job started in the background by a script inherits it ignored,
    and Python then never raises KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_on_the_command_line_saves_and_says_where(tmp_path):
    """SIGINT to a running ``train`` (a tiny model, one log line per step): exit
    status 130, one line saying where the weights are, and they load. The test
    sets the child's SIGINT disposition itself and waits on its output lines, with
    timeouts that only a hang reaches."""
    script = ("import sys\nfrom mini_transformer.number_words import Settings, cli\n"
              f"cli.Settings = lambda **kw: Settings(**{SMALL!r} | kw)\n"
              "sys.exit(cli.main(sys.argv[1:]))\n")
    proc = subprocess.Popen(
        [sys.executable, "-c", script, "train", "--steps", "100000", "--final", "0",
         "--out-dir", "run"], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=os.environ | {"PYTHONPATH": str(ROOT)},
        preexec_fn=_sigint_as_default)
    try:
        lines = _lines(proc.stdout)
        while True:                                     # wait for step 3's line
            line = lines.get(timeout=HANG)
            assert line is not None, proc.stderr.read()
            if line.startswith("step     3"):
                break
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=HANG)
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    line = one_line_error(err.splitlines(), "number-words: stopped after step ",
                          f"saved in {Path('run') / INTERRUPTED}")
    step = int(line.split("after step ")[1].split()[0])
    assert step >= 3
    params, bpe = load_model(tmp_path / "run" / INTERRUPTED)
    assert params.d_model == 16 and len(bpe) == params.vocab_size
    assert not [p for p in (tmp_path / "run").iterdir() if p.name.endswith(".tmp")]


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``number-words translate ... | head -1``: the reader goes after one line; the
    command stops without a message (exit status 141, as a tool killed by SIGPIPE)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "mini_transformer.number_words", "translate",
         "--greedy"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, env=os.environ | {"PYTHONPATH": str(ROOT)})
    proc.stdin.write(b"seven\n" * 3000)
    proc.stdin.close()
    try:
        first = proc.stdout.readline()
        proc.stdout.close()
        proc.wait(timeout=HANG)
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert first == b"seven -> sieben\n"
    assert proc.returncode == 141 and err == b"", err


def test_binary_input_is_refused_as_not_text(tmp_path):
    data = bytes(range(256)) + b"\nforty two\n"
    result = subprocess.run(
        [sys.executable, "-m", "mini_transformer.number_words", "translate"],
        input=data, capture_output=True, env=os.environ | {"PYTHONPATH": str(ROOT)},
        timeout=HANG)
    out = result.stdout.decode().splitlines()
    assert result.returncode == 1 and out[-1] == "forty two -> zweiundvierzig"
    assert all("bytes that are not text" in line for line in out[:-1]
               if "-> error" in line and "empty" not in line)
    assert not any("written in digits" in line for line in out)


def test_a_failed_command_shows_no_traceback(tmp_path):
    """A real process: the one-line error, exit status 1, no traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "mini_transformer.number_words", "translate",
         "--model", str(tmp_path / "none"), "seven"], capture_output=True, text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)})
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == f"number-words: error: {tmp_path / 'none'}: no such " \
        "model file\n"


def test_pip_install_then_translate_from_another_folder(tmp_path):
    """A regular (not editable) install of a wheel built from this checkout, into a
    fresh virtual environment (its dependencies from this one's site-packages, no
    download): the console script translates from an unrelated folder, with the
    shipped model read from the installed package."""
    setuptools = pytest.importorskip("setuptools")
    version = tuple(int(x) for x in setuptools.__version__.split(".")[:2])
    if version < (70, 1) and importlib.util.find_spec("wheel") is None:
        pytest.skip(f"setuptools {setuptools.__version__} needs the wheel package to "
                    f"build a wheel offline")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(ROOT / "mini_transformer", src / "mini_transformer",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",
                                                            "PYTHONHOME")}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp_path / "dist"), str(src)], check=True, env=env)
    wheel, = (tmp_path / "dist").glob("mini_transformer-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],
                   check=True, env=env)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig."
                           "get_paths()['purelib'])"], capture_output=True, text=True,
                          check=True, env=env).stdout.strip()
    (Path(site) / "_parent_env.pth").write_text(sysconfig.get_paths()["purelib"]
                                                + "\n")
    subprocess.run([*pip[:3], "--python", str(python), "-q", "install", "--no-deps",
                    "--no-index", str(wheel)], check=True, env=env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = subprocess.run(
        [str(python), "-c", "import mini_transformer.number_words as m; "
         "print(m.load_model.__module__, m.MODEL_DIR)"], cwd=elsewhere,
        capture_output=True, text=True, check=True, env=env).stdout
    assert where.split()[1].startswith(site), where    # the installed copy
    result = subprocess.run([str(venv / "bin" / "number-words"), "translate",
                             "forty two", "Seven Hundred and One"], cwd=elsewhere,
                            capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["forty two -> zweiundvierzig",
                                          "Seven Hundred and One -> siebenhunderteins"]


def test_the_default_average_is_capped_by_the_steps(capsys, tmp_path, monkeypatch):
    """Without --average-last, a short run averages the checkpoints it keeps (one
    at step 2: the last weights); --average-last 5 with 2 steps is refused."""
    got = []
    monkeypatch.setattr(cli, "train", lambda s, **k: got.append(s))
    status, _, _ = run(capsys, "train", "--steps", "2", "--out-dir", str(tmp_path / "a"))
    assert status == 0 and got[0].average_last == 1
    status, _, _ = run(capsys, "train", "--steps", "120", "--out-dir", str(tmp_path / "a"))
    assert got[1].average_last == 3                    # steps 50, 100 and 120
    status, _, err = run(capsys, "train", "--steps", "2", "--average-last", "5",
                         "--out-dir", str(tmp_path / "a"))
    assert status == 2
    one_line_error(err, "--average-last", "at most 1: 2 steps keep 1 checkpoints")
