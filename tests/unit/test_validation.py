"""The validation verdict's judgement (topofoam.validation): Holm's adjustment, FAIL only
when significantly worse AND beyond the margin, INCONCLUSIVE when the noise cannot judge the
margin, faster never a failure; expectations files refused with the file named; sessions
read as ReFrame stores them. The samples are TEST DATA (seeded draws); the real sessions are
tests/system/test_validate.py's."""

import ast
import dataclasses
import json
import random
from xml.etree import ElementTree as ET

import pytest
import yaml

from topofoam import paths
from topofoam.validation import expectations, judge, outputs, regressions, sessions
from topofoam.validation.expectations import Expectation, ExpectationsError
from topofoam.validation.sessions import Key, Session

PART = "site:part"
#: The units the checks log, by a metric's first letters.
UNITS = {"ban": "MB/s", "rtt": "us"}
N = 8


def draws(median, spread, n=N, seed=0):
    rng = random.Random(seed)
    return [median * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


def key(metric="wall", check="SolverValidation", part=PART):
    return Key(check, part, "env", "case/1x2", metric)


def expect(samples=None, value=None, unit="s", margin=0.05, k=None):
    k = k or key()
    way = sessions.better(unit)
    return Expectation(k, unit, way, margin, "test", tuple(samples or ()), value)


def session(samples: dict, failed=(), nodes=None, parts=None):
    s = Session("u" * 36, "20261125T000000+0000", {"tag": "t"})
    s.samples = {k: list(v) for k, v in samples.items()}
    s.units = {k: UNITS.get(k.metric[:3], "s") for k in samples}
    s.partitions = set(parts or {k.partition for k in samples})
    s.failed = list(failed)
    s.nodes = nodes or {}
    return s


def one(expectation, measured):
    v = judge.judge([expectation], session({expectation.key: measured}))
    (j,) = v.judgements
    return v, j


def test_holm_adjusts_step_down():
    assert judge.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert judge.holm([0.5]) == [0.5]
    assert judge.holm([0.9, 0.9, 0.9]) == [1.0, 1.0, 1.0]


def test_a_slowdown_beyond_the_margin_fails_and_is_named():
    base = draws(10.0, 0.02, seed=1)
    v, j = one(expect(base), draws(12.0, 0.02, seed=2))
    assert (v.status, j.status) == ("FAIL", "FAIL")
    assert j.ratio == pytest.approx(1.2, rel=0.05)
    line = j.line()
    assert line.startswith("FAIL: SolverValidation on site:part: wall of case/1x2 expected 10")
    assert "measured 12" in line and "(n=8)" in line and "(Holm)" in line and "time +" in line


def test_the_same_machine_passes():
    v, j = one(expect(draws(10.0, 0.02, seed=3)), draws(10.0, 0.02, seed=4))
    assert (v.status, j.status) == ("PASS", "PASS")
    assert j.high <= 1.05


def test_faster_is_never_a_failure_and_is_reported():
    v, j = one(expect(draws(10.0, 0.02, seed=5)), draws(7.0, 0.02, seed=6))
    assert (v.status, j.status) == ("PASS", "PASS")
    assert j.faster and "significantly better" in j.line()


def test_a_slowdown_within_the_margin_is_not_a_failure():
    v, j = one(expect(draws(10.0, 0.005, seed=7), margin=0.10), draws(10.4, 0.005, seed=8))
    assert j.p_adjusted < 0.05  # significant...
    assert j.status == "PASS"  # ...but 4 % is within a 10 % margin, CI included


def test_noise_too_high_to_judge_the_margin_is_inconclusive_never_pass():
    v, j = one(expect(draws(10.0, 0.5, seed=9)), draws(10.0, 0.5, seed=10))
    assert (v.status, j.status) == ("INCONCLUSIVE", "INCONCLUSIVE")
    assert "noise is too high" in j.reason


def test_too_few_repeats_are_inconclusive():
    v, j = one(expect([10.0]), [13.0])
    assert j.status == "INCONCLUSIVE" and "too few repeats" in j.reason


def test_rates_are_judged_the_other_way():
    base = draws(8000.0, 0.02, seed=11)
    k = key("bandwidth", "FabricValidation")
    _, lower = one(expect(base, unit="MB/s", margin=0.1, k=k), draws(6000.0, 0.02, seed=12))
    assert lower.status == "FAIL" and "rate -2" in lower.line()
    _, higher = one(expect(base, unit="MB/s", margin=0.1, k=k), draws(9000.0, 0.02, seed=13))
    assert higher.status == "PASS" and higher.faster


def test_holm_keeps_one_weak_difference_among_many_from_failing():
    """Alone, 4 against 4 clearly apart is significant (one-sided p = 1/70); among 20
    expectations Holm needs p < 0.05/20 and it is not."""
    weak = expect([10.0, 10.1, 10.2, 10.3], k=key("wall"))
    alone = judge.judge([weak], session({weak.key: [13.0, 13.1, 13.2, 13.3]}))
    assert alone.status == "FAIL"
    others = [expect(draws(1.0, 0.01, seed=i), k=key(f"m{i}")) for i in range(19)]
    measured = {e.key: draws(1.0, 0.01, seed=100 + i) for i, e in enumerate(others)}
    measured[weak.key] = [13.0, 13.1, 13.2, 13.3]
    many = judge.judge([weak, *others], session(measured))
    (j,) = [j for j in many.judgements if j.key == weak.key]
    assert j.p < 0.05 < j.p_adjusted
    assert j.status != "FAIL"


def test_a_published_value_is_tested_against_its_margin():
    k = key("rtt_10", "FabricValidation")
    published = expect(value=2.9, unit="us", margin=0.2, k=k)
    _, slow = one(published, draws(4.0, 0.02, seed=14))
    assert slow.status == "FAIL" and "expected 2.9 us (test)" in slow.line()
    _, same = one(published, draws(2.9, 0.02, seed=15))
    assert same.status == "PASS"


def test_an_expectation_not_measured_fails_only_on_a_partition_that_ran():
    e_here, e_there = expect([1.0] * N, k=key("wall")), expect([1.0] * N, k=key(part="site:other"))
    other = key("rtt_10", "FabricValidation")
    v = judge.judge([e_here, e_there], session({other: [1.0] * N}, parts=[PART]))
    assert v.status == "FAIL"
    assert v.missing == [e_here.key]
    assert any("expected but not measured" in line for line in v.lines())
    assert v.unexpected == [other]


def test_a_failed_test_case_fails_the_verdict():
    e = expect(draws(10.0, 0.02, seed=16))
    why = "NodeFingerprint on site:part: site:part declares 4 NUMA nodes (NPS4), node n1 has 1"
    v = judge.judge([e], session({e.key: draws(10.0, 0.02, seed=17)}, failed=[why]))
    assert v.status == "FAIL"
    assert f"FAIL: {why}" in v.lines()


def test_json_and_junit_carry_the_verdict(tmp_path):
    e = expect(draws(10.0, 0.02, seed=18))
    v = judge.judge([e], session({e.key: draws(13.0, 0.02, seed=19)}))
    written = outputs.write(v, tmp_path, "verdict-site")
    data = json.loads(written[0].read_text())
    assert data["verdict"] == "FAIL" and data["judgements"][0]["status"] == "FAIL"
    suite = ET.parse(written[1]).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "0")
    assert suite.find("testcase/failure").get("message").startswith("FAIL: SolverValidation")


