"""Units and values on the way into a verdict or a report: a value logged in another unit
of its quantity is converted (a wall time in ms is never read as seconds), a unit of another
quantity is refused, NaN/infinite/zero/negative samples are refused in record, judge and
compare, and a YAML file that gives a key twice is refused, naming both lines. The sessions,
perflogs and files are TEST DATA written here in the formats ReFrame and the suite write."""

import math
import subprocess

import pytest
import yaml
from test_results import line, write_log
from test_validation import case, draws, expect, key, record, session

from conftest import PYTHON, REPO
from topofoam import yamlfile
from topofoam.results import perflog, values
from topofoam.validation import expectations, judge, regressions, sessions
from topofoam.validation.expectations import ExpectationsError
from topofoam.validation.sessions import SessionError

# -- YAML ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, said",
    [
        ("format: 1\nsystem: s\nexpectations: []\nexpectations: [1]\n", "'expectations' given twice (lines 3 and 4)"),
        ("e:\n  - {unit: s, margin: 1, unit: ms}\n", "'unit' given twice (lines 2 and 2)"),
        ("a:\n  b: 1\n  c: 2\n  b: 3\n", "'b' given twice (lines 2 and 4)"),
    ],
)  # fmt: skip
def test_a_key_given_twice_is_refused_naming_both_lines(tmp_path, text, said):
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(yamlfile.YamlError) as e:
        yamlfile.load(path)
    assert str(e.value).startswith(f"{path} cannot be read as YAML: key {said}")
    assert " -- correct the file" in str(e.value)


def test_equal_keys_in_two_mappings_are_not_a_repeat():
    assert yamlfile.loads("a: {x: 1}\nb: {x: 2}\n") == {"a": {"x": 1}, "b": {"x": 2}}


def test_an_expectations_file_with_a_second_list_is_refused(tmp_path):
    entry = {**key().as_dict(), "unit": "s", "samples": [1.0, 1.1], "source": "t"}
    one = yaml.safe_dump({"expectations": [entry]})
    path = tmp_path / "site.yaml"
    path.write_text(f"format: 1\nsystem: site\n{one}{one}")
    with pytest.raises(
        ExpectationsError, match=r"key 'expectations' given twice \(lines 3 and \d+\)"
    ):
        expectations.load(path, "site")


# -- conversions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value, unit, to, expected",
    [(1500.0, "ms", "s", 1.5), (2.0, "us", "s", 2e-6), (1.2, "GB/s", "MB/s", 1200.0),
     (3.0, "min", "s", 180.0), (4.0, "", "s", 4.0), (5.0, "s", "s", 5.0)],
)  # fmt: skip
def test_a_value_converts_within_its_quantity(value, unit, to, expected):
    assert values.convert(value, unit, to) == pytest.approx(expected)


@pytest.mark.parametrize("unit, to", [("MB/s", "s"), ("s", "us/step"), ("calls", "s")])
def test_a_value_never_converts_across_quantities(unit, to):
    assert values.convert(1.0, unit, to) is None


@pytest.mark.parametrize(
    "metric, unit, reading",
    [("wall", "ms", "s"), ("rtt_8", "ms", "us"), ("median_rtt", "s", "us"),
     ("bandwidth", "GB/s", "MB/s"), ("wall_per_step", "ms/step", "s/step"), ("FVOPS", "cells/s", "cells/s")],
)  # fmt: skip
def test_the_suite_reads_each_metric_in_its_own_unit(metric, unit, reading):
    assert values.reading_unit(metric, unit) == reading


# -- perflogs --------------------------------------------------------------------------------


def test_a_perflog_in_ms_is_read_in_seconds(tmp_path):
    write_log(tmp_path, "Intra1Run", [line(wall_value=12500, wall_unit="ms")])
    write_log(tmp_path, "Intra2Run", [line(wall_value=12.5, wall_unit="s")], partition="nps1")
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    assert sorted(r["wall"] for r in logs.rows) == [12.5, 12.5]
    assert logs.units == {"wall": "s"} and not logs.rejected


def test_a_perflog_row_in_another_quantity_s_unit_is_rejected(tmp_path):
    write_log(tmp_path, "Intra1Run", [line(wall_value=3, wall_unit="MB/s"), line(wall_value=4)])
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    assert [r["wall"] for r in logs.rows] == [4.0]
    assert logs.rejections() == {"wall is a time, and MB/s is a rate": 1}


def test_a_unit_the_suite_does_not_know_must_agree_between_rows(tmp_path):
    cols = ["job_completion_time", "result", "system", "partition", "fom_value", "fom_unit"]
    path = tmp_path / "perflogs" / "oci" / "nps2" / "X.log"
    path.parent.mkdir(parents=True)
    rows = ["t1|pass|oci|nps2|5|cells/s", "t2|pass|oci|nps2|6|widgets"]
    path.write_text("\n".join(["|".join(cols), *rows]) + "\n")
    logs = perflog.read_system(tmp_path / "perflogs" / "oci")
    assert [r["fom"] for r in logs.rows] == [5.0]
    assert logs.rejections() == {"fom is in widgets, other rows in cells/s": 1}


