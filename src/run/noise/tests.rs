//! The noise sampler's tests: real processes, no mocks.

use super::*;

#[test]
fn a_cell_is_written_once_the_sampler_has_seen_past_its_end() {
    let noise = NoiseSampler::start();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(50));
    let mut spans = vec![("c0".to_string(), t0, Instant::now())];
    // The first interval ends about a second after the start.
    assert!(noise.take_ready("e", &mut spans).is_empty());
    assert_eq!(spans.len(), 1);
    std::thread::sleep(Duration::from_millis(1400));
    let later = vec![("c1".to_string(), Instant::now(), Instant::now())];
    spans.extend(later);
    let ready = noise.take_ready("e", &mut spans);
    assert_eq!(ready.len(), 1, "{ready:?}");
    assert_eq!(ready[0].cell, "c0");
    assert_eq!(spans.len(), 1, "c1 ended after the last interval");
    let rest = noise.stop_spans("e", &spans);
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].cell, "c1");
}

/// The tests that measure busy loops run one at a time (each would be
/// the others' noise on a machine of few cores).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// A busy loop, killed when dropped: a child of this process, or
/// (`beside`) a process whose parent exited, so that nothing of this
/// process is in its ancestry.
struct Hog(u32);

impl Hog {
    fn child() -> (Self, std::process::Child) {
        let c = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        (Hog(c.id()), c)
    }

    fn beside() -> Self {
        let out = std::process::Command::new("sh")
            .args([
                "-c",
                "(while :; do :; done) >/dev/null 2>&1 </dev/null & echo $!",
            ])
            .output()
            .unwrap();
        Hog(String::from_utf8_lossy(&out.stdout).trim().parse().unwrap())
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        // SAFETY: kill(2) on a pid this test started.
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}

#[test]
fn a_child_of_the_harness_is_its_own_and_a_hog_beside_it_is_other() {
    let _one = one_at_a_time();
    let (own, mut child) = Hog::child();
    let beside = Hog::beside();
    let me = std::process::id();
    let t0 = Instant::now();
    let s0 = proctree::snapshot();
    std::thread::sleep(Duration::from_millis(1500));
    let s1 = proctree::snapshot();
    let secs = t0.elapsed().as_secs_f64();
    let none = BTreeMap::new();
    let split = proctree::split(&s0, &s1, secs, me, &none);
    // The same interval with a root that is no process: everything is other.
    let all = proctree::split(&s0, &s1, secs, 0, &none);
    drop(own);
    let _ = child.wait();
    let beside_pid = beside.0;
    drop(beside);
    let cores = |v: &[(u32, String, f64)], pid: u32| v.iter().find(|p| p.0 == pid).map(|p| p.2);
    let own_cores = cores(&all.others, child.id()).expect("the child was running");
    // On an idle machine each loop takes ~1 core; other work on this
    // shared machine may take much of it, so the loops are compared.
    assert!(own_cores > 0.05, "the child's busy loop: {own_cores}");
    assert_eq!(
        cores(&split.others, child.id()),
        None,
        "our child counted as other"
    );
    assert_eq!(
        cores(&split.others, me),
        None,
        "the harness counted as other"
    );
    assert!(
        split.harness >= own_cores - 0.05,
        "{} < {own_cores}",
        split.harness
    );
    let other: f64 = split.others.iter().map(|p| p.2).sum();
    let everything: f64 = all.others.iter().map(|p| p.2).sum();
    assert!(
        everything - other >= own_cores - 0.05,
        "{everything} - {other}"
    );
    let hog = cores(&split.others, beside_pid).expect("the hog beside is other");
    // Both loops get the scheduler's share (the one beside, in its own
    // session, rather more); the machine's others include it.
    assert!(
        hog > 0.5 * own_cores,
        "the loop beside: {hog}, ours: {own_cores}"
    );
    assert!(other >= hog);
}

#[test]
fn a_sampler_names_the_busiest_other_and_never_its_own_child() {
    let _one = one_at_a_time();
    let (own, mut child) = Hog::child();
    let beside = Hog::beside();
    let noise = NoiseSampler::start_for(std::process::id(), None);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_millis(1300));
    let rows = noise.stop_spans("e", &[("c".into(), t0, Instant::now())]);
    let (child_pid, beside_pid) = (child.id(), beside.0);
    drop((own, beside));
    let _ = child.wait();
    let row = &rows[0];
    assert!(
        !row.busiest_other.contains(&format!("({child_pid})")),
        "{row:?}"
    );
    // The loop beside gets its share even among other work (~1 core idle).
    assert!(row.other_cpu_cores_mean > 0.1, "{row:?}");
    assert!(
        row.other_cpu_cores_max >= row.other_cpu_cores_mean,
        "{row:?}"
    );
    // The hog beside is the busiest unless other work on this shared
    // machine outran a busy loop.
    assert!(!row.busiest_other.is_empty(), "{row:?} (hog {beside_pid})");
    assert_eq!(
        (row.beside_lanes, row.beside_lanes_cpu_cores_mean),
        (0, 0.0)
    );
}

