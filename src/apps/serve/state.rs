//! `StepState`: what an explorer keeps between two steps (the search that opened the page, the
//! Lookup cursor, the docstore and profile they belong to), as the opaque string `/v1/step` hands
//! the client and takes back.
//!
//! The string is `base64url(JSON).base64url(HMAC-SHA256)`: the server keeps no session, so any
//! replica sharing the key answers any request. The page itself is not carried: the search that
//! opened it opens it again (a frozen index answers the same search with the same page; live
//! Wikipedia answers it from the page cache), and the cursor is walked forward again.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};

use crate::base::profile::Profile;

/// The longest state accepted, in bytes: two actions' arguments and some framing fit.
pub const MAX_STATE_BYTES: usize = 16 * 1024;
/// The longest action accepted, in bytes: the one limit on an action's argument
/// ([`crate::base::limits::MAX_ARGUMENT_BYTES`]), which the agent and `mcp` hold too, applied to the
/// action as written (a Search or Lookup argument is far shorter).
pub const MAX_ACTION_BYTES: usize = crate::base::limits::MAX_ARGUMENT_BYTES;
/// The shortest state key accepted, in bytes: HMAC-SHA256's own output size.
pub const MIN_KEY_BYTES: usize = 32;
/// How many bytes of the HMAC a state carries.
const TAG_BYTES: usize = 16;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// What the explorer keeps between steps.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct StepState {
    /// The docstore the state was made for: its snapshot, or `wikipedia URL` for live pages.
    #[serde(rename = "d")]
    pub docstore: String,
    #[serde(rename = "p")]
    pub profile: Profile,
    /// The search that opened the page now open.
    #[serde(rename = "q", default, skip_serializing_if = "Option::is_none")]
    pub page_search: Option<String>,
    /// The Lookup cursor: its keyword and how many matches were shown.
    #[serde(rename = "c", default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<(String, usize)>,
}

/// Why a state string was refused (a 400 to the client).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("state is {len} bytes, more than the {MAX_STATE_BYTES} a state can be")]
    TooLarge { len: usize },
    #[error("state is not one this server issued: it is not `DATA.SIGNATURE` in base64url")]
    Malformed,
    #[error(
        "state was not issued by this server, or was changed: its signature does not match (replicas must share --state-key-file or REACT_STATE_KEY)"
    )]
    Forged,
    #[error("state was made for docstore `{found}`, this server serves `{serving}`")]
    OtherDocstore { found: String, serving: String },
    #[error("state was made for the `{found}` profile, this server follows `{serving}`")]
    OtherProfile { found: Profile, serving: Profile },
    #[error("state does not fit this docstore: {0}")]
    Stale(String),
}

/// A state key too short to be a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the state key is {len} bytes: use at least {MIN_KEY_BYTES} (e.g. `openssl rand -hex 32`)")]
pub struct ShortKey {
    pub len: usize,
}

/// The key states are signed with: from `--state-key-file` or `REACT_STATE_KEY` (shared by
/// replicas), or random per process.
#[derive(Clone)]
pub struct StateKey {
    key: Vec<u8>,
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(redacted)")
    }
}

impl StateKey {
    /// A key of the given secret (at least [`MIN_KEY_BYTES`] bytes).
    pub fn new(secret: &[u8]) -> Result<StateKey, ShortKey> {
        if secret.len() < MIN_KEY_BYTES {
            return Err(ShortKey { len: secret.len() });
        }
        Ok(StateKey { key: secret.to_vec() })
    }

