use crate::ring::place::{GAPS, Label, Placed, RING, Scene, distance, place};

/// A crowded panel: a zigzag series of 20 points joined by a line, each
/// with a whisker, a reference line above them and a band edge below,
/// five rings on five neighbouring points, each label wider than the
/// points are apart.
fn crowded() -> (Scene, Vec<Label>) {
    let pts: Vec<(i32, i32)> = (0..20)
        .map(|i| (30 + 40 * i, if i % 2 == 0 { 170 } else { 230 }))
        .collect();
    let mut segments: Vec<((i32, i32), (i32, i32))> =
        pts.windows(2).map(|w| (w[0], w[1])).collect();
    segments.extend(pts.iter().map(|&(x, y)| ((x, y - 15), (x, y + 15))));
    segments.push(((0, 100), (800, 100)));
    segments.push(((0, 300), (800, 300)));
    let rings: Vec<(i32, i32)> = pts[5..10].to_vec();
    let scene = Scene {
        area: (0, 0, 800, 400),
        points: pts,
        segments,
        rings,
    };
    let labels = (0..5)
        .map(|ring| Label {
            ring,
            layouts: vec![(170, 20), (100, 36)],
        })
        .collect();
    (scene, labels)
}

fn overlaps(a: (i32, i32, i32, i32), b: (i32, i32, i32, i32)) -> bool {
    a.0 < b.2 && b.0 < a.2 && a.1 < b.3 && b.1 < a.3
}

/// The farthest a label's box may be from its ring's centre (px).
fn bound() -> f64 {
    (RING + GAPS[GAPS.len() - 1]) as f64 * 1.5
}

#[test]
fn in_a_crowded_panel_no_label_covers_another_or_a_point_or_a_ring() {
    let (scene, labels) = crowded();
    let placed = place(&scene, &labels);
    assert_eq!(placed.len(), labels.len());
    for (i, a) in placed.iter().enumerate() {
        for b in &placed[i + 1..] {
            assert!(!overlaps(a.rect(), b.rect()), "{a:?} overlaps {b:?}");
        }
        for &(x, y) in &scene.points {
            assert!(
                !overlaps(a.rect(), (x - 5, y - 5, x + 5, y + 5)),
                "{a:?} covers the point ({x}, {y})"
            );
        }
        for &(x, y) in &scene.rings {
            assert!(
                !overlaps(a.rect(), (x - RING, y - RING, x + RING, y + RING)),
                "{a:?} covers the ring at ({x}, {y})"
            );
        }
    }
}

#[test]
fn every_label_stays_near_its_ring_with_a_leader_when_apart() {
    let (scene, labels) = crowded();
    for (l, p) in labels.iter().zip(place(&scene, &labels)) {
        let c = scene.rings[l.ring];
        let d = distance(c, p.rect());
        assert!(d <= bound(), "{p:?} is {d:.0} px from its ring at {c:?}");
        // Apart from the ring: a leader joins them, from the ring's edge
        // to the box.
        match p.leader {
            Some((from, to)) => {
                assert!(d > RING as f64);
                let r = distance(c, (from.0, from.1, from.0, from.1));
                assert!(
                    (r - RING as f64).abs() <= 1.0,
                    "leader starts {r:.1} px out"
                );
                assert_eq!(to, (c.0.clamp(p.x, p.x + p.w), c.1.clamp(p.y, p.y + p.h)));
            }
            None => assert!(d <= (RING + 6) as f64 + 1.0, "{p:?} apart without a leader"),
        }
    }
}

#[test]
fn a_label_never_leaves_the_plot_area() {
    // Rings in the four corners and at the middle of each edge, each
    // label as wide as a third of the area.
    let area = (50, 20, 650, 320);
    let rings = vec![
        (55, 25),
        (645, 25),
        (55, 315),
        (645, 315),
        (350, 25),
        (350, 315),
        (55, 170),
        (645, 170),
    ];
    let scene = Scene {
        area,
        points: rings.clone(),
        segments: vec![],
        rings,
    };
    let labels: Vec<Label> = (0..8)
        .map(|ring| Label {
            ring,
            layouts: vec![(200, 20)],
        })
        .collect();
    for p in place(&scene, &labels) {
        let r = p.rect();
        assert!(
            r.0 >= area.0 && r.1 >= area.1 && r.2 <= area.2 && r.3 <= area.3,
            "{p:?} leaves {area:?}"
        );
    }
    // A label wider than the area still starts inside it.
    let narrow = Scene {
        area: (0, 0, 100, 100),
        rings: vec![(50, 50)],
        ..Default::default()
    };
    let p = place(
        &narrow,
        &[Label {
            ring: 0,
            layouts: vec![(300, 20)],
        }],
    );
    assert!(
        p[0].x >= 0 && p[0].y >= 0 && p[0].y + p[0].h <= 100,
        "{p:?}"
    );
}

#[test]
fn a_label_prefers_its_ring_side_free_of_data_and_the_same_input_places_the_same() {
    // A line through the ring from the left, free space to the right and
    // above: the label touches the ring, off the line.
    let scene = Scene {
        area: (0, 0, 400, 200),
        points: vec![(100, 100), (200, 100)],
        segments: vec![((0, 100), (200, 100))],
        rings: vec![(200, 100)],
    };
    let labels = [Label {
        ring: 0,
        layouts: vec![(120, 20)],
    }];
    let p: Vec<Placed> = place(&scene, &labels);
    assert_eq!(p, place(&scene, &labels));
    assert!(p[0].leader.is_none(), "{p:?}");
    let r = p[0].rect();
    assert!(
        r.3 < 100 || r.1 > 100 || r.0 > 200,
        "{p:?} lies on the line"
    );
}

#[test]
fn a_label_is_nearer_its_own_ring_than_any_other() {
    let (scene, labels) = crowded();
    for (l, p) in labels.iter().zip(place(&scene, &labels)) {
        let own = distance(scene.rings[l.ring], p.rect());
        for (i, &c) in scene.rings.iter().enumerate() {
            assert!(
                i == l.ring || distance(c, p.rect()) >= own,
                "{p:?} is nearer ring {i} than its own ring {}",
                l.ring
            );
        }
    }
}

#[test]
fn a_label_that_fits_the_area_only_moved_is_moved_not_left_hanging_out() {
    // A ring a pixel too near the left edge for its two-line label centred
    // above or below it, the one-line label wider than the area (the
    // stalls figure's B4.1 panel): the two-line label, inside.
    let scene = Scene {
        area: (92, 70, 277, 410),
        rings: vec![(170, 258), (232, 95)],
        ..Default::default()
    };
    let labels: Vec<Label> = (0..2)
        .map(|ring| Label {
            ring,
            layouts: vec![(300, 20), (158, 36)],
        })
        .collect();
    for p in place(&scene, &labels) {
        assert_eq!(p.layout, 1, "{p:?}");
        let r = p.rect();
        assert!(r.0 >= 92 && r.2 <= 277 && r.1 >= 70 && r.3 <= 410, "{p:?}");
    }
}
