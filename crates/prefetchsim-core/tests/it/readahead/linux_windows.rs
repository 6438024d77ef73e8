//! Linux read-ahead window sequences for each mode (`linux-readahead.md`, "Worked check").

use super::*;

#[test]
fn linux_2616_windows_on_one_page_sequential_reads() {
    let (mut l, log) = probed(1024, json!({"mode": "2.6.16"}));
    let steps = replay(&mut l, &log, &seq(100, 1));
    let windows: Vec<_> = steps.iter().map(|(_, s, _)| w2616(*s)).collect();
    // read 0 -> current [0,3]; read 1 -> ahead [4,11]; read 4 -> current [4,11], ahead [12,27];
    // read 12 -> ahead [28,59]; then 32-page windows.
    #[rustfmt::skip]
    let changes = [
        (0, (0, 4, 0, 0)),
        (1, (0, 4, 4, 8)),
        (4, (4, 8, 12, 16)),
        (12, (12, 16, 28, 32)),
        (28, (28, 32, 60, 32)),
        (60, (60, 32, 92, 32)),
        (92, (92, 32, 124, 32)),
    ];
    assert_steps(&windows, &changes, "2.6.16");
    // The demand read and the first window are one I/O; the ahead windows are prefetch-only reads.
    assert_eq!(steps[0].0, vec![fetch(0, 4, 1)]);
    assert_eq!(steps[1].0, vec![fetch(4, 8, 0)]);
    assert_eq!(steps[2].0, vec![]);
    assert_eq!(steps[4].0, vec![fetch(12, 16, 0)]);
    assert_eq!(steps[12].0, vec![fetch(28, 32, 0)]);
    assert_eq!(l.counters().misses, 1);
}

#[test]
fn linux_2616_windows_on_eight_page_reads() {
    let (mut l, log) = probed(1024, json!({"mode": "2.6.16"}));
    let steps = replay(&mut l, &log, &seq(12, 8));
    let windows: Vec<_> = steps.iter().map(|(_, s, _)| w2616(*s)).collect();
    // init_size(8) = 16; the ahead window doubles to 32 and stays there.
    #[rustfmt::skip]
    let changes = [
        (0, (0, 16, 0, 0)),
        (1, (0, 16, 16, 32)),
        (2, (16, 32, 48, 32)),
        (6, (48, 32, 80, 32)),
        (10, (80, 32, 112, 32)),
    ];
    assert_steps(&windows, &changes, "2.6.16, 8-page reads");
    assert_eq!(steps[0].0, vec![fetch(0, 16, 8)]);
    assert_eq!(steps[1].0, vec![fetch(16, 32, 0)]);
}

#[test]
fn linux_ondemand_windows_and_markers_on_one_page_sequential_reads() {
    let (mut l, log) = probed(1024, json!({"mode": "ondemand"}));
    let steps = replay(&mut l, &log, &seq(100, 1));
    let windows: Vec<_> = steps.iter().map(|(_, s, _)| wond(*s)).collect();
    // (0,4,3) marker on 1; hit on 1 -> (4,8,8) marker on 4; 4 -> (12,16,16); 12 -> (28,32,32); stays 32.
    #[rustfmt::skip]
    let changes = [
        (0, (0, 4, 3)),
        (1, (4, 8, 8)),
        (4, (12, 16, 16)),
        (12, (28, 32, 32)),
        (28, (60, 32, 32)),
        (60, (92, 32, 32)),
        (92, (124, 32, 32)),
    ];
    assert_steps(&windows, &changes, "ondemand");
    let marks: Vec<_> = steps.iter().map(|(_, _, m)| m.first().copied()).collect();
    assert_steps(
        &marks,
        &[(0, Some(1)), (1, Some(4)), (4, Some(12)), (12, Some(28)), (28, Some(60)), (60, Some(92)), (92, Some(124))],
        "ondemand marker",
    );
    assert!(steps.iter().all(|(_, _, m)| m.len() == 1));
    assert_eq!(steps[0].0, vec![fetch(0, 4, 1)]);
    assert_eq!(steps[1].0, vec![fetch(4, 8, 0)]);
    assert_eq!(steps[12].0, vec![fetch(28, 32, 0)]);
}