def test_junit_marks_inconclusive_as_a_failure_saying_why(tmp_path):
    """A dashboard shows a skipped test green; a verdict not reached is not a pass."""
    e = expect(draws(10.0, 0.02, seed=18))
    v = judge.judge([e], session({e.key: draws(10.0, 0.02, seed=19)[:1]}))
    assert v.status == "INCONCLUSIVE", v.lines()
    suite = ET.parse(outputs.write(v, tmp_path, "verdict-site")[1]).getroot()
    assert (suite.get("failures"), suite.get("skipped")) == ("1", "0")
    assert suite.find("testcase/failure").get("message").startswith("INCONCLUSIVE (not a pass): ")


def test_each_session_keeps_its_verdict_file(tmp_path):
    e = expect(draws(10.0, 0.02, seed=18))
    for seed, start in ((20, "20261128T101010+0000"), (21, "20261128T111111+0000")):
        v = judge.judge([e], session({e.key: draws(10.0, 0.02, seed=seed)}))
        outputs.write(v, tmp_path / "verdict-site", outputs.session_stem(start, "abcdef0123"))
    assert sorted(p.name for p in (tmp_path / "verdict-site").iterdir()) == [
        "20261128T101010+0000-abcdef01.json",
        "20261128T101010+0000-abcdef01.xml",
        "20261128T111111+0000-abcdef01.json",
        "20261128T111111+0000-abcdef01.xml",
    ]
    assert outputs.session_stem("?", "x/y z") == "--x-y-z"