def test_references_written_from_ms_rows_are_in_seconds(tmp_path):
    write_log(
        tmp_path, "Intra1Run", [line(wall_value=v, wall_unit="ms") for v in (9000, 10000, 11000)]
    )
    out = tmp_path / "refs.yaml"
    done = subprocess.run(
        [PYTHON, "-m", "topofoam.results.references", str(tmp_path / "perflogs" / "oci"), "--out", str(out)],
        capture_output=True, text=True, cwd=REPO,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [[value, _, _, unit]] = [
        ref for part in yaml.safe_load(out.read_text())["Intra1Run"].values() if isinstance(part, dict)
        for setting in part.values() for ref in setting.values()
    ]  # fmt: skip
    assert (value, unit) == (pytest.approx(10.0), "s")


# -- the validation path ---------------------------------------------------------------------


def test_an_expectation_in_ms_is_judged_against_seconds_by_converting():
    expected_ms = expect(draws(10.0, 0.02), unit="ms")  # 10 ms
    same, slower = draws(0.010, 0.02, seed=1), draws(0.013, 0.02, seed=2)  # in s
    for measured, status in ((same, judge.PASS), (slower, judge.FAIL)):
        v = judge.judge([expected_ms], session({key(): measured}))
        assert v.status == status, v.lines()
        assert v.judgements[0].unit == "s"


def test_a_rate_expected_of_a_measured_time_is_refused():
    e = expect([900.0, 950.0, 1000.0], unit="MB/s")  # a rate on the wall time
    with pytest.raises(ExpectationsError, match=r"expected in MB/s but measured in s -- correct"):
        judge.judge([e], session({key(): [1.0, 1.1, 1.2]}))


def test_a_rate_unit_on_a_round_trip_is_refused_when_loaded(tmp_path):
    entry = {
        **key("rtt_8", "FabricValidation").as_dict(),
        "unit": "MB/s",
        "samples": [2.0, 2.1],
        "source": "t",
    }
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"format": 1, "system": "site", "expectations": [entry]}))
    with pytest.raises(
        ExpectationsError, match=r"expectation 1 .*rtt_8 is a time, and MB/s is a rate -- correct"
    ):
        expectations.load(path, "site")


def ten_repeats(bad=None, unit="s", check="SolverValidation", setting="case/1x2",
                metric="wall", centre=3.0):  # fmt: skip
    """Ten repeats of one validated measurement, the fifth of them ``bad`` (if given)."""
    cases = []
    for n in range(10):
        value = bad if (bad is not None and n == 4) else centre + 0.01 * n
        cases.append(case(f"{check} %repeat={n}", setting=setting, validated_metrics=[metric],
                          perf={f"site:part:{metric}": [value, 0, None, None, unit, None]}))  # fmt: skip
    return sessions.from_record(record([cases]))


@pytest.mark.parametrize("bad, said", [(math.nan, "NaN, not a measurement"), (math.inf, "infinite, not a measurement"),
                                       (-3.0, "negative, not a measurement"), (0.0, "zero, not a measurement"),
                                       ("3.0", "'3.0', not a number")])  # fmt: skip
def test_a_value_that_is_not_a_measurement_fails_judge_and_is_refused_by_record(bad, said):
    s = ten_repeats(bad)
    k = key()
    assert len(s.samples[k]) == 9  # the bad repeat is no sample
    assert s.invalid == [f"SolverValidation %repeat=4 /abcdef12 on site:part: wall is {said}"]
    v = judge.judge(expectations.from_session(ten_repeats()), s)
    assert v.status == judge.FAIL
    assert (
        f"FAIL: SolverValidation %repeat=4 /abcdef12 on site:part: wall is {said}" == v.lines()[1]
    )
    with pytest.raises(SessionError, match=r"logged 1 value\(s\) that are not measurements"):
        expectations.from_session(s)
    with pytest.raises(SessionError):  # compare: a baseline with it is refused
        regressions.compare(s, ten_repeats())
    assert regressions.compare(ten_repeats(), s).status == judge.FAIL


def test_a_session_in_ms_is_stored_in_seconds():
    s = ten_repeats(unit="ms")
    assert s.units[key()] == "s"
    assert s.samples[key()][0] == pytest.approx(0.003)


def test_no_change_ever_reads_nan():
    assert judge._pct(math.nan) == "?" and judge._pct(None) == "?"


def ratio_repeats(bad=None):
    """Ten StorageValidation repeats of a time over memory's (unit x), one of them ``bad``."""
    return ten_repeats(bad, "x", "StorageValidation", "shared", "decompose_over_memory", 1.5)


def test_a_time_over_memory_is_worse_larger_and_never_zero():
    """StorageValidation's ratios (unit x): more time over memory's is worse, the default
    margin holds, and a zero or negative ratio is no measurement."""
    k = key("decompose_over_memory", "StorageValidation")
    assert sessions.better("x") == "lower"
    read = sessions.Key("StorageValidation", "site:part", "env", "shared", k.metric)
    assert ratio_repeats().units[read] == "x"
    e = expect(draws(1.5, 0.02), unit="x", margin=expectations.MARGINS["x"], k=k)
    for measured, status in ((draws(1.5, 0.02, seed=1), judge.PASS),
                             (draws(1.9, 0.02, seed=2), judge.FAIL),
                             (draws(1.1, 0.02, seed=3), judge.PASS)):  # fmt: skip
        s = session({k: measured})
        s.units = {k: "x"}
        v = judge.judge([e], s)
        assert v.status == status, v.lines()
    for bad, said in ((0.0, "zero"), (-1.5, "negative")):
        assert ratio_repeats(bad).invalid == [
            f"StorageValidation %repeat=4 /abcdef12 on site:part: decompose_over_memory is "
            f"{said}, not a measurement"
        ]