#[test]
fn linux_ondemand_windows_on_eight_page_reads() {
    let (mut l, log) = probed(1024, json!({"mode": "ondemand"}));
    let steps = replay(&mut l, &log, &seq(12, 8));
    let windows: Vec<_> = steps.iter().map(|(_, s, _)| wond(*s)).collect();
    // initial (0, 16, async 16-8 = 8): marker on 8, the first page after the read.
    #[rustfmt::skip]
    let changes = [(0, (0, 16, 8)), (1, (16, 32, 32)), (2, (48, 32, 32)), (6, (80, 32, 32)), (10, (112, 32, 32))];
    assert_steps(&windows, &changes, "ondemand 8");
    assert_eq!(steps[0].0, vec![fetch(0, 16, 8)]);
    assert_eq!(steps[0].2, vec![8]);
}

#[test]
fn linux_ondemand_oversize_read_merges_its_own_marker() {
    // A 40-page read from 0: the initial window of 32 with async 32 would hit its own marker at once, so
    // it becomes (0, 32, 16) with the marker on page 16, inside the read. Replayed page by page, the
    // marker fires in the same read and moves the window to (32, 32, 32), whose marker on page 32 (also
    // inside the read) moves it again to (64, 32, 32): one fetch of 96 pages, 40 of them demand.
    let (mut l, log) = probed(1024, json!({"mode": "ondemand"}));
    let steps = replay(&mut l, &log, &[Request::read(0, 40)]);
    assert_eq!(wond(steps[0].1), (64, 32, 32));
    assert_eq!(steps[0].2, vec![64]);
    assert_eq!(steps[0].0, vec![fetch(0, 96, 40)]);
}

#[test]
fn linux_pfc_paper_groups_on_sequential_reads() {
    let (mut l, log) = probed(1024, json!({}));
    let steps = replay(&mut l, &log, &seq(100, 1));
    let groups: Vec<_> = steps.iter().map(|(_, s, _)| wpaper(*s).0.unwrap()).collect();
    // Groups [1,3] at read 0, [4,9] at 1, [10,21] at 4, [22,45] at 10, [46,77] at 22, then 32 blocks.
    #[rustfmt::skip]
    let changes = [(0, (1, 3)), (1, (4, 9)), (4, (10, 21)), (10, (22, 45)), (22, (46, 77)), (46, (78, 109)), (78, (110, 141))];
    assert_steps(&groups, &changes, "pfc-paper");
    assert_eq!(wpaper(steps[4].1).1, Some((4, 9)), "the window is the previous group and the current one");
    assert_eq!(steps[0].0, vec![fetch(0, 4, 1)]);
    assert_eq!(steps[1].0, vec![fetch(4, 6, 0)]);

    // 8-block reads: the group grows from 3 (6, 12, 24, 32) and a new one starts when the read
    // reaches the current group.
    let (mut l, log) = probed(1024, json!({"mode": "pfc-paper"}));
    let steps = replay(&mut l, &log, &seq(12, 8));
    let groups: Vec<_> = steps.iter().map(|(_, s, _)| wpaper(*s).0.unwrap()).collect();
    #[rustfmt::skip]
    let changes = [(0, (8, 10)), (1, (16, 21)), (2, (24, 35)), (3, (36, 59)), (4, (60, 91)), (7, (92, 123)), (11, (124, 155))];
    assert_steps(&groups, &changes, "pfc-paper 8");

    // The literal reading (`every_access`): a new group on every access inside the window.
    let (mut l, log) = probed(1024, json!({"pfc_paper_trigger": "every_access"}));
    let steps = replay(&mut l, &log, &seq(4, 1));
    let groups: Vec<_> = steps.iter().map(|(_, s, _)| wpaper(*s).0.unwrap()).collect();
    // [1,3], [4,9], [10,21]; read 3 is outside [4,21] and resets the group (linux-readahead.md §C).
    assert_eq!(groups, vec![(1, 3), (4, 9), (10, 21), (4, 6)]);
}