    /// A random key: states from this process only.
    pub fn random() -> Result<StateKey, getrandom::Error> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(StateKey { key })
    }

    fn tag(&self, data: &[u8]) -> [u8; TAG_BYTES] {
        // invariant: HMAC takes a key of any length
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("any key length");
        mac.update(b"react-docstore.step-state.v1\0");
        mac.update(data);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_BYTES];
        tag.copy_from_slice(&full[..TAG_BYTES]);
        tag
    }

    /// The state as the opaque string a client sends back.
    pub fn encode(&self, state: &StepState) -> String {
        // invariant: a struct of strings and numbers always serializes
        let data = serde_json::to_vec(state).expect("a state serializes");
        let tag = self.tag(&data);
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(&data),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The state a client sent, checked: size, signature, then docstore and profile.
    pub fn decode(&self, text: &str, docstore: &str, profile: Profile) -> Result<StepState, StateError> {
        if text.len() > MAX_STATE_BYTES {
            return Err(StateError::TooLarge { len: text.len() });
        }
        let (data, tag) = text.split_once('.').ok_or(StateError::Malformed)?;
        let data = URL_SAFE_NO_PAD.decode(data).map_err(|_| StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateError::Malformed)?;
        if tag.len() != TAG_BYTES {
            return Err(StateError::Forged);
        }
        // invariant: HMAC takes a key of any length
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("any key length");
        mac.update(b"react-docstore.step-state.v1\0");
        mac.update(&data);
        mac.verify_truncated_left(&tag).map_err(|_| StateError::Forged)?;
        let state: StepState = serde_json::from_slice(&data).map_err(|_| StateError::Malformed)?;
        if state.docstore != docstore {
            return Err(StateError::OtherDocstore {
                found: state.docstore,
                serving: docstore.to_owned(),
            });
        }
        if state.profile != profile {
            return Err(StateError::OtherProfile {
                found: state.profile,
                serving: profile,
            });
        }
        Ok(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> StateKey {
        StateKey::new(b"0123456789abcdef0123456789abcdef").unwrap()
    }

    #[test]
    fn a_state_round_trips_and_every_change_is_refused() {
        let state = StepState {
            docstore: "index-abc".to_owned(),
            profile: Profile::Default,
            page_search: Some("Arthur's Magazine".to_owned()),
            cursor: Some(("1844".to_owned(), 1)),
        };
        let text = key().encode(&state);
        assert_eq!(
            key().decode(&text, "index-abc", Profile::Default),
            Ok(state.clone())
        );
        // Another key, docstore or profile.
        let other = StateKey::new(b"fedcba9876543210fedcba9876543210").unwrap();
        assert_eq!(
            other.decode(&text, "index-abc", Profile::Default),
            Err(StateError::Forged)
        );
        assert!(matches!(
            key().decode(&text, "index-xyz", Profile::Default),
            Err(StateError::OtherDocstore { .. })
        ));
        assert!(matches!(
            key().decode(&text, "index-abc", Profile::Paper),
            Err(StateError::OtherProfile { .. })
        ));
        // Any byte changed, a cut signature, garbage, too long.
        let (data, tag) = text.split_once('.').unwrap();
        let mut json = URL_SAFE_NO_PAD.decode(data).unwrap();
        let at = json.len() - 3;
        json[at] = b'9';
        let changed = format!("{}.{tag}", URL_SAFE_NO_PAD.encode(&json));
        assert_eq!(
            key().decode(&changed, "index-abc", Profile::Default),
            Err(StateError::Forged)
        );
        let cut = &text[..text.len() - 2];
        assert_eq!(
            key().decode(cut, "index-abc", Profile::Default),
            Err(StateError::Forged)
        );
        assert_eq!(
            key().decode(data, "index-abc", Profile::Default),
            Err(StateError::Malformed)
        );
        assert_eq!(
            key().decode(&"a".repeat(MAX_STATE_BYTES + 1), "index-abc", Profile::Default),
            Err(StateError::TooLarge {
                len: MAX_STATE_BYTES + 1
            })
        );
    }

    #[test]
    fn a_key_shorter_than_32_bytes_is_refused() {
        assert_eq!(StateKey::new(b"short").unwrap_err(), ShortKey { len: 5 });
        assert_eq!(
            StateKey::new(&[b'k'; 31]).unwrap_err().to_string(),
            "the state key is 31 bytes: use at least 32 (e.g. `openssl rand -hex 32`)"
        );
        assert!(StateKey::new(&[b'k'; 32]).is_ok());
    }
}
