//! `Conn`: what a strategy talks to. Either one connection, or a Redis Cluster
//! client that routes each command by the slot of the key the caller names.
//!
//! Routing is explicit (`call(route_key, ..)`): a script is sent to the node
//! that owns `KEYS[1]`, exactly as a cluster-aware client does, so a script
//! that touches an undeclared key on another node fails the way it fails in
//! production ("Script attempted to access a non local key in a cluster node").

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use crate::resp::{Arg, ArgList, Connection, Reply};
use limitbench_base::error::{Error, Result};

pub const CLUSTER_SLOTS: usize = 16384;

pub enum Conn {
    Single(Connection),
    Cluster(ClusterConn),
}

impl Conn {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        Ok(Conn::Single(Connection::connect(addr).await?))
    }

    /// Run one command on the node owning `route_key` (ignored when single).
    pub async fn call(&mut self, route_key: &str, args: &[Arg<'_>]) -> Result<Reply> {
        match self {
            Conn::Single(c) => c.call(args).await,
            Conn::Cluster(c) => c.call(route_key, args).await,
        }
    }

    /// `call` of `head` followed by the arguments in `tail` (a script call
    /// whose KEYS and ARGV were built into `ArgList`s).
    pub async fn call_with(
        &mut self,
        route_key: &str,
        head: &[Arg<'_>],
        tail: &[&ArgList],
    ) -> Result<Reply> {
        match self {
            Conn::Single(c) => c.call_with(head, tail).await,
            Conn::Cluster(c) => c.node_for(route_key)?.call_with(head, tail).await,
        }
    }

    /// An empty argument list to build a command in. Lists given back with
    /// `give_back` are kept and lent again, so a worker that builds its
    /// arguments at run time stops allocating once its lists have grown.
    pub fn take_arg_list(&mut self) -> ArgList {
        self.spare_args().pop().unwrap_or_default()
    }

    pub fn give_back(&mut self, mut list: ArgList) {
        list.clear();
        self.spare_args().push(list);
    }

    fn spare_args(&mut self) -> &mut Vec<ArgList> {
        match self {
            Conn::Single(c) => &mut c.spare_args,
            Conn::Cluster(c) => &mut c.spare_args,
        }
    }

    /// Several commands in one round trip on the node owning `route_key`.
    pub async fn pipeline(&mut self, route_key: &str, cmds: &[&[Arg<'_>]]) -> Result<Vec<Reply>> {
        match self {
            Conn::Single(c) => c.pipeline(cmds).await,
            Conn::Cluster(c) => c.node_for(route_key)?.pipeline(cmds).await,
        }
    }

    /// Round trips made so far, over every node.
    pub fn round_trips(&self) -> u64 {
        match self {
            Conn::Single(c) => c.round_trips,
            Conn::Cluster(c) => c.nodes.iter().map(|n| n.round_trips).sum(),
        }
    }

    pub fn set_timeout(&mut self, t: Option<Duration>) {
        match self {
            Conn::Single(c) => c.timeout = t,
            Conn::Cluster(c) => c.nodes.iter_mut().for_each(|n| n.timeout = t),
        }
    }

    /// Every underlying node connection (one for a single server).
    pub fn nodes_mut(&mut self) -> Vec<&mut Connection> {
        match self {
            Conn::Single(c) => vec![c],
            Conn::Cluster(c) => c.nodes.iter_mut().collect(),
        }
    }
}

/// A client for a Redis Cluster: one connection per master, a slot map.
pub struct ClusterConn {
    nodes: Vec<Connection>,
    slot_owner: Vec<u16>,
    spare_args: Vec<ArgList>,
}

impl ClusterConn {
    /// Connect to every master listed by `CLUSTER SLOTS` on `seed`.
    pub async fn connect(seed: SocketAddr) -> Result<Self> {
        let mut first = Connection::connect(seed).await?;
        let (addrs, owner) = slot_map(&mut first).await?;
        let mut nodes = Vec::new();
        for a in &addrs {
            nodes.push(Connection::connect(*a).await?);
        }
        Ok(ClusterConn {
            nodes,
            slot_owner: owner,
            spare_args: Vec::new(),
        })
    }

    pub fn node_addrs(&self) -> Vec<SocketAddr> {
        self.nodes.iter().map(|n| n.addr()).collect()
    }

    /// The address of the master that owns `key`'s slot.
    pub fn owner_of(&self, key: &str) -> SocketAddr {
        self.nodes[self.slot_owner[key_slot(key.as_bytes()) as usize] as usize].addr()
    }

    fn node_for(&mut self, key: &str) -> Result<&mut Connection> {
        let i = self.slot_owner[key_slot(key.as_bytes()) as usize];
        if i == u16::MAX {
            return Err(Error::Other(format!("no node owns the slot of key {key}")));
        }
        Ok(&mut self.nodes[i as usize])
    }

    pub async fn call(&mut self, route_key: &str, args: &[Arg<'_>]) -> Result<Reply> {
        self.node_for(route_key)?.call(args).await
    }
}

async fn slot_map(c: &mut Connection) -> Result<(Vec<SocketAddr>, Vec<u16>)> {
    let reply = c.call(&crate::args!["CLUSTER", "SLOTS"]).await?;
    let ranges = reply
        .into_array()
        .ok_or_else(|| Error::Protocol("CLUSTER SLOTS: not an array".into()))?;
    let mut addrs: Vec<SocketAddr> = Vec::new();
    let mut index: HashMap<SocketAddr, u16> = HashMap::new();
    let mut owner = vec![u16::MAX; CLUSTER_SLOTS];
    for r in ranges {
        let r = r.into_array().unwrap_or_default();
        if r.len() < 3 {
            continue;
        }
        let (lo, hi) = (
            r[0].as_i64().unwrap_or(0) as usize,
            r[1].as_i64().unwrap_or(-1) as usize,
        );
        let master = r[2].clone().into_array().unwrap_or_default();
        let ip = master
            .first()
            .and_then(|v| v.as_string())
            .unwrap_or_default();
        let port = master.get(1).and_then(|v| v.as_i64()).unwrap_or(0);
        let addr: SocketAddr = format!("{ip}:{port}")
            .parse()
            .map_err(|_| Error::Protocol(format!("CLUSTER SLOTS: bad address {ip}:{port}")))?;
        // The nodes a user-named seed lists are the user's too.
        if crate::resp::is_allowed_remote(&c.addr()) {
            crate::resp::allow_remote(addr);
        }
        crate::resp::inherit_auth(&c.addr(), addr);
        crate::resp::require_loopback(&addr)?;
        let i = *index.entry(addr).or_insert_with(|| {
            addrs.push(addr);
            (addrs.len() - 1) as u16
        });
        for o in owner
            .iter_mut()
            .take(hi.min(CLUSTER_SLOTS - 1) + 1)
            .skip(lo)
        {
            *o = i;
        }
    }
    Ok((addrs, owner))
}

/// The hash slot of a key: CRC16 (XMODEM) of the key, or of its hash tag
/// (the part between the first `{` and the next `}`, when not empty).
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) % CLUSTER_SLOTS as u16
}

/// Something set up once on every writable node before any timing (a
/// strategy's scripts and function libraries): what `Fleet::prepare` takes,
/// so that the fleet needs to know nothing of strategies.
#[async_trait::async_trait]
pub trait NodeSetup: Send + Sync {
    async fn set_up_node(&self, node: &mut Connection) -> Result<()>;
}

fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_the_cluster_spec() {
        // The spec's test vector: CRC16("123456789") = 0x31C3.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(
            key_slot(b"{user1000}.following"),
            key_slot(b"{user1000}.followers")
        );
        assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % 16384);
        assert_eq!(key_slot(b"foo{{bar}}zap"), crc16(b"{bar") % 16384);
    }
}