#[test]
fn a_resumed_table_without_the_lane_columns_keeps_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("noise.csv");
    assert!(takes_lane_columns(&path), "a new table");
    let old = "experiment,cell,seconds,other_cpu_cores_mean,other_cpu_cores_max,busiest_other\n";
    std::fs::write(&path, old).unwrap();
    assert!(!takes_lane_columns(&path));
    let row = summarise("e", "c", 1.0, &[], None);
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    for r in without_lanes(&[row]) {
        w.serialize(r).unwrap();
    }
    let line = String::from_utf8(w.into_inner().unwrap()).unwrap();
    assert_eq!(line.split(',').count(), old.split(',').count(), "{line}");
    // The table reads as one, its rows without the lane columns.
    let table = format!("{old}{line}");
    let rows: Vec<NoiseRow> = csv::Reader::from_reader(table.as_bytes())
        .deserialize()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!((rows[0].cell.as_str(), rows[0].beside_lanes), ("c", 0));
}

/// Lane `label`: a sampler of its own and a busy process started through
/// the reaper (as a lane starts its servers), over `ms`.
async fn busy_lane(label: &str, ms: u64) -> NoiseRow {
    lane(label.to_string(), async {
        let noise = NoiseSampler::start();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "while :; do :; done"]);
        let mut hog = reaper::spawn(cmd, None).unwrap();
        let t0 = Instant::now();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let rows = noise.stop_spans("e", &[(label.to_string(), t0, Instant::now())]);
        reaper::kill(&mut hog);
        rows.into_iter().next().unwrap()
    })
    .await
}

#[test]
fn two_lanes_beside_each_other_are_flagged_as_beside() {
    let _one = one_at_a_time();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (a, b) = rt.block_on(async {
        tokio::join!(
            busy_lane("test lane a", 1500),
            busy_lane("test lane b", 1500)
        )
    });
    for row in [&a, &b] {
        assert_eq!(row.beside_lanes, 1, "{row:?}");
        // The other lane's busy loop: ~1 core on an idle machine, its
        // share of it beside other work.
        assert!(row.beside_lanes_cpu_cores_mean > 0.05, "{row:?}");
        // Both loops are the harness's own, not other.
        assert!(!row.busiest_other.starts_with("sh "), "{row:?}");
    }
    // Alone, a lane's own servers are not beside it.
    let alone = rt.block_on(busy_lane("test lane c", 1200));
    assert_eq!(alone.beside_lanes, 0, "{alone:?}");
    assert_eq!(alone.beside_lanes_cpu_cores_mean, 0.0, "{alone:?}");
    let row = summarise(
        "t",
        "c",
        2.0,
        &[
            Interval {
                end: Instant::now(),
                seconds: 1.0,
                other_cores: 0.2,
                steal_cores: 0.0,
                busiest: Some(("a (1)".into(), 0.2)),
                lanes: [("x".to_string(), 0.4), ("me".to_string(), 0.9)].into(),
                // Two lanes ran: half of the harness's own CPU is x's.
                harness: 0.4,
                active: vec!["x".into(), "me".into()],
            },
            Interval {
                end: Instant::now(),
                seconds: 3.0,
                other_cores: 0.6,
                steal_cores: 0.0,
                busiest: Some(("b (2)".into(), 0.5)),
                lanes: BTreeMap::new(),
                harness: 0.3,
                active: vec!["me".into()],
            },
        ],
        Some("me"),
    );
    assert_eq!(row.other_cpu_cores_mean, 0.5);
    assert_eq!(row.other_cpu_cores_max, 0.6);
    assert_eq!(row.busiest_other, "b (2) 0.50");
    // (0.4 + 0.4 / 2) over 1 s of 4.
    assert_eq!(row.beside_lanes_cpu_cores_mean, 0.15);
}

#[test]
fn stolen_time_between_two_readings_is_cores_and_counts_in_a_cells_row() {
    let t0 = Instant::now();
    let hz = proctree::ticks_per_second();
    let at = |secs: f64, steal: Option<u64>| Reading {
        at: t0 + Duration::from_secs_f64(secs),
        procs: proctree::Snapshot::new(),
        steal_ticks: steal,
    };
    // Half a core stolen for two seconds: hz ticks.
    let i = interval(&at(0.0, Some(1000)), &at(2.0, Some(1000 + hz as u64)), 0);
    assert!((i.steal_cores - 0.5).abs() < 1e-9, "{}", i.steal_cores);
    // A kernel that does not report it: no steal, never a guess.
    let none = interval(&at(0.0, None), &at(2.0, Some(5000)), 0);
    assert_eq!(none.steal_cores, 0.0);
    // A cell's row weighs each interval by its length.
    let quiet = interval(&at(2.0, Some(0)), &at(4.0, Some(0)), 0);
    let row = summarise("e", "c", 4.0, &[i, quiet], None);
    assert!((row.steal_cores_mean - 0.25).abs() < 1e-3, "{row:?}");
}
