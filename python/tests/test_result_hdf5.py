"""return_info's Result holds the fields of the command line's HDF5 result, and Result.save()
writes the same layout: compared object by object with a file `tcsolve eigs|solve --out` wrote
(needs h5py and the tcsolve command, $TCSOLVE_BIN; skipped without them)."""
import os
import subprocess

import numpy as np
import pytest
import scipy.io as sio
import scipy.sparse as sp

import tcsolve
from conftest import lap2d

h5py = pytest.importorskip("h5py")


def cli():
    exe = os.environ.get("TCSOLVE_BIN")
    if not exe or not os.path.exists(exe):
        pytest.skip("the tcsolve command is not built (TCSOLVE_BIN)")
    return exe


def h5_layout(path):
    names = {}

    def visit(name, obj):  # returns None: visititems stops at the first non-None return
        names[name] = obj.shape if isinstance(obj, h5py.Dataset) else "group"

    with h5py.File(path, "r") as f:
        f.visititems(visit)
        return names, {k: f.attrs[k] for k in f.attrs}


def test_eigs_result_matches_cli_file(tmp_path):
    exe = cli()
    mtx = tmp_path / "a.mtx"
    subprocess.run([exe, "generate", "gen:lap2d:20", str(mtx)], check=True, capture_output=True)
    subprocess.run([exe, "eigs", str(mtx), "--k", "4", "--device", "cpu", "--out", str(tmp_path / "cli.h5"),
                    "--quiet"], check=True)
    a = sp.csr_matrix(sio.mmread(str(mtx)))
    _, _, info = tcsolve.eigsh(a, k=4, which="SA", device="cpu", return_info=True)
    info.save(str(tmp_path / "py.h5"))
    cli_objs, cli_attrs = h5_layout(tmp_path / "cli.h5")
    py_objs, py_attrs = h5_layout(tmp_path / "py.h5")
    assert set(cli_objs) <= set(py_objs), set(cli_objs) - set(py_objs)
    for name, shape in cli_objs.items():
        assert py_objs[name] == shape or name.startswith("history"), (name, shape, py_objs[name])
    missing = set(cli_attrs) - set(py_attrs) - {"mass"}
    assert not missing, missing
    # same matrix content -> the same checksum as the command computes
    assert py_attrs["matrix_checksum"] == cli_attrs["matrix_checksum"]
    assert py_attrs["status"] == cli_attrs["status"] == "converged"
    with h5py.File(tmp_path / "cli.h5") as f, h5py.File(tmp_path / "py.h5") as g:
        np.testing.assert_allclose(g["eigenvalues"][:], f["eigenvalues"][:], rtol=1e-10)
        assert g["eigenvectors"].shape == (4, 400)  # [k][n] on disk, as the command writes


def test_solve_result_matches_cli_file(tmp_path):
    exe = cli()
    mtx = tmp_path / "a.mtx"
    subprocess.run([exe, "generate", "gen:lap2d:20", str(mtx)], check=True, capture_output=True)
    subprocess.run([exe, "solve", str(mtx), "--rhs", "random:3", "--device", "cpu", "--out",
                    str(tmp_path / "cli.h5"), "--quiet"], check=True)
    a = sp.csr_matrix(sio.mmread(str(mtx)))
    _, _, info = tcsolve.cg(a, np.ones((400, 3)), rtol=1e-8, device="cpu", return_info=True)
    info.save(str(tmp_path / "py.h5"))
    cli_objs, cli_attrs = h5_layout(tmp_path / "cli.h5")
    py_objs, py_attrs = h5_layout(tmp_path / "py.h5")
    assert set(cli_objs) <= set(py_objs), set(cli_objs) - set(py_objs)
    assert py_objs["solution"] == cli_objs["solution"] == (3, 400)
    assert not (set(cli_attrs) - set(py_attrs)), set(cli_attrs) - set(py_attrs)
    assert py_attrs["matrix_checksum"] == cli_attrs["matrix_checksum"]


