//! This server's name among replicas, and the handles it mints (docs/scale-out.md).
//!
//! Behind a balancer, every handle a replica hands out (session ids, task ids, the handle
//! in a `runbox://` URI, a handshake-era client's `Mcp-Session-Id`) starts with the
//! replica's id and a dot, so the balancer can send each later request to the replica
//! that holds what the handle names, from a header alone. The rest is 128 random bits:
//! unguessable, and safe in an HTTP header. A handle another replica minted is told
//! apart from one that never existed, so the error can say where it belongs.

use std::sync::Arc;

/// The longest replica id.
pub const MAX_REPLICA_ID: usize = 32;

/// A replica id that is not a short name.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "`{0}` cannot be a replica id: use 1 to {MAX_REPLICA_ID} characters of a-z, 0-9 and `-` \
     (it starts every handle this replica mints, and a balancer matches it)"
)]
pub struct InvalidReplicaId(pub String);

/// A handle another replica minted.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "{kind} `{handle}` belongs to replica `{owner}`, and this is {here}: the request reached \
     the wrong replica (a balancer must route by the handle's prefix, see docs/scale-out.md), \
     or replica `{owner}` has stopped and what it held is gone"
)]
pub struct OtherReplica {
    pub kind: &'static str,
    /// The handle as it is shown ([`shown`]).
    pub handle: String,
    pub owner: String,
    /// "replica `r1`", or "a server without --replica-id".
    pub here: String,
}

/// This server's replica id, if it has one.
#[derive(Debug, Clone, Default)]
pub struct Replica {
    id: Option<Arc<str>>,
}

impl Replica {
    /// A server alone (`None`) or the replica `id`.
    pub fn new(id: Option<&str>) -> Result<Replica, InvalidReplicaId> {
        match id {
            None => Ok(Replica::default()),
            Some(id) if is_replica_id(id) => Ok(Replica {
                id: Some(Arc::from(id)),
            }),
            Some(id) => Err(InvalidReplicaId(id.to_string())),
        }
    }

    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// A new handle: `ID.` and 128 random bits in hex (just the bits without an id).
    pub fn mint(&self) -> String {
        let bits = random_hex();
        match &self.id {
            Some(id) => format!("{id}.{bits}"),
            None => bits,
        }
    }

    /// The replica that minted `handle`, when it is another one (`None` for this one's,
    /// and for a handle no replica minted: an id and a dot before 128 random bits in hex,
    /// or rmcp's UUID of a protocol session).
    pub fn owner_elsewhere<'a>(&self, handle: &'a str) -> Option<&'a str> {
        let (owner, bits) = handle.split_once('.')?;
        let minted = (32..=36).contains(&bits.len())
            && bits.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
        (minted && is_replica_id(owner) && Some(owner) != self.id()).then_some(owner)
    }

    /// The error for a `kind` of handle ("session", "task", "resource") that `handle`
    /// names, when another replica minted it.
    pub fn elsewhere(&self, kind: &'static str, handle: &str) -> Option<OtherReplica> {
        let owner = self.owner_elsewhere(handle)?;
        Some(OtherReplica {
            kind,
            handle: shown(handle),
            owner: owner.to_string(),
            here: self.describe(),
        })
    }

    /// "replica `r1`", or "a server without --replica-id".
    pub fn describe(&self) -> String {
        match &self.id {
            Some(id) => format!("replica `{id}`"),
            None => "a server without --replica-id".to_string(),
        }
    }
}

/// A handle (or URI) as an error shows it: escaped, and cut after 120 characters.
pub fn shown(handle: &str) -> String {
    let escaped: String = handle.escape_debug().collect();
    match escaped.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &escaped[..cut]),
        None => escaped,
    }
}

/// Whether `id` is a short name: 1 to [`MAX_REPLICA_ID`] of `a-z`, `0-9` and `-`.
pub fn is_replica_id(id: &str) -> bool {
    (1..=MAX_REPLICA_ID).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// 128 random bits as 32 lowercase hex digits.
pub fn random_hex() -> String {
    let mut bits = [0u8; 16];
    getrandom::getrandom(&mut bits).expect("the operating system's random source");
    hex::encode(bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_carry_the_replica_id_and_128_random_bits() {
        let alone = Replica::default();
        let a = alone.mint();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, alone.mint());
        let r1 = Replica::new(Some("r-1")).unwrap();
        let h = r1.mint();
        assert!(h.starts_with("r-1.") && h.len() == 36, "{h}");
        assert!(h.bytes().all(|b| b.is_ascii_graphic()));
    }

    #[test]
    fn replica_ids_are_short_names() {
        for bad in ["", "R1", "r.1", "r 1", "r_1", &"r".repeat(33), "é"] {
            let e = Replica::new(Some(bad)).unwrap_err();
            assert!(e.to_string().contains("1 to 32 characters"), "{e}");
        }
        assert!(Replica::new(Some(&"r".repeat(32))).is_ok());
        assert!(Replica::new(Some("runbox-0")).is_ok());
    }

    #[test]
    fn a_handle_of_another_replica_names_its_owner() {
        let r0 = Replica::new(Some("r0")).unwrap();
        let theirs = Replica::new(Some("r1")).unwrap().mint();
        assert_eq!(r0.owner_elsewhere(&theirs), Some("r1"));
        assert_eq!(r0.owner_elsewhere(&r0.mint()), None);
        // Never minted by any replica: simply unknown.
        assert_eq!(r0.owner_elsewhere(&Replica::default().mint()), None);
        assert_eq!(r0.owner_elsewhere("Not.A.Replica"), None);
        assert_eq!(r0.owner_elsewhere("r1.abc"), None);
        assert_eq!(
            r0.owner_elsewhere("r1.8b4f5fd6-cec3-4287-9688-0330e4fdb7e3"),
            Some("r1")
        );
        let long = format!("{theirs}\n{}", "x".repeat(500));
        assert_eq!(r0.owner_elsewhere(&long), None);
        let shown = shown(&format!("r1.\n{}", "y".repeat(500)));
        assert!(
            shown.starts_with("r1.\\ny") && shown.ends_with('…'),
            "{shown}"
        );
        assert_eq!(shown.chars().count(), 121);
        let e = r0.elsewhere("session", &theirs).unwrap().to_string();
        assert!(
            e.contains("belongs to replica `r1`") && e.contains("this is replica `r0`"),
            "{e}"
        );
        // A server alone still says where a replica's handle belongs.
        let e = Replica::default().elsewhere("task", &theirs).unwrap();
        assert!(
            e.to_string().contains("a server without --replica-id"),
            "{e}"
        );
    }
}
