//! Pairing a device with the web surface, and its sessions: plain data and
//! the store, no HTTP (the `hark-web` crate carries it).
//!
//! The daemon mints a one-time code ([`mint_code`]: 16 characters from an
//! alphabet without look-alikes, good for [`CODE_TTL`], one use); a device
//! exchanges it ([`pair`]) for a session token (its cookie) and a second
//! token (`csrf`) that every request of the session carries besides, which
//! the web surface hands out this once. The store keeps only SHA-256 hashes
//! of codes and of both tokens, so reading the store opens no session; a
//! revoked device's sessions are deleted with it.

use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::ids::DeviceId;
use crate::store::{DeviceRecord, NewDevice, Store, StoreError, WebSessionRecord};

/// How long a pairing code is good for.
pub const CODE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long a session lasts from pairing (the device pairs again after).
pub const SESSION_TTL: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Characters in a code.
pub const CODE_LEN: usize = 16;
/// The longest device name kept (longer ones are cut).
pub const NAME_MAX: usize = 64;
/// What codes are written in: Crockford's base32, whose look-alikes are
/// read as one (O as 0, I and L as 1), so a code read off a screen is typed
/// right. 32 symbols: a random byte maps onto one evenly.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The system's random source failed: no secret is made without it.
    #[error("the system's random source failed: {0}")]
    Random(getrandom::Error),
}

/// A minted pairing code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// As it is shown: `ABCD-EFGH`.
    pub code: String,
    pub expires: SystemTime,
}

/// A device just paired, with the secrets its browser keeps.
#[derive(Debug, Clone)]
pub struct Paired {
    pub device: DeviceRecord,
    /// The session token (the cookie's value); the store has its hash only.
    pub token: String,
    /// The token its page keeps and sends with every request (named for
    /// its first use, changes); the store has its hash only.
    pub csrf: String,
}

fn random_bytes<const N: usize>() -> Result<[u8; N], PairingError> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(PairingError::Random)?;
    Ok(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A secret's hash, as the store keeps it.
pub fn hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

/// A code as typed, in the form it was minted in: upper case, without the
/// dash or spaces a person adds, look-alikes read as Crockford's base32
/// reads them. `None` when it cannot be a code.
pub fn normalize_code(typed: &str) -> Option<String> {
    let code: String = typed
        .chars()
        .filter(|c| !matches!(c, '-' | ' '))
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        })
        .collect();
    (code.len() == CODE_LEN && code.bytes().all(|b| ALPHABET.contains(&b))).then_some(code)
}

/// Mints a one-time pairing code and keeps its hash in `store`.
pub fn mint_code(store: &Store) -> Result<Code, PairingError> {
    let bytes: [u8; CODE_LEN] = random_bytes()?;
    let code: String = bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect();
    let expires = store.clock().now() + CODE_TTL;
    store.add_pairing_code(&hash(&code), expires)?;
    let groups: Vec<&str> = (0..CODE_LEN)
        .step_by(4)
        .map(|at| &code[at..at + 4])
        .collect();
    Ok(Code {
        code: groups.join("-"),
        expires,
    })
}

/// Exchanges a typed code for a new device named `name` and its session.
/// `None` when the code is wrong, expired or used: nothing is recorded.
pub fn pair(store: &Store, typed: &str, name: &str) -> Result<Option<Paired>, PairingError> {
    let Some(code) = normalize_code(typed) else {
        return Ok(None);
    };
    let token = hex(&random_bytes::<32>()?);
    let csrf = hex(&random_bytes::<32>()?);
    let name = device_name(name);
    let device = store.pair(
        &hash(&code),
        &NewDevice {
            id: DeviceId::random(),
            name: &name,
            token_hash: &hash(&token),
            csrf: &hash(&csrf),
            session_expires: store.clock().now() + SESSION_TTL,
        },
    )?;
    Ok(device.map(|device| Paired {
        device,
        token,
        csrf,
    }))
}

/// A new random secret (64 hex digits), for a push button's one-time
/// token; the store keeps its [`hash`] only.
pub fn secret() -> Result<String, PairingError> {
    Ok(hex(&random_bytes::<32>()?))
}

/// The live session of `token`, if it has one.
pub fn session(store: &Store, token: &str) -> Result<Option<WebSessionRecord>, StoreError> {
    store.web_session(&hash(token))
}

/// Whether a request's `csrf` token is the session's: its hash is the one
/// kept, compared in constant time.
pub fn csrf_matches(session: &WebSessionRecord, given: &str) -> bool {
    session.csrf.as_bytes().ct_eq(hash(given).as_bytes()).into()
}

/// A device's name as kept: trimmed, control characters dropped, at most
/// [`NAME_MAX`] characters; `browser` when nothing is left.
fn device_name(name: &str) -> String {
    let name: String = name
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .take(NAME_MAX)
        .collect();
    if name.is_empty() {
        "browser".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::Clock;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hark.db"), Clock::system()).unwrap();
        (dir, store)
    }

    #[test]
    fn a_code_pairs_once_and_its_session_carries_the_csrf_token() {
        let (_dir, store) = store();
        let code = mint_code(&store).unwrap();
        assert_eq!(code.code.len(), CODE_LEN + 3);
        let paired = pair(&store, &code.code.to_lowercase(), " Pixel\u{7} 8 ")
            .unwrap()
            .unwrap();
        assert_eq!(paired.device.name, "Pixel 8");
        assert!(pair(&store, &code.code, "again").unwrap().is_none());
        let session = session(&store, &paired.token).unwrap().unwrap();
        assert_eq!(session.device.id, paired.device.id);
        assert!(csrf_matches(&session, &paired.csrf));
        assert!(!csrf_matches(&session, ""));
        assert!(!csrf_matches(&session, &paired.token));
        // What the store keeps is not the token: a copy of it opens nothing.
        assert!(!csrf_matches(&session, &session.csrf));
        // Only hashes are kept.
        let mut dump = std::fs::read(store.path()).unwrap();
        dump.extend(std::fs::read(store.path().with_extension("db-wal")).unwrap_or_default());
        let has = |needle: &str| dump.windows(needle.len()).any(|w| w == needle.as_bytes());
        for secret in [&paired.token, &paired.csrf] {
            assert!(!has(secret));
            assert!(has(&hash(secret)));
        }
    }

    #[test]
    fn a_revoked_device_has_no_session_and_a_wrong_code_pairs_nothing() {
        let (_dir, store) = store();
        assert!(pair(&store, "ABCD-EFGH", "x").unwrap().is_none());
        assert!(pair(&store, "not a code at all", "x").unwrap().is_none());
        let code = mint_code(&store).unwrap();
        let paired = pair(&store, &code.code, "x").unwrap().unwrap();
        assert!(store.revoke_device(paired.device.id).unwrap());
        assert!(session(&store, &paired.token).unwrap().is_none());
        assert!(store.devices().unwrap().is_empty());
        assert_eq!(
            store.device_name(paired.device.id).unwrap().as_deref(),
            Some("x")
        );
    }
}