def test_save_is_atomic_and_readable(tmp_path):
    _, _, info = tcsolve.eigsh(lap2d(8), k=3, which="LA", return_info=True)
    path = tmp_path / "r.h5"
    info.save(str(path))
    assert [p.name for p in tmp_path.iterdir()] == ["r.h5"]  # no temporary left
    with h5py.File(path) as f:
        assert f.attrs["task"] == "eigs" and f.attrs["k"] == 3
        assert f["history/residual_norms"].shape[0] == len(info.history)


# The keys the package writes from the call itself, not the extension (python/src/results.cpp,
# package_owned): the inputs' descriptions, the command, the version, the phases it times, and
# eigs' k and which (SciPy's names).
CALL_KEYS = {"matrix", "mass", "rhs", "command", "job", "job_options", "input_stamps", "tcsolve_version",
             "time_read", "time_preprocess", "time_write"}


def raw_layout(d, prefix=""):
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(raw_layout(value, prefix + key + "/"))
        else:
            out[prefix + key] = np.shape(value)
    return out


@pytest.mark.parametrize("task", ["eigs", "svds"])
def test_the_extension_dict_has_the_files_names(tmp_path, task):
    """The extension's dict comes from the command's record (visit_result): every object of the
    command's file, but the call's own, is a key of it, datasets with the file's shape (the
    eigenvectors as SciPy's n x k, the transpose of the file's rows)."""
    from tcsolve import _tcsolve
    exe = cli()
    mtx = tmp_path / "a.mtx"
    gen = "gen:lap2d:12" if task == "eigs" else "gen:counts:50:20"
    subprocess.run([exe, "generate", gen, str(mtx)], check=True, capture_output=True)
    extra = ["--which", "smallest"] if task == "eigs" else []
    subprocess.run([exe, task, str(mtx), "--k", "3", "--device", "cpu", "--out", str(tmp_path / "cli.h5"),
                    "--quiet", "--seed", "5"] + extra, check=True)
    a = sp.csr_matrix(sio.mmread(str(mtx)))
    args = (a.indptr.astype(np.int64), a.indices.astype(np.int32), a.data.astype(float))
    if task == "eigs":
        raw = _tcsolve.eigs_csr(a.shape[0], *args, None, None, {"k": 3, "which": "smallest", "device": "cpu", "seed": 5})
    else:
        raw = _tcsolve.svds_csr(a.shape[0], a.shape[1], *args, {"k": 3, "device": "cpu", "seed": 5})
    cli_objs, cli_attrs = h5_layout(tmp_path / "cli.h5")
    mine = raw_layout(raw)
    if task == "eigs":
        assert mine["eigenvectors"] == cli_objs["eigenvectors"][::-1]
        assert raw["eigenvectors"].flags.f_contiguous
        cli_attrs = {k: v for k, v in cli_attrs.items() if k not in ("k", "which")}
    objs = {k: v for k, v in cli_objs.items() if v != "group" and k != "eigenvectors"}
    # (the checksums: the package's, computed on first access; svds' Result has none)
    missing = (set(objs) | set(cli_attrs)) - CALL_KEYS - {"matrix_checksum"} - set(mine)
    assert not missing, missing
    for name, shape in objs.items():
        assert mine[name] == shape or name.startswith("history/"), (name, shape, mine[name])
    assert not CALL_KEYS & set(raw), CALL_KEYS & set(raw)
    for name in ("status", "rows", "nnz", "seed", "backend"):
        assert raw[name] == cli_attrs[name], (name, raw[name], cli_attrs[name])


def test_save_names_a_bad_field_and_leaves_no_file(tmp_path):
    # save() goes through the command's writer: a field of the wrong kind is named, nothing written
    _, _, info = tcsolve.eigsh(lap2d(8), k=3, which="LA", return_info=True)
    info.k = "three"
    with pytest.raises(ValueError, match=r"^Result\.k: expected an integer \(got str\)$"):
        info.save(str(tmp_path / "r.h5"))
    assert list(tmp_path.iterdir()) == []
