"""The harness's pure parts: perf-tool output parsing, the two configs, percentiles, ratios."""

from __future__ import annotations

from array import array

import pytest

from aa.config.yaml_file import read_yaml
from bench.configs import DEFAULT_POLICY, Tuning, aa_topology, mm2_properties
from bench.latency import percentiles
from bench.procs import parse_consumer_perf, parse_producer_perf
from bench.procstat import MachineTicks
from bench.report import ratios, table

pytestmark = pytest.mark.unit

BOOT = {"SF": "127.0.0.1:1", "NYC": "127.0.0.1:2"}


def test_producer_perf_summary_is_the_last_line() -> None:
    out = (
        "49981 records sent, 9996.2 records/sec (4.88 MB/sec), 3.1 ms avg latency, 210.0 ms "
        "max latency.\n"
        "100000 records sent, 9998.000400 records/sec (4.88 MB/sec), 2.52 ms avg latency, "
        "210.00 ms max latency, 2 ms 50th, 4 ms 95th, 21 ms 99th, 150 ms 99.9th.\n"
    )
    got = parse_producer_perf(out)
    assert got["records"] == 100000
    assert got["records_per_s"] == pytest.approx(9998.0004)
    assert got["max_latency_ms"] == 210.0


def test_consumer_perf_csv() -> None:
    out = (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-11-22 18:36:01:000, 2026-11-22 18:36:03:000, 9.7656, 4.8828, 20000, 10000.0, "
        "1000, 1000, 9.7656, 20000.0\n"
    )
    got = parse_consumer_perf(out)
    assert got["records"] == 20000
    assert got["fetch_records_per_s"] == 20000.0


def test_unparseable_tool_output_says_what_it_got() -> None:
    with pytest.raises(RuntimeError, match="no ProducerPerformance summary"):
        parse_producer_perf("Exception in thread main")


def test_aa_topology_is_accepted_by_aa_config() -> None:
    topo = read_yaml(aa_topology(BOOT, ["SF->NYC"], ["bench-w1-aa-x"], Tuning()))
    assert [(f.source, f.target) for f in topo.flows] == [("SF", "NYC")]
    assert topo.tuning.batch_size == Tuning().batch_size
    assert not topo.heartbeats.enabled
    assert not topo.checkpoints.enabled


def test_aa_memory_budget_is_aas_default_unless_the_bench_asks_for_another() -> None:
    default = read_yaml(aa_topology(BOOT, ["SF->NYC"], ["t"], Tuning()))
    larger = read_yaml(aa_topology(BOOT, ["SF->NYC"], ["t"], Tuning(aa_memory_budget_mb=128)))
    assert default.tuning.memory_budget_mb == 64
    assert larger.tuning.memory_budget_mb == 128


def test_mm2_properties_enable_only_the_given_flows_with_equal_producer_settings() -> None:
    text = mm2_properties(BOOT, ["SF->NYC"], ["bench-w1-mm2-x"], Tuning(), policy=DEFAULT_POLICY)
    props = {
        k.strip(): v.strip()
        for k, _, v in (ln.partition("=") for ln in text.splitlines())
        if not k.startswith("#")
    }
    assert props["SF->NYC.enabled"] == "true"
    assert props["NYC->SF.enabled"] == "false"
    assert props["SF->NYC.topics"] == "bench-w1-mm2-x"
    assert props["replication.policy.class"] == DEFAULT_POLICY
    assert props["NYC.producer.acks"] == "all"
    assert props["NYC.producer.enable.idempotence"] == "true"
    assert props["NYC.producer.batch.size"] == str(Tuning().batch_size)
    assert props["emit.heartbeats.enabled"] == "false"


def test_percentiles() -> None:
    got = percentiles(array("q", range(1, 101)))
    assert got["count"] == 100
    assert got["p50_ms"] == 51
    assert got["max_ms"] == 100
    assert percentiles(array("q")) == {"count": 0}


def test_ratios_and_table_with_missing_runners() -> None:
    w = {
        "W1": {
            "records": 10, "record_size": 512, "partitions": 6,
            "aa": {"records_per_s": 200.0, "records_per_cpu_s": 100.0, "mb_per_s": 0.1},
            "mm2": {"records_per_s": 100.0, "records_per_cpu_s": 50.0, "mb_per_s": 0.05},
        }
    }  # fmt: skip
    ratios(w)
    assert w["W1"]["ratios"]["aa/mm2 records_per_s"] == 2.0
    assert w["W1"]["ratios"]["aa/ceiling records_per_s"] is None
    assert "| aa | 200 |" in table(w)


def test_machine_cpu_is_the_busy_share_of_all_cores_between_two_readings() -> None:
    before = MachineTicks(busy=1_000, total=4_000)
    # 2 cores for 1 s at 100 ticks/s: 200 ticks, 150 of them busy
    assert MachineTicks(busy=1_150, total=4_200).busy_pct_since(before) == 75.0
    assert MachineTicks(busy=1_000, total=4_000).busy_pct_since(before) is None
    now = MachineTicks.now()
    assert 0 <= now.busy <= now.total