def test_expectations_round_trip(tmp_path):
    s = session({key(): draws(10.0, 0.02), key("bandwidth", "FabricValidation"): draws(9e3, 0.02)})
    path = tmp_path / "site.yaml"
    expectations.write(path, "site", expectations.from_session(s, "n1"), "a test")
    loaded = expectations.load(path, "site")
    assert {e.key for e in loaded} == set(s.samples)
    assert {e.key: e.margin for e in loaded}[key()] == expectations.MARGINS["s"]
    assert path.read_text().startswith("# Validation expectations of site: a test.")


@pytest.mark.parametrize(
    "content, said",
    [
        (None, "no such expectations file"),
        ("expectations: [", "cannot be read as YAML"),
        ("format: 1\nsystem: site\n", "no 'expectations' list"),
        (
            "format: 0\nsystem: site\nexpectations: []\n",
            "format 0, this suite reads format 1 (stale)",
        ),
        ("format: 1\nsystem: other\nexpectations: []\n", "expectations of system 'other'"),
        ("format: 1\nsystem: site\nexpectations: []\n", "the expectations list is empty"),
        ("format: 1\nsystem: site\nexpectations: [3]\n", "expectation 1 is not a mapping"),
    ],
)
def test_a_bad_expectations_file_is_named_with_the_fix(tmp_path, content, said):
    path = tmp_path / "site.yaml"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ExpectationsError) as e:
        expectations.load(path, "site")
    assert str(e.value).startswith(f"{path}")
    assert said in str(e.value)
    assert " -- " in str(e.value)  # and the fix


@pytest.mark.parametrize(
    "change, said",
    [
        ({"margin": 12}, "margin 12 is not a number from 0 to 10"),
        ({"margin": -0.1}, "margin -0.1 is not a number from 0 to 10"),
        ({"unit": "calls"}, "unit 'calls' is not judged"),
        ({"samples": [1.0, -2.0]}, "are not positive numbers"),
        ({"samples": None}, "give one of 'sessions'"),
        ({"value": 2.9}, "give one of 'sessions'"),
        ({"metric": None}, None),
    ],
)
def test_a_bad_expectation_is_named(tmp_path, change, said):
    entry = {**key().as_dict(), "unit": "s", "margin": 0.05, "samples": [1.0, 1.1], "source": "t"}
    entry.update(change)
    entry = {k: v for k, v in entry.items() if v is not None}
    path = tmp_path / "site.yaml"
    path.write_text(yaml.safe_dump({"format": 1, "system": "site", "expectations": [entry]}))
    with pytest.raises(ExpectationsError) as e:
        expectations.load(path, "site")
    assert str(e.value).startswith(f"{path}: expectation 1")
    assert (said or "has no 'metric'") in str(e.value)


def record(cases):
    return {"session_info": {"uuid": "a" * 36, "time_start": "T", "tag": "x", "version": "4"},
            "runs": [{"testcases": c} for c in cases]}  # fmt: skip


def case(name, result="pass", perf=None, **more):
    return {"name": name, "display_name": name + " /abcdef12", "unique_name": name, "system": "site",
            "partition": "part", "environ": "env", "result": result, "perfvalues": perf or {},
            "tags": ["validate"], **more}  # fmt: skip


