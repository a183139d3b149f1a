//! Unit tests of `failover`: the analysis's metrics on hand-written rows.

mod analysis {
    use crate::experiments::failover::analyze::*;
    use crate::experiments::failover::rows::*;

    fn row(strategy: &str, wait: bool, delay: f64, over: i64) -> Row {
        Row {
            strategy: strategy.into(),
            wait,
            repl_delay_ms: delay,
            over_admitted: over,
            ..Default::default()
        }
    }

    #[test]
    fn cells_are_strategy_wait_and_delay() {
        let rows = vec![
            row("fixed-window-lua", false, 0.0, 0),
            row("fixed-window-lua", false, 0.0, 3),
            row("fixed-window-lua", true, 0.0, 0),
            row("fixed-window-lua", false, 5.0, 1),
        ];
        let c = cells(&rows);
        assert_eq!(c.len(), 3);
        assert_eq!(
            c[2],
            ("fixed-window-lua".to_string(), false, 5.0f64.to_bits())
        );
    }

    #[test]
    fn cell_stats_count_over_admission_per_cell() {
        let rows = vec![
            row("fixed-window-lua", false, 1.0, 0),
            row("fixed-window-lua", false, 1.0, 4),
            row("fixed-window-lua", false, 1.0, -1),
            row("fixed-window-lua", true, 1.0, 9),
        ];
        let st = CellStats::of(&rows, &("fixed-window-lua".into(), false, 1.0f64.to_bits()));
        assert_eq!((st.trials, st.trials_over), (3, 1));
        assert_eq!((st.over.mean, st.over.min, st.over.max), (1.0, -1.0, 4.0));
    }
}
