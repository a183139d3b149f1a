//! Every server of the matrix, started the way `limitbench matrix` starts
//! it: fetched (or found), its identity and own defaults read from a bare
//! server, then started with limitbench's config and a script loaded. A
//! server whose wheel cannot be had here is skipped with the reason printed.

use limitbench::servers::{self, Availability, identity};
use limitbench_core::args;
use limitbench_core::fleet::{Fleet, ServerConfig};

#[tokio::test]
async fn each_server_starts_as_the_matrix_starts_it_and_names_itself() {
    let cache = servers::cache_dir();
    let mut ran = 0;
    for spec in servers::SERVERS {
        let bin = match spec.fetch(&cache) {
            Availability::Ready(b) => b,
            Availability::Fetchable => panic!("{}: fetch left it fetchable", spec.name),
            Availability::Unavailable(why) => {
                // The studies' server is the one the whole suite needs.
                assert_ne!(
                    spec.name,
                    limitbench_analysis::matrix::STUDY_SERVER,
                    "{why}"
                );
                eprintln!("skipped {}: {why}", spec.name);
                continue;
            }
        };
        let id = identity::probe(&bin).await.unwrap();
        assert_eq!(id.product, spec.product, "{}: {id:?}", spec.name);
        assert_eq!(id.version, spec.version, "{}: {id:?}", spec.name);
        assert!(!id.mem_allocator.is_empty(), "{}: {id:?}", spec.name);
        assert!(!id.version_malloc.is_empty(), "{}: {id:?}", spec.name);
        if spec.product == "Valkey" {
            // Valkey answers with a compatibility redis_version, not its own.
            assert_eq!(id.redis_version, "7.2.4", "{}", spec.name);
        }
        // A bare server keeps its own defaults: the save rules limitbench
        // turns off are still on, and every lazyfree setting is read.
        assert_ne!(
            id.defaults.get("save").map(String::as_str),
            Some(""),
            "{}: {id:?}",
            spec.name
        );
        for k in [
            "lazyfree-lazy-expire",
            "lazyfree-lazy-user-del",
            "zset-max-listpack-entries",
            "latency-monitor-threshold",
        ] {
            assert!(
                id.defaults.contains_key(k),
                "{}: {k} not read: {id:?}",
                spec.name
            );
        }
        assert_eq!(
            id.defaults["latency-monitor-threshold"], "0",
            "{}",
            spec.name
        );

        // Then as the experiments start it: limitbench's config applies.
        let fleet = Fleet::standalone(
            &bin,
            ServerConfig::default().with("lazyfree-lazy-expire", "no"),
        )
        .await
        .unwrap();
        let mut c = fleet.node_connections().await.unwrap().remove(0);
        let r = c
            .call(&args!["CONFIG", "GET", "latency-monitor-threshold"])
            .await
            .unwrap();
        assert_eq!(
            r.into_array().unwrap()[1].as_string().unwrap(),
            "1",
            "{}",
            spec.name
        );
        let r = c
            .call(&args![
                "EVAL",
                "return redis.call('INCR', KEYS[1])",
                "1",
                "k"
            ])
            .await
            .unwrap();
        assert_eq!(r.as_i64(), Some(1), "{}", spec.name);
        ran += 1;
    }
    eprintln!("{ran} of {} servers started", servers::SERVERS.len());
    assert!(ran >= 1);
}