def test_a_stored_session_reads_as_observations():
    rtt = {"site:part:rtt_10": [0.5, 0, None, None, "us", None]}
    wall = {"site:part:wall": [3.0, 0, None, None, "s", None],
            "site:part:ClockTime": [3.0, 0, None, None, "s", None],
            "site:part:FVOPS": [1e6, 0, None, None, "cells/s", None]}  # fmt: skip
    first = [case("FabricValidation %repeat=0 %level=numa", perf=rtt),
             case("FabricValidation %repeat=1 %level=numa", result="fail", fail_reason="x")]  # fmt: skip
    retry = [case("FabricValidation %repeat=1 %level=numa", perf=rtt)]
    others = [case("SolverValidation %repeat=0", perf=wall, setting="c/1x2", validated_metrics=["wall"]),
              case("SolverValidationReference", perf=wall, fixture=True),
              case("NodeFingerprint", description={"cpu": {"model": "X"}}),
              case("Broken", result="fail", fail_reason="sanity: no output"),
              case("VariantRun %repeat=0", perf=wall, setting="v", tags=["sweep"]),
              case("Intra1Run %repeat=0", result="fail", tags=["sweep"])]  # fmt: skip
    s = sessions.from_record(record([first + others, retry]))
    assert s.extras == {"tag": "x"}
    k = Key("FabricValidation", "site:part", "env", "%level=numa", "rtt_10")
    assert s.samples[k] == [0.5, 0.5]  # the retry's pass replaced the first failure
    assert s.samples[Key("SolverValidation", "site:part", "env", "c/1x2", "wall")] == [3.0]
    assert len(s.samples) == 2  # no ClockTime, no FVOPS, nothing of the fixture
    assert s.failed == ["Broken /abcdef12 on site:part: sanity: no output"]
    assert s.nodes == {"site:part": {"cpu": {"model": "X"}}}


def test_a_failed_fixture_of_a_validated_case_fails_the_session_with_its_reason():
    """A reference run placed on the wrong cores fails; the validated case that needs it is
    not run (ReFrame's fail_deps): both are failures of the validation, the fixture's reason
    first. A failed fixture whose dependents all ran is not the validation's."""
    cases = [case("SolverValidationReference", result="fail", fixture=True, tags=["sweep"],
                  fail_reason="sanity error: 2 of 2 ranks off the cores"),
             case("SolverValidation %repeat=0", result="fail_deps"),
             case("OtherReference", result="fail", fixture=True, tags=[], partition="p2",
                  fail_reason="unrelated")]  # fmt: skip
    s = sessions.from_record(record([cases]))
    assert s.failed == [
        "SolverValidationReference /abcdef12 on site:part: sanity error: 2 of 2 ranks off the cores",
        "SolverValidation %repeat=0 /abcdef12 on site:part: not run: a fixture it needs failed",
    ]
    v = judge.judge([], s)
    assert v.status == judge.FAIL and v.lines()[1].startswith("FAIL: SolverValidationReference")


def test_what_changed_between_sessions_is_listed():
    a = session({}, nodes={PART: {"software": {"ucx": "1.13.1"}, "topology": {"numa_nodes": 4}}})
    b = session({}, nodes={PART: {"software": {"ucx": "1.14.0"}, "topology": {"numa_nodes": 4}}})
    assert regressions.changes(a, b) == [f"{PART}: software.ucx 1.13.1 -> 1.14.0"]
    assert regressions.changes(a, a) == []


def test_the_margins_a_partition_states_go_into_the_expectations():
    wall = {"site:part:wall": [3.0, 0, None, None, "s", None]}
    cases = [case(f"SolverValidation %repeat={i}", perf=wall, setting="c", validate_margins={"s": 0.1})
             for i in range(3)]  # fmt: skip
    s = sessions.from_record(record([cases]))
    (e,) = expectations.from_session(s)
    assert e.margin == 0.1 and e.samples == (3.0, 3.0, 3.0)
    bad = [case("SolverValidation %repeat=0", perf=wall, setting="c", validate_margins={"s": 11})]
    with pytest.raises(
        sessions.SessionError, match=r"site:part's validate_margins gives 's' the margin 11, not a"
    ):
        sessions.from_record(record([bad]))


def test_a_baseline_of_one_session_takes_the_margins_stated_for_one():
    """The need (validate_margins: a 15 % slower solver must fail) holds against a baseline of
    sessions; one session's repeats cannot see the drift between sessions, so a one-session
    baseline takes validate_margins_one_session where the partition states one."""
    margins = {"s": 0.1, "MB/s": 0.5}
    one = {"s": 0.5}
    rate = {"site:part:reconstruct_rate": [30.0, 0, None, None, "MB/s", None]}

    def a_session(uuid, scale, one_session=one):
        more = dict(validate_margins=margins, validate_margins_one_session=one_session)
        cases = [case(f"SolverValidation %repeat={i}", perf={"site:part:wall": [3.0 * scale, 0, None, None, "s", None]}, setting="c", **more)
                 for i in range(3)]  # fmt: skip
        cases.append(case("StorageValidation %repeat=0", perf=rate, setting="g", **more))
        r = record([cases])
        r["session_info"]["uuid"] = uuid
        return sessions.from_record(r)

    s = a_session("a" * 36, 1.0)
    assert {e.key.check: e.margin for e in expectations.from_session(s)} == {
        "SolverValidation": 0.5,  # stated for one session
        "StorageValidation": 0.5,  # none stated for one: validate_margins'
    }
    several = [a_session(c * 36, f) for c, f in (("a", 1.0), ("b", 1.01), ("c", 0.99))]
    assert {e.key.check: e.margin for e in expectations.from_sessions(several)} == {
        "SolverValidation": 0.1,
        "StorageValidation": 0.5,
    }
    # A one-session file recorded before the site stated its one-session margins is told.
    old = [dataclasses.replace(e, margin=0.1) if e.key.check == "SolverValidation" else e
           for e in expectations.from_session(s)]  # fmt: skip
    solver = [e for e in old if e.key.check == "SolverValidation"][0]
    assert expectations.margins_moved(old, s) == [f"{solver.key}: 0.1 held, 0.5 stated"]
    assert expectations.margins_moved(expectations.from_sessions(several), s) == []
    with pytest.raises(
        sessions.SessionError,
        match=r"site:part's validate_margins_one_session gives 's' the margin -1, not a",
    ):
        a_session("d" * 36, 1.0, one_session={"s": -1})


def test_a_check_s_own_margin_comes_before_its_unit_s():
    """The local fabric's MB/s margin (5 times) must not blunt the storage rates, also MB/s."""
    margins = {"s": 0.1, "MB/s": 0.5, "FabricValidation": {"us": 4.0, "MB/s": 4.0}}
    bandwidth = {"site:part:bw": [9.0, 0, None, None, "MB/s", None]}
    rate = {"site:part:reconstruct_rate": [30.0, 0, None, None, "MB/s", None]}
    cases = [
        case("FabricValidation %repeat=0", perf=bandwidth, setting="f", validate_margins=margins),
        case("StorageValidation %repeat=0", perf=rate, setting="g", validate_margins=margins),
    ]
    found = {
        e.key.check: e.margin
        for e in expectations.from_session(sessions.from_record(record([cases])))
    }
    assert found == {"FabricValidation": 4.0, "StorageValidation": 0.5}
    assert sessions.margin_stated(margins, "SolverValidation", "s") == 0.1
    assert sessions.margin_stated(margins, "SolverValidation", "ms") is None


def test_margins_changed_since_the_expectations_were_recorded_are_named():
    rate, wall = key("reconstruct_rate", "StorageValidation"), key()
    held = [
        expect(samples=[30.0] * 3, unit="MB/s", margin=4.0, k=rate),
        expect(samples=[3.0] * 3, margin=0.1, k=wall),
        expect(value=0.5, unit="us", margin=0.2, k=key("rtt_10", "FabricValidation")),
    ]
    now = session({rate: [30.0] * 3, wall: [3.0] * 3})
    stated = {rate: 0.5, wall: 0.1, key("rtt_10", "FabricValidation"): 4.0}
    now.margins = now.margins_one_session = stated  # none stated for one session alone
    # The storage rate's moved; the solver's did not; a published value keeps its own.
    assert expectations.margins_moved(held, now) == [f"{rate}: 4 held, 0.5 stated"]
    now.margins = now.margins_one_session = {}
    assert expectations.margins_moved(held, now) == []


def test_the_checks_with_margins_of_their_own_are_those_that_record_them():
    """MARGIN_CHECKS names the checks built on ``Validated`` (reframe/validate.py): a check
    added there and not here could not be given its own margin; one named here and not
    there would be accepted and never apply."""
    tree = ast.parse((paths.REPO / "reframe" / "validate.py").read_text())
    recording = {
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id == "Validated" for b in node.bases)
    }
    assert recording == set(sessions.MARGIN_CHECKS)


@pytest.mark.parametrize(
    "margins, said",
    [
        ({"s": 11}, "gives 's' the margin 11, not a number from 0 to 10"),
        ({"s": True}, "gives 's' the margin True, not a number"),
        (
            {"sec": 0.1},
            "names 'sec', neither a unit (s, ms, us, x, MB/s, GB/s) nor a validated check",
        ),
        ({"FabricValidaton": {"us": 4.0}}, "names 'FabricValidaton', neither a unit"),
        ({"FabricValidation": 4.0}, "gives FabricValidation 4.0, not margins by unit of its own"),
        (
            {"FabricValidation": {"MB/s": -1}},
            "gives FabricValidation's 'MB/s' the margin -1, not a",
        ),
        ({"StorageValidation": {"rate": 0.3}}, "names StorageValidation's 'rate', neither a unit"),
        ([0.1], "is [0.1], not margins by unit"),
    ],
)
def test_a_wrong_margin_is_named_with_its_entry(margins, said):
    assert said in sessions.margins_problem(margins)
    wall = {"site:part:wall": [3.0, 0, None, None, "s", None]}
    bad = [case("SolverValidation %repeat=0", perf=wall, setting="c", validate_margins=margins)]
    with pytest.raises(
        sessions.SessionError,
        match=r"^site:part's validate_margins .* -- correct the partition in its site file$",
    ):
        sessions.from_record(record([bad]))


def test_a_margin_reads_as_the_change_it_allows():
    """The limit is the ratio 1 + margin either way: a time may be 1.1 times the expected,
    a rate 1 / 1.3 of it (-23 %, not -30 %); margins above 1 are for a fabric with states
    (site-configs/local.py: 5 times)."""
    k = Key("FabricValidation", "site:part", "env", "%level=numa", "rtt_10")
    time = judge.Judgement(k, judge.PASS, "us", 0.1, "", "", worse="slower")
    rate = judge.Judgement(k, judge.PASS, "MB/s", 0.3, "", "", worse="lower")
    wide = judge.Judgement(k, judge.PASS, "MB/s", 4.0, "", "", worse="lower")
    assert (time.allowed(), rate.allowed(), wide.allowed()) == ("+10.0 %", "-23.1 %", "-80.0 %")
    assert rate.as_dict()["allowed"] == "-23.1 %"


def test_a_verdict_against_published_values_alone_says_so_in_its_first_line():
    """Before a baseline exists: a node with a slow solver is never a plain PASS; the first
    line says what had no expectation and that the published values are indicative."""
    k = key("rtt_10", "FabricValidation")
    published = expect(value=2.9, unit="us", margin=expectations.PUBLISHED_MARGIN, k=k)
    v = judge.judge([published], session({k: draws(2.9, 0.02), key(): draws(20.0, 0.02)}))
    assert v.status == judge.PASS
    assert v.lines()[0].endswith(
        "; NOT JUDGED: 1 measurement(s) of SolverValidation have no expectation; judged only "
        "against published values, which are indicative"
    )
    assert "indicative" in expectations.published("vsc5", PART, "env", "vsc5")[0].source
